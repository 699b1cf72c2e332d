"""Node.touched: the writing transaction's id on every insert and update, and the newest transaction that
deleted nodes, so a worker's snapshot re-reads only the nodes written since its last read (state/snapshot.py)
instead of every node each batch."""

from django.db import migrations, models

TRIGGER_SQL = """
CREATE OR REPLACE FUNCTION scheduler_node_touched() RETURNS trigger AS $$
BEGIN
    NEW.touched := txid_current();
    RETURN NEW;
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER scheduler_node_touched BEFORE INSERT OR UPDATE ON scheduler_node
    FOR EACH ROW EXECUTE FUNCTION scheduler_node_touched();

-- The newest transaction that deleted nodes: a worker whose last read did not see it finished reads every node.
-- Only the newest row matters (a reader asks whether any is at or above its start), so each deleter keeps the
-- newest it sees; concurrent deleters may leave a few rows, never drop the newest.
CREATE TABLE scheduler_node_deleted (touched bigint NOT NULL);
CREATE FUNCTION scheduler_node_deleted() RETURNS trigger AS $$
BEGIN
    INSERT INTO scheduler_node_deleted (touched) VALUES (txid_current());
    DELETE FROM scheduler_node_deleted WHERE touched < (SELECT max(touched) FROM scheduler_node_deleted);
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER scheduler_node_deleted AFTER DELETE ON scheduler_node
    FOR EACH STATEMENT EXECUTE FUNCTION scheduler_node_deleted();
CREATE TRIGGER scheduler_node_truncated AFTER TRUNCATE ON scheduler_node
    FOR EACH STATEMENT EXECUTE FUNCTION scheduler_node_deleted();
"""
DROP_SQL = """
DROP TRIGGER IF EXISTS scheduler_node_touched ON scheduler_node;
DROP FUNCTION IF EXISTS scheduler_node_touched();
DROP TRIGGER IF EXISTS scheduler_node_deleted ON scheduler_node;
DROP TRIGGER IF EXISTS scheduler_node_truncated ON scheduler_node;
DROP FUNCTION IF EXISTS scheduler_node_deleted();
DROP TABLE IF EXISTS scheduler_node_deleted;
"""


def create_trigger(apps, schema_editor):
    # SQLite (the embedded demo) reads every node each time: it has no transaction ids to compare.
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(TRIGGER_SQL)


def drop_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_SQL)


class Migration(migrations.Migration):
    dependencies = [("scheduler", "0018_preemption")]

    operations = [
        migrations.AddField(
            model_name="node", name="touched",
            field=models.BigIntegerField(default=0, editable=False,
                                         help_text="the id of the transaction that last wrote this row (Postgres)"),
        ),
        migrations.AddIndex(model_name="node", index=models.Index(fields=["touched"], name="node_touched")),
        migrations.RunPython(create_trigger, drop_trigger),
    ]
