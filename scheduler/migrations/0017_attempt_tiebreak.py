from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("scheduler", "0016_pod_ungated_at"),
    ]

    operations = [
        migrations.AddField(
            model_name="attempt",
            name="tiebreak_seed",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="attempt",
            name="tiebreak_position",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="attempt",
            name="start_node_index",
            field=models.IntegerField(blank=True, null=True),
        ),
    ]
