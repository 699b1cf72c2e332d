"""A worker's snapshot re-reads only the nodes written since its last read (Postgres), and what it then holds is
exactly what a full read of every node holds: after usage changes, extended resources and host ports coming
and going, a writer that commits after a later writer was already seen, a pod this worker assumed whose
reservation never committed, and nodes added, deleted or respecified."""

import psycopg
import pytest
from django.db import connection

from scheduler.engine.resources import CPU, MEMORY
from scheduler.models import Node
from scheduler.state.snapshot import Snapshot
from scheduler.testing.loop import apply, node, pod

pytestmark = pytest.mark.django_db(transaction=True)

NODES = 12


def _cluster():
    apply(*(node(f"n-{i:02}") for i in range(NODES)))


def _held(snapshot: Snapshot) -> dict:
    """What a snapshot's table says of every node: the usage columns, host ports and indexed pods."""
    table = snapshot.cache.table
    return {
        "names": list(table.names),
        "requested": {r: col.tolist() for r, col in table.requested.items() if col.any()},
        "nonzero": {r: col.tolist() for r, col in table.nonzero_requested.items()},
        "ports": {k: {row: sorted(ips) for row, ips in v.items()} for k, v in table.ports.items()},
        "pods": sorted(map(tuple, table.pods.pods())),
    }


def _fresh() -> dict:
    full = Snapshot()
    full.refresh()
    assert full.rows_read == full.cache.table.n
    return _held(full)


def _quiet(snapshot: Snapshot) -> None:
    """As if the snapshot's last read had found no transaction running: the next read starts at a transaction id
    taken now. (Its real start is the oldest transaction running anywhere on the Postgres server, which other
    sessions' work can hold back: reading more nodes then, never fewer.)"""
    with connection.cursor() as c:
        c.execute("SELECT txid_current()")
        snapshot._xmin = c.fetchone()[0]


def _other_connection():
    settings = connection.settings_dict
    return psycopg.connect(dbname=settings["NAME"], host=settings["HOST"] or None, port=settings["PORT"] or None,
                           user=settings["USER"] or None, autocommit=False)


def test_a_refresh_after_usage_changes_reads_only_the_written_nodes_and_holds_what_a_full_read_holds():
    _cluster()
    worker = Snapshot()
    worker.refresh()
    assert worker.rows_read == NODES
    _quiet(worker)
    Node.objects.filter(name__in=["n-03", "n-07"]).update(req_cpu=1500, nonzero_cpu=1500, req_pods=2)
    worker.refresh()
    assert worker.rows_read == 2
    assert _held(worker) == _fresh()
    _quiet(worker)
    worker.refresh()
    assert worker.rows_read == 0  # nothing written since


def test_a_lost_race_reads_the_generations_of_the_written_nodes_only_and_indexes_their_pods_as_a_full_read():
    _cluster()
    worker = Snapshot()
    worker.refresh()
    _quiet(worker)
    apply(pod("bound-after", cpu="100m", nodeName="n-05"))  # arrives bound: n-05's generation moves
    statements = []
    with connection.execute_wrapper(lambda execute, sql, *args: statements.append(sql) or execute(sql, *args)):
        worker.refresh_nodes(worker.cache, {"n-03"})
    generations = [sql for sql in statements if "generation" in sql and "scheduler_node" in sql]
    assert generations and all("touched >=" in sql for sql in generations)
    assert _held(worker)["pods"] == _fresh()["pods"]


def test_extended_resources_and_host_ports_come_and_go_with_the_changed_rows():
    _cluster()
    worker = Snapshot()
    worker.refresh()
    Node.objects.filter(name="n-01").update(req_scalar={"example.com/gpu": 2}, used_ports=[["TCP", 8080, "0.0.0.0"]])
    worker.refresh()
    held = _held(worker)
    assert held["requested"]["example.com/gpu"][1] == 2
    assert held["ports"] == {("TCP", 8080): {1: ["0.0.0.0"]}}
    assert held == _fresh()
    _quiet(worker)
    Node.objects.filter(name="n-01").update(req_scalar={}, used_ports=[])
    worker.refresh()
    assert worker.rows_read == 1
    held = _held(worker)
    assert "example.com/gpu" not in held["requested"] and held["ports"] == {}
    assert held == _fresh()


def test_a_writer_that_commits_after_a_later_writer_was_seen_is_still_read():
    """The next read starts at the oldest transaction still running at the last one, not at the newest write
    seen: a transaction with a lower id may commit after one with a higher id was read."""
    _cluster()
    worker = Snapshot()
    worker.refresh()
    slow, fast = _other_connection(), _other_connection()
    try:
        slow.execute("UPDATE scheduler_node SET req_cpu = 3000, nonzero_cpu = 3000 WHERE name = 'n-05'")
        fast.execute("UPDATE scheduler_node SET req_cpu = 1000, nonzero_cpu = 1000 WHERE name = 'n-09'")
        fast.commit()
        worker.refresh()  # sees n-09's write, not n-05's (still running)
        table = worker.cache.table
        assert table.requested[CPU][table.index["n-09"]] == 1000
        assert table.requested[CPU][table.index["n-05"]] == 0
        slow.commit()
    finally:
        slow.close()
        fast.close()
    worker.refresh()
    table = worker.cache.table
    assert table.requested[CPU][table.index["n-05"]] == 3000
    assert _held(worker) == _fresh()


def test_a_pod_assumed_here_whose_reservation_never_committed_is_taken_back_by_the_next_refresh():
    from scheduler.manifests.objects import pod_from_manifest

    _cluster()
    worker = Snapshot()
    cache = worker.refresh()
    spec = pod_from_manifest(pod("lost", cpu="2", memory="1Gi"))
    cache.assume(spec, cache.table.index["n-04"])
    assert cache.table.requested[CPU][cache.table.index["n-04"]] == 2000
    _quiet(worker)
    worker.refresh()
    assert worker.rows_read == 1  # the row this worker changed itself, read again
    assert worker.cache.table.requested[CPU][worker.cache.table.index["n-04"]] == 0
    assert worker.cache.table.requested[MEMORY][worker.cache.table.index["n-04"]] == 0
    assert _held(worker) == _fresh()


@pytest.mark.parametrize("change", ["add", "delete", "truncate", "respecify"])
def test_a_node_added_deleted_or_respecified_makes_the_refresh_read_every_node(change):
    _cluster()
    worker = Snapshot()
    worker.refresh()
    _quiet(worker)
    if change == "add":
        apply(node("n-99"))
    elif change == "delete":
        Node.objects.filter(name="n-02").delete()
    elif change == "truncate":  # no row trigger fires: the statement's does
        with connection.cursor() as c:
            c.execute("TRUNCATE scheduler_node CASCADE")
    else:
        apply(node("n-06", cpu="8"))
    worker.refresh()
    assert worker.rows_read == Node.objects.count()
    assert worker.cache.table.n == Node.objects.count()
    assert _held(worker) == _fresh()
    if change == "respecify":
        table = worker.cache.table
        assert table.allocatable[CPU][table.index["n-06"]] == 8000


def test_the_trigger_stamps_every_write_with_its_transaction_id():
    _cluster()
    with connection.cursor() as c:
        c.execute("UPDATE scheduler_node SET req_pods = 1 WHERE name = 'n-00' RETURNING touched, txid_current()")
        touched, txid = c.fetchone()
    assert touched == txid


def _transaction_characteristics() -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only')")
        return cursor.fetchone()


def test_a_read_is_one_repeatable_read_read_only_transaction_and_the_connection_s_next_ones_are_as_before():
    from django.db import transaction

    from scheduler.state.snapshot import one_committed_state

    with one_committed_state():
        assert _transaction_characteristics() == ("repeatable read", "on")
    with transaction.atomic():
        assert _transaction_characteristics() == ("read committed", "off")
    assert _transaction_characteristics() == ("read committed", "off")  # (autocommit)
    with pytest.raises(ZeroDivisionError), one_committed_state():
        1 / 0
    with transaction.atomic():
        assert _transaction_characteristics() == ("read committed", "off")
