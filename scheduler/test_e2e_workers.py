"""The loop end to end with real worker processes on real Postgres and Redis, with faults.

Every test checks the same invariants at the end: every schedulable pod bound exactly once,
no node over its allocatable, a node's counters equal to what its pods request, and each
binding backed by its attempt and its Scheduled event.
"""

import signal
import time

import pytest
import redis
import yaml
from django.conf import settings
from django.db import connection
from django.db.models import Count, Sum

from scheduler.manifests.files import parse_documents
from scheduler.models import Attempt, Binding, Event, Node, Pod
from scheduler.services import cluster_apply
from scheduler.workers import WorkerProcesses, purge_broker, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

WAIT_SECONDS = 180


def node(name, cpu="4", memory="32Gi", pods="110"):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}}}


def pod(name, cpu="100m", memory="500Mi", annotations=None):
    meta = {"name": name, "namespace": "default"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "app:1", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}


def apply(objs):
    return cluster_apply(parse_documents(yaml.safe_dump_all(objs), "e2e.yaml"))


@pytest.fixture
def workers(request):
    """Start worker processes on the test database; stop them (and show their logs on failure) after."""
    db = connection.settings_dict
    database_url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    purge_broker(settings.REDIS_URL)
    started: list[WorkerProcesses] = []

    def start(n=2, **env):
        env.setdefault("SCHEDBOARD_RECONCILE_MS", "500")
        wp = WorkerProcesses(n, worker_env(database_url=database_url, redis_url=settings.REDIS_URL,
                                           queue_prefix=settings.SCHEDBOARD_QUEUE_PREFIX, **env)).start()
        started.append(wp)
        return wp

    yield start
    for wp in started:
        wp.stop()
        if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
            print(wp.logs())


def wait_for(predicate, what, timeout=WAIT_SECONDS):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def bound_count():
    return Pod.objects.exclude(node_name="").count()


def assert_invariants():
    # No pod bound twice, and every binding has its attempt and its event.
    assert Binding.objects.values("pod_uid").annotate(n=Count("id")).filter(n__gt=1).count() == 0
    bound = Pod.objects.exclude(node_name="")
    assert Binding.objects.count() == bound.count()
    for b in Binding.objects.select_related("attempt"):
        assert b.attempt is not None and b.attempt.result == "scheduled" and b.attempt.node_name == b.node_name
    scheduled_events = Event.objects.filter(reason="Scheduled").count()
    assert scheduled_events == bound.count()
    # No node over allocatable; each node's counters are exactly what its pods take.
    per_node = {r["node_name"]: r for r in bound.values("node_name").annotate(cpu=Sum("req_cpu"), mem=Sum("req_memory"), n=Count("id"))}
    for n in Node.objects.all():
        row = per_node.get(n.name, {"cpu": 0, "mem": 0, "n": 0})
        assert (n.req_cpu, n.req_memory, n.req_pods) == (row["cpu"] or 0, row["mem"] or 0, row["n"]), n.name
        assert n.req_cpu <= n.alloc_cpu and n.req_memory <= n.alloc_memory and n.req_pods <= n.alloc_pods, n.name
    assert Pod.objects.exclude(assumed_node="").count() == 0


def test_two_workers_bind_every_schedulable_pod_once_and_unblock_the_rest_when_a_node_fits(workers):
    apply([node(f"node-{i:03d}") for i in range(200)])
    apply([pod(f"p-{i:04d}") for i in range(1950)] + [pod(f"huge-{i:02d}", cpu="64") for i in range(50)])
    workers(2)
    wait_for(lambda: bound_count() == 1950, "1950 pods bound")
    wait_for(lambda: Pod.objects.filter(name__startswith="huge-", scheduled_reason="Unschedulable").count() == 50,
             "50 huge pods marked unschedulable")
    huge = Pod.objects.filter(name__startswith="huge-").first()
    assert huge.scheduled_message == "0/200 nodes are available: 200 Insufficient cpu."
    assert Event.objects.filter(reason="FailedScheduling", involved_name=huge.name,
                                message="0/200 nodes are available: 200 Insufficient cpu.").exists()
    apply([node("big-node", cpu="4000", memory="4Ti")])
    wait_for(lambda: bound_count() == 2000, "the huge pods bound on the new node")
    assert set(Pod.objects.filter(name__startswith="huge-").values_list("node_name", flat=True)) == {"big-node"}
    assert_invariants()
    assert Attempt.objects.values("worker").distinct().count() == 2  # both processes scheduled


def test_a_worker_killed_mid_run_loses_no_pod(workers):
    apply([node(f"node-{i:03d}") for i in range(100)])
    apply([pod(f"p-{i:04d}") for i in range(2000)])
    wp = workers(2, SCHEDBOARD_ASSUME_TTL_SECONDS="5", SCHEDBOARD_INFLIGHT_LEASE_SECONDS="5", SCHEDBOARD_BATCH_SIZE="64")
    wait_for(lambda: bound_count() >= 200, "some pods bound")
    wp.kill(0, signal.SIGKILL)
    wait_for(lambda: bound_count() == 2000, "every pod bound by the survivor")
    assert_invariants()


def test_redis_flushed_mid_run_is_rebuilt_from_postgres(workers):
    apply([node(f"node-{i:03d}") for i in range(100)])
    apply([pod(f"p-{i:04d}") for i in range(2000)])
    workers(2, SCHEDBOARD_ASSUME_TTL_SECONDS="5", SCHEDBOARD_INFLIGHT_LEASE_SECONDS="5")
    wait_for(lambda: bound_count() >= 200, "some pods bound")
    redis.Redis.from_url(settings.REDIS_URL).flushdb()
    wait_for(lambda: bound_count() == 2000, "every pod bound after the queue was rebuilt")
    assert_invariants()


def test_injected_bind_failures_are_retried_after_their_backoff(workers):
    apply([node(f"node-{i:02d}") for i in range(20)])
    apply([pod(f"ok-{i:03d}") for i in range(200)]
          + [pod(f"flaky-{i:02d}", annotations={"schedboard.io/fail-binds": "2"}) for i in range(10)])
    workers(2)
    wait_for(lambda: bound_count() == 210, "all pods bound despite failing binds")
    assert_invariants()
    for name in Pod.objects.filter(name__startswith="flaky-").values_list("name", flat=True):
        attempts = list(Attempt.objects.filter(pod_name=name).order_by("number"))
        assert [a.result for a in attempts] == ["bind_failed", "bind_failed", "scheduled"], name
        assert [a.number for a in attempts] == [1, 2, 3]
        # Backoff 1 s after the first failure, 2 s after the second: never retried sooner.
        assert (attempts[1].started_at - attempts[0].started_at).total_seconds() >= 1.0
        assert (attempts[2].started_at - attempts[1].started_at).total_seconds() >= 2.0
        assert Event.objects.filter(involved_name=name, reason="FailedScheduling",
                                    message__startswith="Binding rejected: injected binding failure").count() == 2
