"""The pod page's Events read as `kubectl describe pod` prints them."""

from datetime import datetime, timedelta, timezone

from dashboard.describe import _toleration, event_rows
from scheduler.models import Event

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=timezone.utc)


def event(id, reason, message, count, first_ago, last_ago, type="Warning"):
    return Event(id=id, type=type, reason=reason, message=message + "\n", count=count, involved_kind="Pod",
                 involved_name="p", reporting_controller="default-scheduler",
                 first_timestamp=NOW - timedelta(seconds=first_ago), last_timestamp=NOW - timedelta(seconds=last_ago))


def test_a_repeated_event_reads_last_seen_then_count_over_first_seen_and_rows_run_oldest_first():
    rows = event_rows([
        event(2, "Scheduled", "Successfully assigned default/p to n1", 1, 30, 30, type="Normal"),
        event(1, "FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu.", 3, 300, 120),
    ], now=NOW)
    assert [(r.type, r.reason, r.age, r.source, r.message) for r in rows] == [
        ("Warning", "FailedScheduling", "2m (x3 over 5m)", "default-scheduler", "0/3 nodes are available: 3 Insufficient cpu."),
        ("Normal", "Scheduled", "30s", "default-scheduler", "Successfully assigned default/p to n1"),
    ]


def test_ages_use_kubectls_human_durations():
    rows = event_rows([event(1, "FailedScheduling", "m", 12, 3 * 3600 + 600, 400)], now=NOW)
    assert rows[0].age == "6m40s (x12 over 3h10m)"


def test_tolerations_print_as_describe_does():
    assert _toleration({"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}) == "gpu=true:NoSchedule"
    assert _toleration({"key": "gpu", "operator": "Exists"}) == "gpu op=Exists"
    assert _toleration({"operator": "Exists"}) == "op=Exists"
    assert _toleration({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                        "tolerationSeconds": 300}) == "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s"
