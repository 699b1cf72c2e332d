from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("scheduler", "0014_node_revisions"),
    ]

    operations = [
        migrations.AddField(
            model_name="attempt",
            name="snapshot_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="attempt",
            name="snapshot_deleted_pod",
            field=models.BigIntegerField(blank=True, null=True),
        ),
    ]
