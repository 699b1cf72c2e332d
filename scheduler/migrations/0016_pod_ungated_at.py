"""When a pod's last scheduling gate was removed (Pod.ungated_at, kept in DeletedPod by the deletion trigger):
the rewind shows the pods that were gated at a past instant (issue 12).

The trigger of 0011 (and of 0013 on SQLite) copies a fixed column list: it is replaced by one that copies the
new column too."""

from django.db import migrations, models

POD_TRIGGER = "schedboard_pod_deleted"
OLD_COLUMNS = ("namespace", "name", "uid", "node_name", "assumed_node", "priority", "req_cpu", "req_memory",
               "req_ephemeral", "req_scalar", "created_at", "queued_at", "bound_at", "manifest")
NEW_COLUMNS = OLD_COLUMNS + ("ungated_at",)


def _pod_trigger(schema_editor, columns) -> None:
    vendor = schema_editor.connection.vendor
    cols = ", ".join(columns) + ", deleted_at"
    if vendor == "postgresql":
        values = ", ".join(f"OLD.{c}" for c in columns) + ", clock_timestamp()"
        # The trigger calls the function by name: replacing the function is enough.
        schema_editor.execute(
            f"CREATE OR REPLACE FUNCTION {POD_TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            f"INSERT INTO scheduler_deletedpod ({cols}) VALUES ({values}); RETURN OLD; END $$")
    elif vendor == "sqlite":
        values = ", ".join(f"OLD.{c}" for c in columns) + ", strftime('%Y-%m-%d %H:%M:%f', 'now')"
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {POD_TRIGGER}")
        schema_editor.execute(f"CREATE TRIGGER {POD_TRIGGER} AFTER DELETE ON scheduler_pod FOR EACH ROW "
                              f"BEGIN INSERT INTO scheduler_deletedpod ({cols}) VALUES ({values}); END")


def copy_ungated_at(apps, schema_editor):
    _pod_trigger(schema_editor, NEW_COLUMNS)


def copy_without_it(apps, schema_editor):
    _pod_trigger(schema_editor, OLD_COLUMNS)


class Migration(migrations.Migration):

    dependencies = [
        ("scheduler", "0015_attempt_snapshot_at"),
    ]

    operations = [
        migrations.AddField(
            model_name="pod",
            name="ungated_at",
            field=models.DateTimeField(blank=True, help_text="its last scheduling gate removed", null=True),
        ),
        migrations.AddField(
            model_name="deletedpod",
            name="ungated_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(copy_ungated_at, copy_without_it),
    ]
