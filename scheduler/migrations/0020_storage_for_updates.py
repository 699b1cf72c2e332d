"""How the busiest tables are stored, for the loop's writes (issue 13: Postgres cost as much CPU per pod as the loop).

- Room on each attempt's page (fillfactor 50) for its one update, so Postgres writes it HOT: the new row version on
  the same page, no index touched. Every scheduled attempt is updated once by its binder (result, message,
  binding_ms, e2e_ms: its indexed columns keep their values); on full pages each wrote a new entry into all eight
  of the table's indexes, the trigram one included (EXPLAIN ANALYZE of a batch's update of 256 attempts: 15.1 ms
  and 447 kB of WAL, 3.3 ms and 22 kB with the room). Nothing scans the attempt table whole, so its pages being
  half empty until the update costs no reads. The pod table keeps full pages: its updates that could be HOT (the
  attempt count) are one of three per pod, and the pending pods' bitmap scans read twice the pages with the room.
- lz4 for the large jsonb columns, where Postgres was built with it: an attempt's top candidates (about 3.8 kB of
  JSON) take the row past the TOAST threshold, and pglz compressed every one of them, about 5 % of Postgres's CPU
  in the loop; lz4 compresses several times faster. Only values written from now on are compressed so.
- pod_pending, an index on (phase, node_name), goes: no query filters on phase (the pending pods are read by
  node_name and assumed_node, which have their own indexes), and every update that changes node_name wrote it.
"""

import logging

from django.db import migrations, transaction

log = logging.getLogger(__name__)

FILLFACTORS = {"scheduler_attempt": 50}
LZ4_COLUMNS = {"scheduler_attempt": ("candidates", "trace", "reasons"), "scheduler_pod": ("manifest",),
               "scheduler_node": ("manifest",)}


def store_for_updates(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, fillfactor in FILLFACTORS.items():
        schema_editor.execute(f"ALTER TABLE {table} SET (fillfactor = {fillfactor})")
    try:
        with transaction.atomic(using=schema_editor.connection.alias):
            for table, columns in LZ4_COLUMNS.items():
                for column in columns:
                    schema_editor.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION lz4")
    except Exception as exc:  # noqa: BLE001 - a Postgres built without lz4 keeps pglz, and works the same
        log.warning("lz4 unavailable (%s): the large jsonb columns stay compressed with pglz", exc)


def store_as_before(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in FILLFACTORS:
        schema_editor.execute(f"ALTER TABLE {table} RESET (fillfactor)")
    for table, columns in LZ4_COLUMNS.items():
        for column in columns:
            schema_editor.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION DEFAULT")


class Migration(migrations.Migration):
    dependencies = [("scheduler", "0019_node_touched")]

    operations = [
        migrations.RemoveIndex(model_name="pod", name="pod_pending"),
        migrations.RunPython(store_for_updates, store_as_before),
    ]
