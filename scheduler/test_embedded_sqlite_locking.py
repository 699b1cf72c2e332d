"""The embedded mode's SQLite under concurrent writers (the loop thread, the trickle thread, the web
server's threads): a transaction that reads and then writes must wait its turn, not fail at once with
"database is locked".

Why it failed: in WAL mode a deferred transaction (SQLite's default BEGIN) starts as a reader; when it
then writes after another connection has committed, SQLite cannot upgrade it (its snapshot is stale) and
answers SQLITE_BUSY immediately, without the busy timeout. services.py and the loop read with
select_for_update() (a no-op on SQLite) and then write, in transaction.atomic(): exactly that pattern.
BEGIN IMMEDIATE takes the write lock up front, so a second writer waits (busy timeout) instead."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from django.conf import settings

SCRIPT = textwrap.dedent("""
    import threading
    import django
    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction
    from scheduler.models import Node

    call_command("migrate", verbosity=0)
    Node.objects.create(name="a", manifest={})
    Node.objects.create(name="b", manifest={})
    errors = []

    def other_writer():
        try:
            with transaction.atomic():
                n = Node.objects.select_for_update().get(name="b")
                n.unschedulable = True
                n.save(update_fields=["unschedulable"])
        except Exception as e:
            errors.append(f"other writer: {e}")
        finally:
            connection.close()

    try:
        with transaction.atomic():
            # As services.node_* and the loop's bind: read the row "for update", then write it.
            n = Node.objects.select_for_update().get(name="a")
            t = threading.Thread(target=other_writer)
            t.start()
            # Give the other writer its chance to commit first (with BEGIN IMMEDIATE it cannot: it waits
            # for this transaction, and the join just times out). Not an assertion: a wait.
            t.join(3)
            n.unschedulable = True
            n.save(update_fields=["unschedulable"])
    except Exception as e:
        errors.append(f"first writer: {e}")
    t.join()
    print(errors or "ok", sorted(Node.objects.values_list("name", "unschedulable")))
""")


def test_two_read_then_write_transactions_on_the_embedded_sqlite_both_commit(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_DEBUG", "DJANGO_HTTPS")}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "SCHEDBOARD_SQLITE_PATH": str(tmp_path / "db.sqlite3"),
                "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")})
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=Path(settings.BASE_DIR), env=env,
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok [('a', True), ('b', True)]"

