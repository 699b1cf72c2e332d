"""The loop end to end with real worker processes on real Postgres and Redis, with faults.

Every test checks the same invariants at the end: every schedulable pod bound exactly once,
no node over its allocatable, a node's counters equal to what its pods request, and each
binding backed by its attempt and its Scheduled event.
"""

import signal

import pytest
import redis
from django.conf import settings

from scheduler.models import Attempt, Event, Pod
from scheduler.testing.e2e import apply, assert_invariants, bound_count, node, pod, wait_for_workers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_two_workers_bind_every_schedulable_pod_once_and_unblock_the_rest_when_a_node_fits(workers):
    apply([node(f"node-{i:03d}") for i in range(200)])
    apply([pod(f"p-{i:04d}") for i in range(1950)] + [pod(f"huge-{i:02d}", cpu="64") for i in range(50)])
    workers(2)
    wait_for_workers(lambda: bound_count() == 1950, "1950 pods bound")
    wait_for_workers(lambda: Pod.objects.filter(name__startswith="huge-", scheduled_reason="Unschedulable").count() == 50,
             "50 huge pods marked unschedulable")
    huge = Pod.objects.filter(name__startswith="huge-").first()
    # 64 cpus fit no node even emptied: preemption cannot help (upstream's message says so).
    message = "0/200 nodes are available: 200 Insufficient cpu. preemption: 0/200 nodes are available: 200 Preemption is not helpful for scheduling."
    assert huge.scheduled_message == message
    assert Event.objects.filter(reason="FailedScheduling", involved_name=huge.name, message=message).exists()
    apply([node("big-node", cpu="4000", memory="4Ti")])
    wait_for_workers(lambda: bound_count() == 2000, "the huge pods bound on the new node")
    assert set(Pod.objects.filter(name__startswith="huge-").values_list("node_name", flat=True)) == {"big-node"}
    assert_invariants()
    assert Attempt.objects.values("worker").distinct().count() == 2  # both processes scheduled


def test_a_worker_killed_mid_run_loses_no_pod(workers):
    apply([node(f"node-{i:03d}") for i in range(100)])
    apply([pod(f"p-{i:04d}") for i in range(2000)])
    wp = workers(2, SCHEDBOARD_ASSUME_TTL_SECONDS="5", SCHEDBOARD_INFLIGHT_LEASE_SECONDS="5", SCHEDBOARD_BATCH_SIZE="64")
    wait_for_workers(lambda: bound_count() >= 200, "some pods bound")
    wp.kill(0, signal.SIGKILL)
    wait_for_workers(lambda: bound_count() == 2000, "every pod bound by the survivor")
    assert_invariants()


def test_redis_flushed_mid_run_is_rebuilt_from_postgres(workers):
    apply([node(f"node-{i:03d}") for i in range(100)])
    apply([pod(f"p-{i:04d}") for i in range(2000)])
    workers(2, SCHEDBOARD_ASSUME_TTL_SECONDS="5", SCHEDBOARD_INFLIGHT_LEASE_SECONDS="5")
    wait_for_workers(lambda: bound_count() >= 200, "some pods bound")
    redis.Redis.from_url(settings.REDIS_URL).flushdb()
    wait_for_workers(lambda: bound_count() == 2000, "every pod bound after the queue was rebuilt")
    assert_invariants()


def test_injected_bind_failures_are_retried_after_their_backoff(workers):
    apply([node(f"node-{i:02d}") for i in range(20)])
    apply([pod(f"ok-{i:03d}") for i in range(200)]
          + [pod(f"flaky-{i:02d}", annotations={"schedboard.io/fail-binds": "2"}) for i in range(10)])
    workers(2)
    wait_for_workers(lambda: bound_count() == 210, "all pods bound despite failing binds")
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
