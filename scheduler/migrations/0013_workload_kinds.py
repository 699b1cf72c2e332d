"""Deployment joins the ClusterObject kinds (its controller owns ReplicaSets; issue 16).

On SQLite, 0012's new Pod column rebuilt the pod table (Django's remake: copy, drop, rename), and the
table's AFTER DELETE trigger from 0011 went with the old table: embedded, deleted pods were no longer
kept (the pod page's "how it went", the rewind). Put back here, if missing."""

from django.db import migrations, models

POD_TRIGGER = "schedboard_pod_deleted"
POD_COLUMNS = ("namespace", "name", "uid", "node_name", "assumed_node", "priority", "req_cpu", "req_memory",
               "req_ephemeral", "req_scalar", "created_at", "queued_at", "bound_at", "manifest")


def restore_sqlite_pod_trigger(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    cols = ", ".join(POD_COLUMNS) + ", deleted_at"
    values = ", ".join(f"OLD.{c}" for c in POD_COLUMNS) + ", strftime('%Y-%m-%d %H:%M:%f', 'now')"
    schema_editor.execute(f"CREATE TRIGGER IF NOT EXISTS {POD_TRIGGER} AFTER DELETE ON scheduler_pod FOR EACH ROW "
                          f"BEGIN INSERT INTO scheduler_deletedpod ({cols}) VALUES ({values}); END")


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
        migrations.RunPython(restore_sqlite_pod_trigger, migrations.RunPython.noop),
    ]
