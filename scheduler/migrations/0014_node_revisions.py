"""Node manifests kept as they were before each change (a recorded trace's node updates and start state).

A trigger on the node table writes the old manifest, in the changing transaction, only when the manifest
changes: the conditional UPDATEs of the request counters on every binding write nothing."""

from django.db import migrations, models

NAME = "schedboard_node_revised"


def add_trigger(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(
            f"CREATE FUNCTION {NAME}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "INSERT INTO scheduler_noderevision (name, manifest, replaced_at) "
            "VALUES (OLD.name, OLD.manifest, clock_timestamp()); RETURN NEW; END $$")
        schema_editor.execute(
            f"CREATE TRIGGER {NAME} AFTER UPDATE OF manifest ON scheduler_node FOR EACH ROW "
            f"WHEN (OLD.manifest IS DISTINCT FROM NEW.manifest) EXECUTE FUNCTION {NAME}()")
    elif vendor == "sqlite":
        # Django stores SQLite datetimes as "YYYY-MM-DD HH:MM:SS.fff" text in UTC.
        schema_editor.execute(
            f"CREATE TRIGGER {NAME} AFTER UPDATE OF manifest ON scheduler_node FOR EACH ROW "
            "WHEN OLD.manifest IS NOT NEW.manifest BEGIN "
            "INSERT INTO scheduler_noderevision (name, manifest, replaced_at) "
            "VALUES (OLD.name, OLD.manifest, strftime('%Y-%m-%d %H:%M:%f', 'now')); END")


def drop_trigger(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {NAME} ON scheduler_node")
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {NAME}()")
    elif vendor == "sqlite":
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {NAME}")


class Migration(migrations.Migration):

    dependencies = [
        ('scheduler', '0013_workload_kinds'),
    ]

    operations = [
        migrations.CreateModel(
            name='NodeRevision',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=253)),
                ('manifest', models.JSONField(help_text='the manifest before the change')),
                ('replaced_at', models.DateTimeField(help_text='when the change replaced it')),
            ],
            options={
                'ordering': ['-replaced_at', '-id'],
                'indexes': [models.Index(fields=['replaced_at'], name='node_revision_by_time')],
            },
        ),
        migrations.RunPython(add_trigger, drop_trigger),
    ]
