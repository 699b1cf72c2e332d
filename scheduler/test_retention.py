"""Retention (scheduler/retention.py): old rows go a bounded batch at a time, young rows and the audit stay,
and no reconciler misses a cluster event because of it."""

import os
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone as dt_timezone
from pathlib import Path

import psycopg
import pytest
import yaml
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduler import loop, retention
from scheduler.queue import queues
from scheduler.telemetry import metrics
from scheduler.manifests.files import parse_documents
from scheduler.models import Attempt, Binding, ClusterEvent, Event, Pod
from scheduler.queue.redis_queue import RedisQueue
from scheduler.cluster.services import cluster_apply

NOW = datetime(2026, 12, 10, 12, 0, 0, tzinfo=dt_timezone.utc)
DAY = timedelta(days=1)


def attempt(age: timedelta, *, name="web", bound=False, pod=None) -> Attempt:
    a = Attempt.objects.create(namespace="default", pod_name=name, number=1, result="scheduled", node_name="n1",
                               started_at=NOW - age, pod=pod)
    if bound:
        Binding.objects.create(namespace="default", pod_name=name, pod_uid=f"uid-{a.pk}", node_name="n1", attempt=a,
                               bound_at=NOW - age + timedelta(milliseconds=5))
    return a


def event(age: timedelta, *, first_age: timedelta | None = None, key=None) -> Event:
    return Event.objects.create(dedup_key=key or f"k{Event.objects.count()}-{age}", type="Normal", reason="Scheduled",
                                message="m", involved_kind="Pod", involved_name="web",
                                first_timestamp=NOW - (first_age or age), last_timestamp=NOW - age)


def cluster_event(age: timedelta, kind=ClusterEvent.NODE_ADD) -> ClusterEvent:
    e = ClusterEvent.objects.create(kind=kind, object_name="node-x")
    ClusterEvent.objects.filter(pk=e.pk).update(created_at=NOW - age)
    return e


def binding(age: timedelta, name="old") -> Binding:
    return Binding.objects.create(namespace="default", pod_name=name, pod_uid=f"uid-{name}-{age}", node_name="n1",
                                  bound_at=NOW - age)


@pytest.fixture
def defaults(settings):
    """The shipped horizons: attempts 7d, events 1h, cluster events 10m, bindings forever."""
    settings.SCHEDBOARD_RETAIN_ATTEMPTS = 7 * 86400.0
    settings.SCHEDBOARD_RETAIN_EVENTS = 3600.0
    settings.SCHEDBOARD_RETAIN_CLUSTER_EVENTS = 600.0
    settings.SCHEDBOARD_RETAIN_BINDINGS = None
    settings.SCHEDBOARD_RETENTION_BATCH = 5000
    settings.SCHEDBOARD_RETENTION_BUDGET = 10.0
    return settings


@pytest.mark.django_db
def test_it_deletes_rows_past_their_horizon_and_keeps_the_young_ones(defaults):
    old_attempt, young_attempt = attempt(8 * DAY, name="old"), attempt(6 * DAY, name="young")
    old_event, young_event = event(timedelta(hours=2)), event(timedelta(minutes=30))
    # An event seen again is kept from its last occurrence (the API server renews an event's TTL on update).
    repeated = event(timedelta(minutes=5), first_age=timedelta(hours=3))
    old_ce, young_ce, newest_ce = (cluster_event(timedelta(minutes=20)), cluster_event(timedelta(minutes=9)),
                                   cluster_event(timedelta(minutes=1)))
    ancient_binding = binding(400 * DAY)

    report = retention.purge(now=NOW)

    assert set(Attempt.objects.values_list("pk", flat=True)) == {young_attempt.pk}
    assert set(Event.objects.values_list("pk", flat=True)) == {young_event.pk, repeated.pk}
    assert set(ClusterEvent.objects.values_list("pk", flat=True)) == {young_ce.pk, newest_ce.pk}
    assert Binding.objects.filter(pk=ancient_binding.pk).exists()  # bindings: forever by default
    assert report.deleted == {"attempts": 1, "events": 1, "cluster events": 1, "bindings": 0, "deleted pods": 0, "deleted nodes": 0,
                              "node revisions": 0}
    assert report.done
    assert not Attempt.objects.filter(pk=old_attempt.pk).exists() and not Event.objects.filter(pk=old_event.pk).exists()
    assert not ClusterEvent.objects.filter(pk=old_ce.pk).exists()


@pytest.mark.django_db
def test_a_tiny_batch_deletes_in_several_bounded_statements_and_leaves_no_old_row(defaults, monkeypatch):
    for i in range(23):
        attempt(8 * DAY + timedelta(seconds=i), name=f"old-{i}")
    keep = attempt(DAY, name="young")
    batches = []
    real = retention._delete_batch
    monkeypatch.setattr(retention, "_delete_batch", lambda *a: batches.append((a[0].name, real(*a))) or batches[-1][1])
    with CaptureQueriesContext(connection) as queries:
        report = retention.purge(now=NOW, batch=5)
    deletes = [q for q in queries.captured_queries if q["sql"].startswith("DELETE FROM scheduler_attempt")]
    # 5 + 5 + 5 + 5 + 3: five statements of at most five rows each, and nothing old left over.
    assert [n for kind, (_, n) in batches if kind == "attempts"] == [5, 5, 5, 5, 3]
    assert report.statements["attempts"] == 5 == len(deletes)
    assert report.deleted["attempts"] == 23
    assert list(Attempt.objects.values_list("pk", flat=True)) == [keep.pk]


@pytest.mark.django_db
def test_a_run_stops_when_its_time_budget_is_spent_and_the_next_run_goes_on(defaults, monkeypatch):
    for i in range(12):
        event(timedelta(hours=2, seconds=i))
    clock = [0.0]
    real = retention._delete_batch

    def slow_batch(*args):  # each statement takes a second on this clock
        clock[0] += 1.0
        return real(*args)

    monkeypatch.setattr(retention, "_delete_batch", slow_batch)
    report = retention.purge(now=NOW, batch=5, budget=1.5, clock=lambda: clock[0])

    # attempts (nothing old: done), events (5), then the budget is spent with 7 old events left.
    assert not report.done and report.deleted["events"] == 5
    assert Event.objects.count() == 12 - report.deleted["events"]
    assert retention.purge(now=NOW, batch=5).done
    assert Event.objects.count() == 0


@pytest.mark.django_db
def test_deleting_an_attempt_keeps_its_binding_and_its_pod(defaults):
    pod = Pod.objects.create(namespace="default", name="web", uid="u1", manifest={}, created_at=NOW - 9 * DAY)
    a = attempt(8 * DAY, bound=True, pod=pod)
    kept = Binding.objects.get(attempt=a)

    retention.purge(now=NOW)

    assert not Attempt.objects.filter(pk=a.pk).exists()
    kept.refresh_from_db()
    assert kept.attempt_id is None and (kept.pod_name, kept.node_name) == ("web", "n1")
    assert Pod.objects.filter(pk=pod.pk).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("setting,kept", [(None, True), (30 * 86400.0, False)])
def test_bindings_are_kept_forever_unless_a_horizon_is_configured(defaults, setting, kept):
    defaults.SCHEDBOARD_RETAIN_BINDINGS = setting
    old, young = binding(400 * DAY), binding(DAY, name="young")
    retention.purge(now=NOW)
    assert Binding.objects.filter(pk=old.pk).exists() is kept
    assert Binding.objects.filter(pk=young.pk).exists()


@pytest.mark.django_db
def test_every_kind_can_be_kept_forever(defaults):
    for name in ("SCHEDBOARD_RETAIN_ATTEMPTS", "SCHEDBOARD_RETAIN_EVENTS", "SCHEDBOARD_RETAIN_CLUSTER_EVENTS"):
        setattr(defaults, name, None)
    attempt(900 * DAY), event(900 * DAY), cluster_event(900 * DAY), cluster_event(DAY)
    report = retention.purge(now=NOW)
    assert report.deleted == {"attempts": 0, "events": 0, "cluster events": 0, "bindings": 0, "deleted pods": 0, "deleted nodes": 0,
                              "node revisions": 0}
    assert (Attempt.objects.count(), Event.objects.count(), ClusterEvent.objects.count()) == (1, 1, 2)


@pytest.mark.django_db
def test_the_newest_cluster_event_stays_even_past_its_horizon(defaults):
    # Ids are then never handed out again (whatever the database does with a deleted maximum), so a
    # reconciler's "past the last id I read" keeps meaning "new".
    cluster_event(timedelta(hours=3))
    newest = cluster_event(timedelta(hours=2))
    retention.purge(now=NOW)
    assert list(ClusterEvent.objects.values_list("pk", flat=True)) == [newest.pk]


@pytest.mark.django_db(transaction=True)
def test_a_batch_skips_a_row_another_transaction_holds_instead_of_waiting_for_it(defaults):
    held = event(timedelta(hours=2), key="held")
    for i in range(6):
        event(timedelta(hours=3, seconds=i))
    db = connection.settings_dict
    locked, release = threading.Event(), threading.Event()

    def hold():  # a worker bumping this event's count, its transaction still open
        with psycopg.connect(dbname=db["NAME"], user=db["USER"], host=db["HOST"], port=db["PORT"] or 5432) as other:
            other.execute("SELECT 1 FROM scheduler_event WHERE id = %s FOR UPDATE", [held.pk])
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10)
        report = retention.purge(now=NOW, batch=4)
    finally:
        release.set()
        holder.join()
    assert report.deleted["events"] == 6
    assert list(Event.objects.values_list("pk", flat=True)) == [held.pk]  # left for the next run
    retention.purge(now=NOW)
    assert Event.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_an_attempt_whose_binding_another_transaction_holds_waits_for_the_next_run_instead_of_a_deadlock(defaults):
    # Deleting a pod unlinks its binding and its attempts in one transaction; a batch that waited for that
    # binding while holding the attempts would wait for a transaction that waits for it.
    held = attempt(9 * DAY, name="deleting", bound=True)
    others = [attempt(8 * DAY, name=f"web-{i}", bound=i % 2 == 0) for i in range(5)]
    binding_id = Binding.objects.get(attempt=held).pk
    db = connection.settings_dict
    locked, release = threading.Event(), threading.Event()

    def hold():
        with psycopg.connect(dbname=db["NAME"], user=db["USER"], host=db["HOST"], port=db["PORT"] or 5432) as other:
            other.execute("UPDATE scheduler_binding SET pod_id = NULL WHERE id = %s", [binding_id])
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10)
        report = retention.purge(now=NOW, batch=4)
    finally:
        release.set()
        holder.join()
    assert report.deleted["attempts"] == 5
    assert list(Attempt.objects.values_list("pk", flat=True)) == [held.pk]
    assert not Binding.objects.filter(attempt_id__in=[a.pk for a in others]).exists()
    assert Binding.objects.count() == 4  # the three others' bindings, and the held one, all kept
    retention.purge(now=NOW)
    assert Attempt.objects.count() == 0 and Binding.objects.get(pk=binding_id).attempt_id is None


# ---- cluster events and the reconcilers ---------------------------------------------------------

class FakeClock:
    def __init__(self, now=1_000_000.0):
        self.now = now

    def __call__(self):
        return self.now


def apply(*objs):
    return cluster_apply(parse_documents(yaml.safe_dump_all(objs), "test.yaml"))


@pytest.mark.django_db(transaction=True)
def test_a_reconciler_reads_every_cluster_event_retention_may_delete_before_it_is_deleted(settings):
    from django.utils import timezone

    settings.SCHEDBOARD_RETAIN_CLUSTER_EVENTS = 300.0 + 60.0 + settings.SCHEDBOARD_RECONCILE_SECONDS  # the least allowed
    queues.reset_queue(RedisQueue(queues.get_redis(), prefix=settings.SCHEDBOARD_QUEUE_PREFIX, clock=FakeClock(),
                                  on_incoming=metrics.count_incoming))
    apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "small"},
           "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}},
          {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}]}})
    loop.reconcile()
    loop.run_schedule_task()
    queue = queues.get_queue()
    assert queue.lengths()["unschedulable"] == 1
    loop.reconcile()  # this reconciler has read every cluster event so far

    # Another process adds nodes: one event as old as a reconciler that runs at its period can have
    # left unread (a period), and one just now; retention runs in between.
    now = timezone.now()
    cluster_event_at = lambda age: ClusterEvent.objects.filter(  # noqa: E731
        pk=ClusterEvent.objects.create(kind=ClusterEvent.NODE_ADD, object_name="new").pk
    ).update(created_at=now - timedelta(seconds=age))
    cluster_event_at(settings.SCHEDBOARD_RECONCILE_SECONDS)
    cluster_event_at(0)
    retention.purge(now=now)

    assert loop.reconcile()["moved"] == 1
    assert queue.lengths()["unschedulable"] == 0


@pytest.mark.parametrize("name,value,message", [
    # Shorter than a reconciler may need to read it (5m in the unschedulable queue, 1m slack, the 1s period).
    ("SCHEDBOARD_RETAIN_CLUSTER_EVENTS", "5m", "must be at least 6m1s (or forever), got '5m'"),
    # Shorter than a binding may take to come for its attempt.
    ("SCHEDBOARD_RETAIN_ATTEMPTS", "10m", "must be at least 1h (or forever), got '10m'"),
    ("SCHEDBOARD_RETAIN_BINDINGS", "30s", "must be at least 1h (or forever), got '30s'"),
    ("SCHEDBOARD_RETAIN_EVENTS", "a while", "expected a duration such as 7d, 1h or forever, got 'a while'"),
])
def test_settings_refuse_a_horizon_too_short_for_what_reads_the_rows(name, value, message):
    base = Path(__file__).resolve().parent.parent
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", name: value}
    out = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=base, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert f"{name}: {message}" in out.stderr
    env[name] = "forever"
    assert subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=base, env=env,
                          capture_output=True, text=True, timeout=60).returncode == 0


@pytest.mark.django_db(transaction=True)
def test_kube_run_inline_purges_as_beat_would(defaults):
    """`kube run --inline` has no beat: its scheduling loop runs retention itself."""
    import types

    from scheduler.replica import Replica

    now = datetime.now(dt_timezone.utc)
    old, young = (Event.objects.create(dedup_key=key, type="Normal", reason="Scheduled", message="m", involved_kind="Pod",
                                       involved_name="web", first_timestamp=when, last_timestamp=when)
                  for key, when in (("old", now - timedelta(days=3)), ("young", now)))
    replica = types.SimpleNamespace(stopping=threading.Event())

    def run():  # as Replica._thread runs it: the thread's connection closed at the end
        from django.db import connections

        try:
            Replica._schedule_loop(replica)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if not Event.objects.filter(dedup_key="old").exists():
                break
            replica.stopping.wait(0.05)
    finally:
        replica.stopping.set()
        thread.join(10)
    assert list(Event.objects.values_list("pk", flat=True)) == [young.pk]


@pytest.mark.django_db
def test_beat_runs_the_retention_task_every_period(defaults):
    from django.conf import settings as live

    from config.celery import app
    from scheduler import tasks

    assert live.CELERY_BEAT_SCHEDULE["retention"] == {"task": "scheduler.retention",
                                                      "schedule": live.SCHEDBOARD_RETENTION_PERIOD}
    assert app.tasks["scheduler.retention"].name == tasks.purge_old_rows.name
    real_now = datetime.now(dt_timezone.utc)
    Attempt.objects.create(namespace="default", pod_name="old", number=1, result="unschedulable",
                           started_at=real_now - 8 * DAY)
    assert tasks.purge_old_rows.apply().get() == {
        "deleted": {"attempts": 1, "events": 0, "cluster events": 0, "bindings": 0, "deleted pods": 0, "deleted nodes": 0,
                              "node revisions": 0}, "done": True}
    assert not Attempt.objects.exists()
