"""Deleted pods and nodes kept with their deletion time (the rewind and recorded traces read them).

A trigger on each table writes the row as it was, in the deleting transaction: every way a row goes
(the delete services, the kube mirror, the chaos runs) is recorded the same, and a rolled-back delete
records nothing."""

from django.db import migrations, models

POD_COLUMNS = ("namespace", "name", "uid", "node_name", "assumed_node", "priority", "req_cpu", "req_memory",
               "req_ephemeral", "req_scalar", "created_at", "queued_at", "bound_at", "manifest")
NODE_COLUMNS = ("name", "manifest", "unschedulable", "alloc_cpu", "alloc_memory", "alloc_ephemeral", "alloc_pods",
                "alloc_scalar", "created_at")
TRIGGERS = (("scheduler_pod", "scheduler_deletedpod", POD_COLUMNS, "schedboard_pod_deleted"),
            ("scheduler_node", "scheduler_deletednode", NODE_COLUMNS, "schedboard_node_deleted"))


def add_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for table, into, columns, name in TRIGGERS:
        cols = ", ".join(columns) + ", deleted_at"
        if vendor == "postgresql":
            values = ", ".join(f"OLD.{c}" for c in columns) + ", clock_timestamp()"
            schema_editor.execute(
                f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"INSERT INTO {into} ({cols}) VALUES ({values}); RETURN OLD; END $$")
            schema_editor.execute(f"CREATE TRIGGER {name} AFTER DELETE ON {table} FOR EACH ROW EXECUTE FUNCTION {name}()")
        elif vendor == "sqlite":
            # Django stores SQLite datetimes as "YYYY-MM-DD HH:MM:SS.fff" text in UTC.
            values = ", ".join(f"OLD.{c}" for c in columns) + ", strftime('%Y-%m-%d %H:%M:%f', 'now')"
            schema_editor.execute(f"CREATE TRIGGER {name} AFTER DELETE ON {table} FOR EACH ROW BEGIN "
                                  f"INSERT INTO {into} ({cols}) VALUES ({values}); END")


def drop_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for table, _, _, name in TRIGGERS:
        if vendor == "postgresql":
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
            schema_editor.execute(f"DROP FUNCTION IF EXISTS {name}()")
        elif vendor == "sqlite":
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")


class Migration(migrations.Migration):

    dependencies = [
        ('scheduler', '0010_cluster_objects'),
    ]

    operations = [
        migrations.CreateModel(
            name='DeletedNode',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=253)),
                ('manifest', models.JSONField()),
                ('unschedulable', models.BooleanField(default=False)),
                ('alloc_cpu', models.BigIntegerField(default=0)),
                ('alloc_memory', models.BigIntegerField(default=0)),
                ('alloc_ephemeral', models.BigIntegerField(default=0)),
                ('alloc_pods', models.BigIntegerField(default=0)),
                ('alloc_scalar', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField()),
                ('deleted_at', models.DateTimeField()),
            ],
            options={
                'ordering': ['-deleted_at', '-id'],
                'indexes': [models.Index(fields=['deleted_at'], name='deleted_node_by_time')],
            },
        ),
        migrations.CreateModel(
            name='DeletedPod',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('namespace', models.CharField(max_length=253)),
                ('name', models.CharField(max_length=253)),
                ('uid', models.CharField(blank=True, default='', max_length=64)),
                ('node_name', models.CharField(blank=True, default='', max_length=253)),
                ('assumed_node', models.CharField(blank=True, default='', max_length=253)),
                ('priority', models.IntegerField(default=0)),
                ('req_cpu', models.BigIntegerField(default=0)),
                ('req_memory', models.BigIntegerField(default=0)),
                ('req_ephemeral', models.BigIntegerField(default=0)),
                ('req_scalar', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField()),
                ('queued_at', models.DateTimeField(blank=True, null=True)),
                ('bound_at', models.DateTimeField(blank=True, null=True)),
                ('deleted_at', models.DateTimeField()),
                ('manifest', models.JSONField()),
            ],
            options={
                'ordering': ['-deleted_at', '-id'],
                'indexes': [models.Index(fields=['deleted_at'], name='deleted_pod_by_time')],
            },
        ),
        migrations.RunPython(add_triggers, drop_triggers),
    ]
