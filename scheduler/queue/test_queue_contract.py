"""One contract suite for both scheduling queues: MemoryQueue and RedisQueue (real Redis).

Every rule is checked on both backends with a hand-advanced clock; nothing sleeps.
"""

from __future__ import annotations

import math
import os
import threading
import time
import uuid

import pytest
import redis

from scheduler.engine.queue import (
    ACTIVE_Q,
    BACKOFF_Q,
    DEFAULT_POD_INITIAL_BACKOFF,
    DEFAULT_POD_MAX_BACKOFF,
    DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_NODE_ADD,
    EVENT_NODE_UPDATE,
    IN_FLIGHT,
    UNSCHEDULABLE_Q,
    TIMELINE_MAX_ENTRIES,
    MemoryQueue,
    SchedulingQueue,
    calculate_backoff_duration,
)
from scheduler.queue.redis_queue import RedisQueue

T0 = 1000.0


class FakeClock:
    def __init__(self, now: float = T0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(scope="module")
def redis_client():
    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        pytest.fail(f"REDIS_URL={url} is not reachable: {exc}")
    yield client
    client.close()


@pytest.fixture(params=["memory", "redis"])
def backend(request):
    return request.param


@pytest.fixture
def make_queue(request, backend):
    made = []

    def make(**kwargs):
        clock = FakeClock()
        if backend == "memory":
            return MemoryQueue(clock=clock, **kwargs), clock
        client = request.getfixturevalue("redis_client")
        q = RedisQueue(client, prefix=f"schedboard:test:{uuid.uuid4().hex}", clock=clock, **kwargs)
        made.append(q)
        return q, clock

    yield make
    for q in made:
        q.clear()


def queue_of(q, key):
    info = q.get(key)
    return None if info is None else info.queue


def put_in(q, clock, key, where, priority=0):
    """Bring a new pod to `where` (active, backoff, unschedulable or in_flight)."""
    q.add(key, priority)
    if where == ACTIVE_Q:
        return
    [info] = q.pop(1)
    if where == BACKOFF_Q:
        assert q.add_unschedulable_if_not_present(info, unschedulable=False) == BACKOFF_Q
    elif where == UNSCHEDULABLE_Q:
        assert q.add_unschedulable_if_not_present(info, unschedulable=True) == UNSCHEDULABLE_Q


# -- the contract ------------------------------------------------------------------------


def test_both_backends_satisfy_the_protocol(make_queue):
    q, _ = make_queue()
    assert isinstance(q, SchedulingQueue)


def test_constants_carry_upstream_values():
    assert DEFAULT_POD_INITIAL_BACKOFF == 1.0
    assert DEFAULT_POD_MAX_BACKOFF == 10.0
    assert DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION == 300.0


ORDER_CASES = [
    ("priority_desc", [("ns/low", 0, 0), ("ns/high", 100, 1), ("ns/mid", 50, 2)], ["ns/high", "ns/mid", "ns/low"]),
    ("older_first_at_equal_priority", [("ns/b", 5, 0), ("ns/a", 5, 1)], ["ns/b", "ns/a"]),
    (
        "whole_int32_range",
        [("ns/min", -(2**31), 0), ("ns/sys", 2000001000, 1), ("ns/neg", -1, 2), ("ns/zero", 0, 3), ("ns/max", 2**31 - 1, 4)],
        ["ns/max", "ns/sys", "ns/zero", "ns/neg", "ns/min"],
    ),
    ("key_breaks_exact_ties", [("ns/b", 0, 0), ("ns/a", 0, 0)], ["ns/a", "ns/b"]),
    ("microsecond_timestamps", [("ns/x", 1, 0.000002), ("ns/y", 1, 0.000001)], ["ns/y", "ns/x"]),
]


@pytest.mark.parametrize("pods,expected", [c[1:] for c in ORDER_CASES], ids=[c[0] for c in ORDER_CASES])
def test_it_pops_by_priority_then_timestamp(make_queue, pods, expected):
    q, clock = make_queue()
    for key, priority, offset in pods:
        clock.now = T0 + offset
        assert q.add(key, priority) is True
    assert [q.pop(1)[0].key for _ in expected] == expected
    assert q.pop(1) == []


def test_add_many_adds_each_in_order_as_add_does_and_counts_the_new_ones(make_queue):
    q, clock = make_queue()
    clock.now = T0
    assert q.add("ns/known", 1) is True
    assert q.add_many([("ns/a", 5), ("ns/known", 7), ("ns/b", 5)]) == 2
    assert q.add_many([]) == 0
    # As add(): a known pod only gets its new priority; the new ones keep their order at equal priority.
    assert [q.pop(1)[0].key for _ in range(3)] == ["ns/known", "ns/a", "ns/b"]


def test_it_pops_a_batch_counting_one_cycle_and_attempt_per_pod(make_queue):
    q, clock = make_queue()
    for i in range(5):
        q.add(f"ns/p{i}", priority=i)
    clock.advance(3)
    batch = q.pop(3)
    assert [p.key for p in batch] == ["ns/p4", "ns/p3", "ns/p2"]
    assert [p.cycle for p in batch] == [1, 2, 3]
    assert all(p.attempts == 1 and p.queue == IN_FLIGHT and p.popped_at == T0 + 3 for p in batch)
    assert q.scheduling_cycle() == 3
    assert [p.key for p in q.pop(10)] == ["ns/p1", "ns/p0"]
    assert q.scheduling_cycle() == 5
    assert q.pop(10) == [] and q.pop(0) == []


def test_it_sets_initial_attempt_timestamp_when_the_pod_first_enters_active_q(make_queue):
    # As moveToActiveQ in master: set on the first move to activeQ, kept afterwards.
    q, clock = make_queue()
    q.add("ns/p", 0)
    clock.advance(7)
    [info] = q.pop(1)
    assert info.initial_attempt_timestamp == T0
    q.add_unschedulable_if_not_present(info, unschedulable=False)
    clock.advance(5)
    q.flush()
    [info] = q.pop(1)
    assert info.initial_attempt_timestamp == T0
    assert info.attempts == 2 and info.timestamp == T0 + 7


@pytest.mark.parametrize("attempts,expected", [(0, 0), (1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (6, 10), (60, 10)])
def test_backoff_duration_doubles_up_to_the_max(attempts, expected):
    assert calculate_backoff_duration(attempts, DEFAULT_POD_INITIAL_BACKOFF, DEFAULT_POD_MAX_BACKOFF) == expected


BACKOFF_CASES = [
    ("defaults", {}, [1, 2, 4, 8, 10, 10]),
    ("profile_2_5", {"initial_backoff": 2.0, "max_backoff": 5.0}, [2, 4, 5, 5]),
    ("profile_1_1", {"initial_backoff": 1.0, "max_backoff": 1.0}, [1, 1, 1]),
]


@pytest.mark.parametrize("kwargs,durations", [c[1:] for c in BACKOFF_CASES], ids=[c[0] for c in BACKOFF_CASES])
def test_backoff_expires_in_the_window_of_put_back_time_plus_duration(make_queue, kwargs, durations):
    # SchedulerPopFromBackoffQ (on, as upstream's default): the expiry is truncated to its 1 s window, and a pod
    # backs off while its window is now's (isPodBackingoff: not before alignToWindow(now)).
    q, clock = make_queue(**kwargs)
    q.add("ns/p", 0)
    for attempt, duration in enumerate(durations, start=1):
        [info] = q.pop(1)
        assert info.attempts == attempt and info.backoff_expiry is None
        clock.advance(0.25)  # the attempt takes time; backoff starts when the pod is put back
        assert q.add_unschedulable_if_not_present(info, unschedulable=False, message="boom") == BACKOFF_Q
        expiry = math.floor(clock.now + duration)
        assert q.get("ns/p").backoff_expiry == expiry
        clock.now = expiry + 0.75  # still the expiry's window
        assert q.flush() == 0 and queue_of(q, "ns/p") == BACKOFF_Q
        clock.now = expiry + 1.0  # the next window: no longer backing off
        assert q.flush() == 1 and queue_of(q, "ns/p") == ACTIVE_Q


@pytest.mark.parametrize("kwargs,durations", [c[1:] for c in BACKOFF_CASES], ids=[c[0] for c in BACKOFF_CASES])
def test_without_pop_from_backoff_q_backoff_expires_at_put_back_time_plus_duration(make_queue, kwargs, durations):
    q, clock = make_queue(pop_from_backoff=False, **kwargs)
    q.add("ns/p", 0)
    for attempt, duration in enumerate(durations, start=1):
        [info] = q.pop(1)
        clock.advance(0.25)
        assert q.add_unschedulable_if_not_present(info, unschedulable=False, message="boom") == BACKOFF_Q
        assert q.get("ns/p").backoff_expiry == clock.now + duration
        clock.advance(duration)  # exactly at expiry: still backing off (not before now)
        assert q.flush() == 0 and queue_of(q, "ns/p") == BACKOFF_Q
        clock.advance(0.001)
        assert q.flush() == 1 and queue_of(q, "ns/p") == ACTIVE_Q


COUNT_CASES = [
    # (id, outcomes of the attempts: "error" or "rejected", backoff after the last)
    ("one_rejection", ["rejected"], 1),
    ("rejections_double", ["rejected", "rejected", "rejected"], 4),
    ("errors_double", ["error", "error", "error"], 4),
    ("a_rejection_ends_the_errors_run", ["error", "error", "error", "rejected"], 1),
    ("errors_count_afresh_after_a_rejection", ["rejected", "rejected", "error"], 1),
    ("the_rejections_resume_their_count", ["rejected", "rejected", "error", "rejected"], 4),
]


@pytest.mark.parametrize("outcomes,backoff", [c[1:] for c in COUNT_CASES], ids=[c[0] for c in COUNT_CASES])
def test_backoff_doubles_with_the_errors_in_a_row_else_with_the_rejections(make_queue, outcomes, backoff):
    # As getBackoffTime in master: ConsecutiveErrorsCount while > 0, else UnschedulableCount (not Attempts).
    q, clock = make_queue()
    q.add("ns/p", 0)
    for outcome in outcomes:
        [info] = q.pop(1)
        q.add_unschedulable_if_not_present(info, unschedulable=False, error=outcome == "error")
        stored = q.get("ns/p")
        assert stored.backoff_expiry == clock.now + calculate_backoff_duration(
            stored.consecutive_errors or stored.unschedulable_count, 1.0, 10.0)
        clock.advance(100)
        q.flush()
    stored = q.get("ns/p")
    assert stored.backoff_expiry == clock.now - 100 + backoff
    assert stored.unschedulable_count == outcomes.count("rejected")
    assert stored.attempts == len(outcomes)


def test_a_max_backoff_of_zero_turns_backoff_off(make_queue):
    q, clock = make_queue(initial_backoff=0.0, max_backoff=0.0)
    put_in(q, clock, "ns/p", BACKOFF_Q)
    assert q.get("ns/p").backoff_expiry is None
    assert q.flush() == 1 and queue_of(q, "ns/p") == ACTIVE_Q


REQUEUE_CASES = [
    # (id, unschedulable, move request before pop, move request while in flight, expected)
    ("unschedulable_no_event", True, False, False, UNSCHEDULABLE_Q),
    ("unschedulable_event_in_flight", True, False, True, BACKOFF_Q),
    ("unschedulable_event_before_pop_only", True, True, False, UNSCHEDULABLE_Q),
    ("error_no_event", False, False, False, BACKOFF_Q),
    ("error_event_in_flight", False, False, True, BACKOFF_Q),
]


@pytest.mark.parametrize(
    "unschedulable,before,during,expected", [c[1:] for c in REQUEUE_CASES], ids=[c[0] for c in REQUEUE_CASES]
)
def test_failed_pod_goes_where_the_move_request_cycle_says(make_queue, unschedulable, before, during, expected):
    q, clock = make_queue()
    q.add("ns/other", 0)
    q.pop(1)  # cycle 1, so the pod under test starts at cycle 2
    q.add("ns/p", 0)
    if before:
        q.move_all_to_active_or_backoff(EVENT_NODE_ADD)
        assert q.move_request_cycle() == 1
    [info] = q.pop(1)
    assert info.cycle == 2
    if during:
        q.move_all_to_active_or_backoff(EVENT_NODE_UPDATE)
        assert q.move_request_cycle() == 2
    clock.advance(1)
    assert q.add_unschedulable_if_not_present(info, unschedulable=unschedulable, message="0/3 nodes") == expected
    stored = q.get("ns/p")
    assert stored.queue == expected and stored.timestamp == T0 + 1 and stored.message == "0/3 nodes"
    assert stored.backoff_expiry == T0 + 2  # one attempt: 1 s
    assert stored.unschedulable_since == (T0 + 1 if expected == UNSCHEDULABLE_Q else None)


def test_move_request_cycle_starts_at_minus_one(make_queue):
    q, _ = make_queue()
    assert q.move_request_cycle() == -1
    q.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE)  # even with nothing to move
    assert q.move_request_cycle() == 0


MOVE_CASES = [
    # (id, attempts before failing, seconds after the failure, expected)
    ("still_backing_off", 1, 0.5, BACKOFF_Q),
    ("expiry_window_still_running", 1, 1.5, BACKOFF_Q),
    ("expiry_window_over", 1, 2.0, ACTIVE_Q),
    ("long_expired", 1, 30.0, ACTIVE_Q),
    # Two errors then a rejection: the rejection ends the errors' run, its backoff is the first (1 s).
    ("after_errors_a_rejection_backs_off_1s", 3, 1.5, BACKOFF_Q),
    ("after_errors_a_rejection_after_1s", 3, 2.0, ACTIVE_Q),
]


@pytest.mark.parametrize("attempts,wait,expected", [c[1:] for c in MOVE_CASES], ids=[c[0] for c in MOVE_CASES])
def test_move_all_sends_unschedulable_pods_to_backoff_or_active(make_queue, attempts, wait, expected):
    q, clock = make_queue()
    q.add("ns/p", 0)
    for _ in range(attempts - 1):
        [info] = q.pop(1)
        q.add_unschedulable_if_not_present(info, unschedulable=False)
        clock.advance(100)
        q.flush()
    [info] = q.pop(1)
    assert q.add_unschedulable_if_not_present(info) == UNSCHEDULABLE_Q
    clock.advance(wait)
    assert q.move_all_to_active_or_backoff(EVENT_NODE_ADD) == 1
    assert queue_of(q, "ns/p") == expected
    assert q.get("ns/p").unschedulable_since is None
    assert q.move_request_cycle() == q.scheduling_cycle() == attempts


def test_move_all_leaves_backoff_and_in_flight_pods_alone(make_queue):
    q, clock = make_queue()
    put_in(q, clock, "ns/b", BACKOFF_Q)
    put_in(q, clock, "ns/f", IN_FLIGHT)
    put_in(q, clock, "ns/a", ACTIVE_Q)
    clock.advance(60)
    assert q.move_all_to_active_or_backoff(EVENT_NODE_ADD) == 0
    assert (queue_of(q, "ns/b"), queue_of(q, "ns/f"), queue_of(q, "ns/a")) == (BACKOFF_Q, IN_FLIGHT, ACTIVE_Q)


def test_move_keys_moves_only_the_named_unschedulable_pods(make_queue):
    q, clock = make_queue()
    put_in(q, clock, "ns/hinted", UNSCHEDULABLE_Q)
    put_in(q, clock, "ns/other", UNSCHEDULABLE_Q)
    put_in(q, clock, "ns/b", BACKOFF_Q)
    put_in(q, clock, "ns/f", IN_FLIGHT)
    clock.advance(60)
    assert q.move_to_active_or_backoff([], "AssignedPodAdd") == 0
    assert q.move_request_cycle() == -1  # nothing named: no move request
    assert q.move_to_active_or_backoff(["ns/hinted", "ns/b", "ns/f", "ns/gone"], "AssignedPodAdd") == 1
    assert [queue_of(q, k) for k in ("ns/hinted", "ns/other", "ns/b", "ns/f")] == \
        [ACTIVE_Q, UNSCHEDULABLE_Q, BACKOFF_Q, IN_FLIGHT]
    assert q.get("ns/hinted").unschedulable_since is None
    assert q.move_request_cycle() == q.scheduling_cycle()


def test_unschedulable_with_message_finds_pods_by_their_failure(make_queue):
    q, clock = make_queue()
    for key, message in (("ns/a", "0/2 nodes are available: 2 node(s) didn't match pod affinity rules."),
                         ("ns/b", "0/2 nodes are available: 2 Insufficient cpu.")):
        q.add(key, 0)
        [info] = q.pop(1)
        assert q.add_unschedulable_if_not_present(info, message=message) == UNSCHEDULABLE_Q
    put_in(q, clock, "ns/f", IN_FLIGHT)
    assert q.unschedulable_with_message(("pod affinity rules", "topology spread")) == [
        ("ns/a", "0/2 nodes are available: 2 node(s) didn't match pod affinity rules.")]
    assert q.unschedulable_with_message(()) == []


def test_flush_moves_unschedulable_leftovers_after_five_minutes(make_queue):
    q, clock = make_queue()
    put_in(q, clock, "ns/p", UNSCHEDULABLE_Q)
    cycle = q.scheduling_cycle()
    clock.advance(DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION)
    assert q.flush() == 0 and queue_of(q, "ns/p") == UNSCHEDULABLE_Q  # not longer than 5 min yet
    assert q.move_request_cycle() == -1  # nothing moved: no move request recorded
    assert q.flush(now=clock.now + 0.5) == 1
    assert queue_of(q, "ns/p") == ACTIVE_Q
    assert q.move_request_cycle() == cycle  # as movePodsToActiveOrBackoffQueue


def test_flush_leftover_goes_to_backoff_when_the_backoff_outlasts_the_pool(make_queue):
    q, clock = make_queue(initial_backoff=400.0, max_backoff=400.0, max_in_unschedulable=300.0)
    put_in(q, clock, "ns/p", UNSCHEDULABLE_Q)
    assert q.flush(now=clock.now + 301) == 1
    assert queue_of(q, "ns/p") == BACKOFF_Q


def test_flush_without_now_uses_the_clock(make_queue):
    q, clock = make_queue()
    put_in(q, clock, "ns/p", BACKOFF_Q)
    clock.advance(2)  # the window after the expiry's
    assert q.flush() == 1 and queue_of(q, "ns/p") == ACTIVE_Q


@pytest.mark.parametrize("where", [ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q, IN_FLIGHT])
def test_add_is_idempotent_and_updates_the_priority(make_queue, where):
    q, clock = make_queue()
    put_in(q, clock, "ns/p", where, priority=1)
    before = q.lengths()
    assert q.add("ns/p", 42) is False
    assert q.lengths() == before and q.keys() == {"ns/p"}
    info = q.get("ns/p")
    assert info.queue == where and info.priority == 42


def test_add_with_a_new_priority_reorders_active_q(make_queue):
    q, clock = make_queue()
    q.add("ns/a", 0)
    clock.advance(1)
    q.add("ns/b", 0)
    q.add("ns/b", 10)
    assert [p.key for p in q.pop(2)] == ["ns/b", "ns/a"]


def test_add_rejects_priorities_outside_int32(make_queue):
    q, _ = make_queue()
    with pytest.raises(ValueError):
        q.add("ns/p", 2**31)
    with pytest.raises(ValueError):
        q.update("ns/p", -(2**31) - 1)


UPDATE_CASES = [
    # (id, where, seconds after placing it, expected)
    ("active_stays", ACTIVE_Q, 0, ACTIVE_Q),
    ("backoff_stays", BACKOFF_Q, 0, BACKOFF_Q),
    ("in_flight_stays", IN_FLIGHT, 0, IN_FLIGHT),
    ("unschedulable_backing_off", UNSCHEDULABLE_Q, 0.5, BACKOFF_Q),
    ("unschedulable_in_the_expiry_window", UNSCHEDULABLE_Q, 1.5, BACKOFF_Q),
    ("unschedulable_backoff_done", UNSCHEDULABLE_Q, 2.0, ACTIVE_Q),
    ("unknown_pod", None, 0, ACTIVE_Q),
]


@pytest.mark.parametrize("where,wait,expected", [c[1:] for c in UPDATE_CASES], ids=[c[0] for c in UPDATE_CASES])
def test_update_moves_pods_as_upstream(make_queue, where, wait, expected):
    q, clock = make_queue()
    if where is not None:
        put_in(q, clock, "ns/p", where)
    cycle = q.move_request_cycle()
    clock.advance(wait)
    assert q.update("ns/p", 7) == expected
    info = q.get("ns/p")
    assert info.queue == expected and info.priority == 7
    assert q.move_request_cycle() == cycle  # an update is not a move request
    assert q.keys() == {"ns/p"}


def test_update_reorders_active_q(make_queue):
    q, clock = make_queue()
    q.add("ns/a", 5)
    q.add("ns/b", 1)
    q.update("ns/a", 0)
    assert [p.key for p in q.pop(2)] == ["ns/b", "ns/a"]


@pytest.mark.parametrize("where", [ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q, IN_FLIGHT])
@pytest.mark.parametrize("method", ["delete", "done"])
def test_delete_and_done_forget_the_pod_everywhere(make_queue, where, method):
    q, clock = make_queue()
    put_in(q, clock, "ns/p", where)
    put_in(q, clock, "ns/other", ACTIVE_Q)
    assert getattr(q, method)("ns/p") is True
    assert q.get("ns/p") is None and q.keys() == {"ns/other"}
    assert sum(q.lengths().values()) == 1
    assert getattr(q, method)("ns/p") is False
    assert [p.key for p in q.pop(5)] == ["ns/other"]


def test_done_many_forgets_each_pod_wherever_it_is_and_closes_its_timeline(make_queue):
    q, clock = make_queue()
    for key, where in (("ns/a", ACTIVE_Q), ("ns/b", BACKOFF_Q), ("ns/c", UNSCHEDULABLE_Q), ("ns/d", IN_FLIGHT),
                       ("ns/keep", ACTIVE_Q)):
        put_in(q, clock, key, where)
    q.done_many(["ns/a", "ns/b", "ns/unknown", "ns/c", "ns/d", "ns/a"])
    assert q.keys() == {"ns/keep"} and sum(q.lengths().values()) == 1
    for key in ("ns/a", "ns/b", "ns/c", "ns/d"):
        assert q.get(key) is None
        assert [e.event for e in q.timeline(key)][-1] == "Done"
        assert [e.event for e in q.timeline(key)].count("Done") == 1
    assert q.timeline("ns/unknown") == []
    assert [p.key for p in q.pop(5)] == ["ns/keep"]


def test_a_failed_attempt_of_a_deleted_pod_is_not_requeued(make_queue):
    q, _ = make_queue()
    q.add("ns/p", 0)
    [info] = q.pop(1)
    q.delete("ns/p")
    assert q.add_unschedulable_if_not_present(info) is None
    assert q.keys() == set()


def test_add_unschedulable_refuses_a_pod_already_queued(make_queue):
    # As AddUnschedulableIfNotPresent: "Pod ... is already present in the active queue".
    q, clock = make_queue()
    q.add("ns/p", 0)
    [info] = q.pop(1)
    clock.advance(61)
    assert q.reclaim_expired(lease_seconds=60) == ["ns/p"]
    assert q.add_unschedulable_if_not_present(info) is None
    assert q.lengths() == {ACTIVE_Q: 1, BACKOFF_Q: 0, UNSCHEDULABLE_Q: 0, IN_FLIGHT: 0}


def test_a_stale_worker_cannot_requeue_a_pod_another_worker_popped(make_queue):
    q, clock = make_queue()
    q.add("ns/p", 0)
    [old] = q.pop(1)
    clock.advance(61)
    q.reclaim_expired(lease_seconds=60)
    [new] = q.pop(1)
    assert (old.cycle, new.cycle, new.attempts) == (1, 2, 2)
    assert q.add_unschedulable_if_not_present(old) is None
    assert queue_of(q, "ns/p") == IN_FLIGHT
    assert q.add_unschedulable_if_not_present(new) == UNSCHEDULABLE_Q


def test_reclaim_returns_expired_leases_to_active_q_in_their_old_place(make_queue):
    q, clock = make_queue()
    q.add("ns/a", 0)
    [info] = q.pop(1)
    clock.advance(1)
    q.add("ns/b", 0)
    clock.advance(29)
    assert q.reclaim_expired(lease_seconds=30) == []  # exactly at the lease: not expired yet
    assert q.reclaim_expired(now=clock.now + 0.5, lease_seconds=30) == ["ns/a"]
    a = q.get("ns/a")
    assert (a.queue, a.attempts, a.timestamp, a.popped_at) == (ACTIVE_Q, 1, T0, None)
    assert [p.key for p in q.pop(2)] == ["ns/a", "ns/b"]
    assert q.get("ns/a").attempts == 2


def test_keys_lengths_and_entries_show_every_sub_queue(make_queue):
    q, clock = make_queue()
    put_in(q, clock, "ns/u", UNSCHEDULABLE_Q, priority=3)
    put_in(q, clock, "ns/b", BACKOFF_Q, priority=2)
    put_in(q, clock, "ns/f", IN_FLIGHT, priority=1)
    clock.advance(2)
    put_in(q, clock, "ns/a2", ACTIVE_Q, priority=0)
    put_in(q, clock, "ns/a1", ACTIVE_Q, priority=9)
    assert q.keys() == {"ns/u", "ns/b", "ns/f", "ns/a1", "ns/a2"}
    assert q.lengths() == {ACTIVE_Q: 2, BACKOFF_Q: 1, UNSCHEDULABLE_Q: 1, IN_FLIGHT: 1}
    assert [e.key for e in q.entries(ACTIVE_Q)] == ["ns/a1", "ns/a2"]
    assert [e.key for e in q.entries(ACTIVE_Q, limit=1)] == ["ns/a1"]
    assert q.entries(ACTIVE_Q, limit=0) == []
    [u] = q.entries(UNSCHEDULABLE_Q)
    assert (u.key, u.priority, u.attempts, u.cycle, u.unschedulable_since, u.backoff_expiry) == (
        "ns/u", 3, 1, 1, T0, T0 + 1,
    )
    [b] = q.entries(BACKOFF_Q)
    assert (b.key, b.queue, b.backoff_expiry, b.cycle) == ("ns/b", BACKOFF_Q, T0 + 1, 2)
    [f] = q.entries(IN_FLIGHT)
    assert (f.key, f.queue, f.popped_at, f.cycle, f.attempts) == ("ns/f", IN_FLIGHT, T0, 3, 1)
    with pytest.raises(ValueError):
        q.entries("bogus")


def test_entries_keep_the_last_failure_message(make_queue):
    q, _ = make_queue()
    q.add("ns/p", 0)
    [info] = q.pop(1)
    msg = '0/3 nodes are available: 3 Insufficient cpu. | "quoted" ünïcode'
    q.add_unschedulable_if_not_present(info, message=msg)
    assert q.entries(UNSCHEDULABLE_Q)[0].message == msg


def test_real_epoch_timestamps_survive_the_round_trip(make_queue):
    q, clock = make_queue()
    clock.now = 1712345678.123456
    q.add("ns/p", 0)
    [info] = q.pop(1)
    clock.now = 1712345679.654321
    q.add_unschedulable_if_not_present(info)
    got = q.get("ns/p")
    assert got.timestamp == 1712345679.654321 and got.initial_attempt_timestamp == 1712345678.123456
    assert got.backoff_expiry == 1712345680.0  # 1 s later, in its window
    assert [(e.at, e.queue) for e in q.timeline("ns/p")] == [
        (1712345678.123456, ACTIVE_Q), (1712345678.123456, IN_FLIGHT), (1712345679.654321, UNSCHEDULABLE_Q)]


@pytest.mark.parametrize("threads,pods,batch", [(6, 300, 4), (3, 100, 1)])
def test_concurrent_pops_never_hand_out_a_pod_twice(request, backend, threads, pods, batch):
    if backend == "memory":
        shared = MemoryQueue()
        queues = [shared] * threads
    else:
        client = request.getfixturevalue("redis_client")
        prefix = f"schedboard:test:{uuid.uuid4().hex}"
        url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
        # One client per thread, as separate worker processes would have.
        queues = [RedisQueue(redis.Redis.from_url(url), prefix=prefix) for _ in range(threads)]
        request.addfinalizer(RedisQueue(client, prefix=prefix).clear)
    keys = {f"ns/p{i}" for i in range(pods)}
    for i, key in enumerate(sorted(keys)):
        queues[0].add(key, i % 7)
    got: list[list] = [[] for _ in range(threads)]
    start = threading.Barrier(threads)

    def worker(n):
        start.wait()
        while batch_ := queues[n].pop(batch):
            got[n].extend(batch_)

    ts = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=60)
    popped = [p.key for g in got for p in g]
    assert len(popped) == pods and set(popped) == keys
    assert sorted(p.cycle for g in got for p in g) == list(range(1, pods + 1))
    assert queues[0].lengths()[IN_FLIGHT] == pods


def test_concurrent_failures_and_events_lose_no_pod(request, backend):
    pods, threads = 120, 4
    if backend == "memory":
        shared = MemoryQueue(initial_backoff=0.001, max_backoff=0.001)
        queues = [shared] * (threads + 1)
    else:
        client = request.getfixturevalue("redis_client")
        prefix = f"schedboard:test:{uuid.uuid4().hex}"
        url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
        queues = [
            RedisQueue(redis.Redis.from_url(url), prefix=prefix, initial_backoff=0.001, max_backoff=0.001)
            for _ in range(threads + 1)
        ]
        request.addfinalizer(RedisQueue(client, prefix=prefix).clear)
    keys = {f"ns/p{i}" for i in range(pods)}
    for key in keys:
        queues[0].add(key, 0)
    stop = threading.Event()
    bound: list[set] = [set() for _ in range(threads)]

    def worker(n):
        q = queues[n]
        for _ in range(400):
            for info in q.pop(3):
                if info.attempts >= 3:
                    q.done(info.key)  # "bound"
                    bound[n].add(info.key)
                else:
                    q.add_unschedulable_if_not_present(info, unschedulable=info.attempts % 2 == 1)
            q.flush()

    def events():
        while not stop.is_set():
            queues[threads].move_all_to_active_or_backoff(EVENT_NODE_ADD)
            queues[threads].flush()

    ev = threading.Thread(target=events)
    ev.start()
    ws = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for t in ws:
        t.start()
    for t in ws:
        t.join(timeout=120)
    stop.set()
    ev.join(timeout=10)
    done_keys = set().union(*bound)
    assert sum(len(b) for b in bound) == len(done_keys)  # bound once each
    left = queues[0].keys()
    assert left | done_keys == keys and not (left & done_keys)
    assert sum(queues[0].lengths().values()) == len(left)
    assert queues[0].lengths()[IN_FLIGHT] == 0


def test_two_redis_queues_on_one_prefix_share_state(redis_client):
    prefix = f"schedboard:test:{uuid.uuid4().hex}"
    clock = FakeClock()
    a = RedisQueue(redis_client, prefix=prefix, clock=clock)
    b = RedisQueue(redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")), prefix=prefix, clock=clock)
    try:
        a.add("ns/p", 0)
        [info] = b.pop(1)
        assert a.lengths()[IN_FLIGHT] == 1
        assert a.add_unschedulable_if_not_present(info) == UNSCHEDULABLE_Q
        assert b.get("ns/p").queue == UNSCHEDULABLE_Q
    finally:
        a.clear()
    assert list(redis_client.scan_iter(match=f"{prefix}:*")) == []


def test_every_pod_entering_a_sub_queue_is_told_with_upstreams_event_label(make_queue):
    # As queue_incoming_pods_total{queue, event}: each move into active/backoff/unschedulable, once.
    seen = []
    q, clock = make_queue(on_incoming=lambda queue, event, n: seen.append((queue, event, n)))
    q.add("ns/a", 0)
    q.add("ns/a", 5)  # already queued: a priority change, not a new pod
    q.update("ns/u", 0)  # an update of a pod the queue never saw adds it
    assert seen == [(ACTIVE_Q, "UnschedulablePodAdd", 1)] * 2
    seen.clear()

    [a, u] = q.pop(2)
    assert q.add_unschedulable_if_not_present(a, unschedulable=True) == UNSCHEDULABLE_Q
    assert q.add_unschedulable_if_not_present(u, unschedulable=False) == BACKOFF_Q
    assert seen == [(UNSCHEDULABLE_Q, "ScheduleAttemptFailure", 1), (BACKOFF_Q, "ScheduleAttemptFailure", 1)]
    seen.clear()

    clock.advance(2)  # the first attempt's 1 s backoff is over, and its window
    assert q.flush() == 1
    assert seen == [(ACTIVE_Q, "BackoffComplete", 1)]
    seen.clear()

    assert q.update("ns/a", 0) == ACTIVE_Q  # the unschedulable pod changed and its backoff is over
    assert seen == [(ACTIVE_Q, "UnschedulablePodUpdate", 1)]
    seen.clear()

    # Both back in the pool, then a cluster event while they still back off (a: 2 s after its 2nd rejection;
    # u: 1 s after its first, the error before it not counted any more).
    for info in q.pop(2):
        assert q.add_unschedulable_if_not_present(info, unschedulable=True) == UNSCHEDULABLE_Q
    seen.clear()
    assert q.move_all_to_active_or_backoff(EVENT_NODE_ADD) == 2
    assert seen == [(BACKOFF_Q, "NodeAdd", 2)]


def test_the_unschedulable_timeout_counts_pods_by_where_they_land(make_queue):
    seen = []
    q, clock = make_queue(on_incoming=lambda queue, event, n: seen.append((queue, event, n)),
                          initial_backoff=400.0, max_backoff=400.0, max_in_unschedulable=300.0)
    put_in(q, clock, "ns/slow", UNSCHEDULABLE_Q)  # 400 s backoff: outlasts the pool
    seen.clear()
    assert q.flush(now=clock.now + 301) == 1
    assert seen == [(BACKOFF_Q, "UnschedulableTimeout", 1)]


# -- SchedulerPopFromBackoffQ ------------------------------------------------------------


def backoff_pod(q, clock, key, priority=0, error=False, at=None):
    """A pod rejected (or failed with an error) once and put back in backoffQ at `at`."""
    if at is not None:
        clock.now = at
    q.add(key, priority)
    [info] = q.pop(1)
    assert q.add_unschedulable_if_not_present(info, unschedulable=False, error=error) == BACKOFF_Q


POP_BACKOFF_CASES = [
    # (id, pods as (key, priority, put back at, error), activeQ pods, expected pop order)
    ("active_first", [("ns/b", 100, T0, False)], ["ns/a"], ["ns/a", "ns/b"]),
    ("window_then_priority", [("ns/low", 0, T0 + 0.1, False), ("ns/high", 9, T0 + 0.9, False)], [],
     ["ns/high", "ns/low"]),  # one window (both expire at T0 + 1): as activeQ, priority first
    ("earlier_window_first", [("ns/high", 9, T0 + 1.2, False), ("ns/low", 0, T0 + 0.9, False)], [],
     ["ns/low", "ns/high"]),  # the low one's window ends first, whatever the priority
    ("older_first_in_a_window", [("ns/b", 5, T0 + 0.6, False), ("ns/a", 5, T0 + 0.3, False)], [],
     ["ns/a", "ns/b"]),
    ("never_the_errors", [("ns/err", 100, T0, True), ("ns/rej", 0, T0, False)], [], ["ns/rej"]),
]


@pytest.mark.parametrize("pods,active,expected", [c[1:] for c in POP_BACKOFF_CASES], ids=[c[0] for c in POP_BACKOFF_CASES])
def test_pop_takes_backoff_qs_head_when_active_q_is_empty(make_queue, pods, active, expected):
    seen = []
    q, clock = make_queue(on_incoming=lambda queue, event, n: seen.append((queue, event, n)))
    for key, priority, at, error in pods:
        backoff_pod(q, clock, key, priority, error, at)
    clock.now = T0 + 1.5  # every pod still backing off (expiry windows T0+1, T0+2)
    for key in active:
        q.add(key, 0)
    before = {key: q.get(key) for key, *_ in pods}
    cycle = q.scheduling_cycle()
    seen.clear()
    popped = q.pop(10)
    assert [p.key for p in popped] == expected
    assert [p.cycle for p in popped] == list(range(cycle + 1, cycle + 1 + len(expected)))
    from_backoff = [p for p in popped if p.key in before]
    for p in from_backoff:
        # As unlockedMoveEntityToInFlight: one more attempt, in flight; its timestamps stay (the backoff is
        # computed afresh when it is put back).
        was = before[p.key]
        assert (p.attempts, p.queue, p.popped_at) == (was.attempts + 1, IN_FLIGHT, T0 + 1.5)
        assert (p.timestamp, p.initial_attempt_timestamp) == (was.timestamp, was.initial_attempt_timestamp)
        assert p.backoff_expiry is None and q.timeline(p.key)[-1].event == "PopFromBackoffQ"
    # As unlockedPop: scheduler_queue_incoming_pods_total{queue="active", event="PopFromBackoffQ"}.
    assert seen == ([(ACTIVE_Q, "PopFromBackoffQ", len(from_backoff))] if from_backoff else [])
    assert q.ready() == 0
    left = [key for key, *_ in pods if key not in expected]
    assert [p.key for p in q.entries(BACKOFF_Q)] == left


def test_a_batch_fills_from_backoff_q_once_active_q_is_empty(make_queue):
    q, clock = make_queue()
    for i in range(3):
        backoff_pod(q, clock, f"ns/b{i}", priority=i)
    q.add("ns/a", 0)
    assert q.ready() == 4
    assert [p.key for p in q.pop(3)] == ["ns/a", "ns/b2", "ns/b1"]
    assert q.ready() == 1 and [p.key for p in q.entries(BACKOFF_Q)] == ["ns/b0"]


def test_a_pod_popped_from_backoff_q_and_rejected_again_backs_off_longer(make_queue):
    q, clock = make_queue()
    backoff_pod(q, clock, "ns/p")
    clock.advance(0.25)
    [info] = q.pop(1)
    assert info.attempts == 2
    assert q.add_unschedulable_if_not_present(info, unschedulable=False, error=False) == BACKOFF_Q
    assert q.get("ns/p").backoff_expiry == math.floor(clock.now + 2.0)  # the 2nd rejection: 2 s


def test_ready_counts_what_pop_would_hand_out(make_queue):
    q, clock = make_queue()
    put_in(q, clock, "ns/a", ACTIVE_Q)
    backoff_pod(q, clock, "ns/rejected")
    backoff_pod(q, clock, "ns/errored", error=True)
    put_in(q, clock, "ns/u", UNSCHEDULABLE_Q)
    put_in(q, clock, "ns/f", IN_FLIGHT)
    assert q.lengths() == {ACTIVE_Q: 1, BACKOFF_Q: 2, UNSCHEDULABLE_Q: 1, IN_FLIGHT: 1}
    assert q.ready() == 2
    assert q.keys() == {"ns/a", "ns/rejected", "ns/errored", "ns/u", "ns/f"}


def test_without_the_gate_pop_leaves_backoff_q_alone(make_queue):
    q, clock = make_queue(pop_from_backoff=False)
    backoff_pod(q, clock, "ns/b")
    assert q.ready() == 0 and q.pop(5) == []
    assert queue_of(q, "ns/b") == BACKOFF_Q


def test_backoff_q_lists_the_rejected_in_pop_order_then_the_errors(make_queue):
    q, clock = make_queue()
    backoff_pod(q, clock, "ns/err-late", error=True, at=T0 + 0.5)
    backoff_pod(q, clock, "ns/err-early", error=True, at=T0 + 0.1)
    backoff_pod(q, clock, "ns/rej-low", 1, at=T0 + 0.2)
    backoff_pod(q, clock, "ns/rej-high", 5, at=T0 + 0.3)
    assert [p.key for p in q.entries(BACKOFF_Q)] == ["ns/rej-high", "ns/rej-low", "ns/err-early", "ns/err-late"]
    assert [p.key for p in q.entries(BACKOFF_Q, limit=3)] == ["ns/rej-high", "ns/rej-low", "ns/err-early"]
    q.add("ns/rej-low", 9)  # a new priority re-sorts it in its window
    assert [p.key for p in q.entries(BACKOFF_Q, limit=2)] == ["ns/rej-low", "ns/rej-high"]
    assert [p.key for p in q.pop(1)] == ["ns/rej-low"]


def test_the_flush_takes_a_whole_window_from_both_backoff_queues(make_queue):
    seen = []
    q, clock = make_queue(on_incoming=lambda queue, event, n: seen.append((queue, event, n)))
    backoff_pod(q, clock, "ns/err", error=True, at=T0 + 0.1)
    backoff_pod(q, clock, "ns/rej", at=T0 + 0.9)
    backoff_pod(q, clock, "ns/later", at=T0 + 1.1)
    seen.clear()
    assert q.flush(now=T0 + 1.99) == 0  # T0+1's window still running
    assert q.flush(now=T0 + 2.0) == 2
    assert seen == [(ACTIVE_Q, "BackoffComplete", 2)]
    assert [queue_of(q, k) for k in ("ns/err", "ns/rej", "ns/later")] == [ACTIVE_Q, ACTIVE_Q, BACKOFF_Q]


# -- the per-pod timeline ----------------------------------------------------------------


def moves(q, key):
    return [(e.at - T0, e.queue, e.event, e.via) for e in q.timeline(key)]


def test_the_timeline_records_each_move_with_its_time_and_event(make_queue):
    q, clock = make_queue()
    q.add("ns/p", 0)
    clock.advance(1)
    [info] = q.pop(1)
    clock.advance(1)
    q.add_unschedulable_if_not_present(info, message="0/3 nodes")
    clock.advance(5)
    q.move_all_to_active_or_backoff(EVENT_NODE_ADD)  # its backoff (1 s) is over: activeQ
    [info] = q.pop(1)
    q.add_unschedulable_if_not_present(info)
    q.move_to_active_or_backoff(["ns/p"], "AssignedPodAdd")  # a hint's move, backing off: backoffQ
    clock.advance(0.5)
    [info] = q.pop(1)  # activeQ is empty: popped from backoffQ
    q.add_unschedulable_if_not_present(info, unschedulable=False, error=True)
    clock.advance(10)
    q.flush()
    q.update("ns/p", 3)  # in activeQ: not a move
    clock.advance(1)
    [info] = q.pop(1)
    q.done("ns/p")
    assert moves(q, "ns/p") == [
        (0, ACTIVE_Q, "UnschedulablePodAdd", ""),
        (1, IN_FLIGHT, "Popped", ""),
        (2, UNSCHEDULABLE_Q, "ScheduleAttemptFailure", ""),
        (7, ACTIVE_Q, "NodeAdd", ""),
        (7, IN_FLIGHT, "Popped", ""),
        (7, UNSCHEDULABLE_Q, "ScheduleAttemptFailure", ""),
        (7, BACKOFF_Q, "AssignedPodAdd", "QueueingHint"),
        (7.5, IN_FLIGHT, "PopFromBackoffQ", ""),
        (7.5, BACKOFF_Q, "ScheduleAttemptFailure", ""),
        (17.5, ACTIVE_Q, "BackoffComplete", ""),
        (18.5, IN_FLIGHT, "Popped", ""),
        (18.5, "", "Done", ""),  # bound: gone from the queue, its timeline still readable
    ]
    assert q.get("ns/p") is None


def test_the_timeline_shows_timeouts_updates_reclaims_and_deletes(make_queue):
    q, clock = make_queue()
    put_in(q, clock, "ns/p", UNSCHEDULABLE_Q)
    clock.advance(301)
    q.flush()  # longer than 5 minutes in the pool
    [info] = q.pop(1)
    q.add_unschedulable_if_not_present(info)
    clock.advance(0.5)
    q.update("ns/p", 1)  # changed while backing off
    clock.advance(30)
    q.flush()
    q.pop(1)
    clock.advance(61)
    q.reclaim_expired()
    q.delete("ns/p")
    assert [(e.queue, e.event) for e in q.timeline("ns/p")] == [
        (ACTIVE_Q, "UnschedulablePodAdd"), (IN_FLIGHT, "Popped"), (UNSCHEDULABLE_Q, "ScheduleAttemptFailure"),
        (ACTIVE_Q, "UnschedulableTimeout"), (IN_FLIGHT, "Popped"), (UNSCHEDULABLE_Q, "ScheduleAttemptFailure"),
        (BACKOFF_Q, "UnschedulablePodUpdate"), (ACTIVE_Q, "BackoffComplete"), (IN_FLIGHT, "Popped"),
        (ACTIVE_Q, "LeaseExpired"), ("", "Deleted")]


def test_the_timeline_keeps_the_last_moves_only(make_queue):
    q, clock = make_queue()
    q.add("ns/p", 0)
    for _ in range(TIMELINE_MAX_ENTRIES):
        [info] = q.pop(1)
        q.add_unschedulable_if_not_present(info, unschedulable=False)
        clock.advance(100)
        q.flush()
    got = q.timeline("ns/p")
    assert len(got) == TIMELINE_MAX_ENTRIES
    assert (got[-1].queue, got[-1].event) == (ACTIVE_Q, "BackoffComplete")
    assert got[0].event != "UnschedulablePodAdd"  # the oldest moves made room
    q.done_many(["ns/p"])
    assert q.timeline("ns/p")[-1].event == "Done" and len(q.timeline("ns/p")) == TIMELINE_MAX_ENTRIES


def test_no_timeline_is_kept_with_a_ttl_of_zero(make_queue):
    q, clock = make_queue(timeline_ttl=0)
    put_in(q, clock, "ns/p", BACKOFF_Q)
    assert q.timeline("ns/p") == [] and q.timeline("ns/unknown") == []


def test_the_memory_timeline_expires_its_ttl_after_the_last_move():
    clock = FakeClock()
    q = MemoryQueue(clock=clock, timeline_ttl=60)
    q.add("ns/old", 0)
    q.done("ns/old")
    clock.advance(59)
    assert len(q.timeline("ns/old")) == 2
    q.add("ns/new", 0)
    clock.advance(2)
    assert q.timeline("ns/old") == [] and len(q.timeline("ns/new")) == 1


def test_the_redis_timeline_is_a_capped_list_expiring_with_its_ttl(redis_client):
    q = RedisQueue(redis_client, prefix=f"schedboard:test:{uuid.uuid4().hex}", timeline_ttl=90.5)
    try:
        q.add("ns/p", 0)
        q.done("ns/p")
        key = f"{q.prefix}:tl:ns/p"
        assert redis_client.llen(key) == 2 and 89 <= redis_client.ttl(key) <= 91
        assert [k.decode() for k in redis_client.scan_iter(match=f"{q.prefix}:*")] == [key]  # the pod's hash is gone
    finally:
        q.clear()


def test_deleting_a_pod_out_of_the_queue_still_closes_its_timeline(make_queue):
    q, clock = make_queue()
    q.add("ns/p", 0)
    q.pop(1)
    q.done("ns/p")  # bound
    assert q.delete("ns/p") is False  # then deleted: not in the queue, its timeline says so
    assert q.delete("ns/never") is False
    assert [e.event for e in q.timeline("ns/p")] == ["UnschedulablePodAdd", "Popped", "Done", "Deleted"]
    assert q.timeline("ns/never") == []


def test_a_period_goes_to_its_first_claimer_only_until_it_ends_and_a_cleared_queue_knows_no_period(make_queue, backend):
    q, _ = make_queue()
    assert q.claim_period("requeue-lost", 0.3) is True
    assert q.claim_period("requeue-lost", 0.3) is False
    assert q.claim_period("another", 0.3) is True  # each name its own period
    time.sleep(0.35)  # wall time, not the queue's clock: Redis's own expiry keeps it for every process
    assert q.claim_period("requeue-lost", 60) is True
    assert q.claim_period("requeue-lost", 60) is False
    if backend == "redis":
        q.clear()  # as Redis restarting: the queue is lost, and its periods with it
        assert q.claim_period("requeue-lost", 60) is True
