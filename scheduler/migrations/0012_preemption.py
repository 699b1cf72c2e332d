"""Preemption (issue 12): a pod's nominated node (status.nominatedNodeName), and PriorityClass and
PodDisruptionBudget among the cluster objects."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('scheduler', '0011_deleted_pods_and_nodes'),
    ]

    operations = [
        migrations.AddField(
            model_name='pod',
            name='nominated_node',
            field=models.CharField(blank=True, default='', max_length=253),
        ),
        migrations.AlterField(
            model_name='clusterobject',
            name='kind',
            field=models.CharField(choices=[('Namespace', 'Namespace'), ('Service', 'Service'), ('ReplicaSet', 'ReplicaSet'), ('StatefulSet', 'StatefulSet'), ('ReplicationController', 'ReplicationController'), ('PriorityClass', 'PriorityClass'), ('PodDisruptionBudget', 'PodDisruptionBudget')], max_length=32),
        ),
        migrations.AddIndex(
            model_name='pod',
            index=models.Index(condition=models.Q(('nominated_node', ''), _negated=True), fields=['nominated_node'], name='pod_nominated'),
        ),
    ]
