from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("scheduler", "0006_binding_without_attempt")]

    operations = [
        migrations.AddField(
            model_name="pod",
            name="binding_at",
            field=models.DateTimeField(blank=True, help_text="the binding of the reservation is in flight", null=True),
        ),
    ]
