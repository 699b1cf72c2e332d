"""Deployment joins the ClusterObject kinds (its controller owns ReplicaSets; issue 16)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("scheduler", "0012_preemption"),
    ]

    operations = [
        migrations.AlterField(
            model_name="clusterobject",
            name="kind",
            field=models.CharField(choices=[("Namespace", "Namespace"), ("Service", "Service"),
                                            ("ReplicaSet", "ReplicaSet"), ("StatefulSet", "StatefulSet"),
                                            ("ReplicationController", "ReplicationController"),
                                            ("PriorityClass", "PriorityClass"),
                                            ("PodDisruptionBudget", "PodDisruptionBudget"),
                                            ("Deployment", "Deployment")], max_length=32),
        ),
    ]
