"""The audit's queries read one index range on a large table: no sequential scan, no sort (Postgres EXPLAIN)."""

import hashlib
from datetime import datetime, timezone

import pytest
from django.db import connection

from dashboard import audit

pytestmark = pytest.mark.django_db

ROWS = 40_000
LIMIT = audit.DEFAULT_LIMIT


@pytest.fixture
def many_attempts():
    if connection.vendor != "postgresql":
        pytest.skip("the plans are Postgres's")
    with connection.cursor() as c:
        # 40k attempts over ~11 hours: 50 nodes (hundreds of attempts each), 20 namespaces, 10% unschedulable, versions 0-4; 90% bound.
        c.execute("""
            INSERT INTO scheduler_attempt (namespace, pod_name, pod_uid, number, started_at, result, node_name, message,
                reasons, candidates, trace, num_nodes, feasible_nodes, evaluated_nodes, profile_name, profile_version, worker)
            SELECT 'ns-' || (i %% 20), 'pod-' || i || '-' || substr(md5(i::text), 1, 8), 'uid-' || i, 1, %s::timestamptz + i * interval '1 second',
                   CASE WHEN i %% 10 = 0 THEN 'unschedulable' ELSE 'scheduled' END,
                   CASE WHEN i %% 10 = 0 THEN '' ELSE 'node-' || (i %% 50) END, '', '{}', '[]', '{}', 500, 500, 500,
                   'default-scheduler', i %% 5, 'w'
            FROM generate_series(1, %s) AS i""", [datetime(2026, 11, 1, tzinfo=timezone.utc), ROWS])
        c.execute("""
            INSERT INTO scheduler_binding (namespace, pod_name, pod_uid, node_name, attempt_id, bound_at)
            SELECT namespace, pod_name, pod_uid, node_name, id, started_at FROM scheduler_attempt WHERE result = 'scheduled'""")
        # Rows inserted in bulk sit in the GIN index's pending list until (auto)vacuum merges them; do it now.
        c.execute("SELECT gin_clean_pending_list('attempt_pod_name_trgm'::regclass)")
        c.execute("ANALYZE scheduler_attempt")
        c.execute("ANALYZE scheduler_binding")


def plan(data: dict, *, after=None) -> str:
    qs = audit.filtered(data).select_related("binding").order_by("-started_at", "-id")
    if after is not None:
        qs = audit._older_than(qs, after)
    return qs[: LIMIT + 1].explain()


def pod_name(i: int) -> str:
    """As the fixture names pods: like a ReplicaSet's pods, a prefix and a random-looking suffix."""
    return f"pod-{i}-{hashlib.md5(str(i).encode()).hexdigest()[:8]}"


def middle_cursor():
    return (datetime(2026, 11, 1, 6, 0, tzinfo=timezone.utc), 21_600)


CASES = [
    ({}, "attempt_by_time"),
    ({"node": "node-7"}, "attempt_by_node"),
    ({"result": "unschedulable"}, "attempt_by_result"),
    # One version in five: reading the time index and skipping four rows in five costs the same.
    ({"version": 3}, ("attempt_by_version", "attempt_by_time")),
    ({"namespace": "ns-3", "pod": pod_name(20003)}, "attempt_by_pod"),
    # A rare substring: the trigram index finds the few rows, then they are sorted.
    ({"q": hashlib.md5(b"5999").hexdigest()[:6]}, "attempt_pod_name_trgm"),
]


def test_a_filtered_page_deep_in_the_table_is_one_index_range_without_a_sort(many_attempts):
    for data, index in CASES:  # one table for all cases: filling it is the slow part
        for after in (None, middle_cursor()):
            text = plan(data, after=after)
            assert any(name in text for name in ((index,) if isinstance(index, str) else index)), (data, text)
            assert "Seq Scan on scheduler_attempt" not in text, (data, text)
            if index != "attempt_pod_name_trgm":
                assert "Sort" not in text, (data, text)
    # The page condition is an Index Cond (where the range starts), not a Filter applied row by row.
    assert "Index Cond: (ROW(started_at, id) < ROW(" in plan({}, after=middle_cursor())


def test_a_page_of_bindings_whose_attempt_was_deleted_is_one_range_of_their_own_index(many_attempts):
    # Retention deleted the older three quarters of the attempts; their bindings stay.
    with connection.cursor() as c:
        c.execute("UPDATE scheduler_binding SET attempt_id = NULL WHERE bound_at < %s",
                  [datetime(2026, 11, 1, 8, 20, tzinfo=timezone.utc)])
        c.execute("ANALYZE scheduler_binding")
    after = (datetime(2026, 11, 1, 6, 0, tzinfo=timezone.utc), 21_600, audit.BINDING)
    for data, index in (({}, "binding_without_attempt"), ({"node": "node-7"}, ("binding_by_node", "binding_without_attempt")),
                        ({"q": hashlib.md5(b"5999").hexdigest()[:6]}, "binding_without_attempt_pod_name_trgm")):
        for position in (None, after):
            qs = audit.bindings_without_attempt(data).order_by("-bound_at", "-id")
            if position is not None:
                qs = audit._BINDINGS.older(qs, position)
            text = qs[: LIMIT + 1].explain()
            assert any(name in text for name in ((index,) if isinstance(index, str) else index)), (data, text)
            assert "Seq Scan" not in text, (data, text)
            if "trgm" not in str(index):
                # binding_by_node is (node_name, bound_at): ties in bound_at are put in id order, nothing more.
                assert "Sort" not in text.replace("Incremental Sort", "").replace("Sort Key", ""), (data, text)
