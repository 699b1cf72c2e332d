"""Deployment joins the ClusterObject kinds (its controller owns ReplicaSets; issue 16)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("scheduler", "0011_deleted_pods_and_nodes"),
    ]

    operations = [
        migrations.AlterField(
            model_name="clusterobject",
            name="kind",
            field=models.CharField(choices=[("Namespace", "Namespace"), ("Service", "Service"),
                                            ("ReplicaSet", "ReplicaSet"), ("StatefulSet", "StatefulSet"),
                                            ("ReplicationController", "ReplicationController"),
                                            ("Deployment", "Deployment")], max_length=32),
        ),
    ]
