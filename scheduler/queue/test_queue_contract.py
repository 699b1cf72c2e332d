"""One contract suite for both scheduling queues: MemoryQueue and RedisQueue (real Redis).

Every rule is checked on both backends with a hand-advanced clock; nothing sleeps.
"""

from __future__ import annotations

import os
import threading
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
def test_backoff_expires_at_put_back_time_plus_duration(make_queue, kwargs, durations):
    q, clock = make_queue(**kwargs)
    q.add("ns/p", 0)
    for attempt, duration in enumerate(durations, start=1):
        [info] = q.pop(1)
        assert info.attempts == attempt and info.backoff_expiry is None
        clock.advance(0.25)  # the attempt takes time; backoff starts when the pod is put back
        assert q.add_unschedulable_if_not_present(info, unschedulable=False, message="boom") == BACKOFF_Q
        assert q.get("ns/p").backoff_expiry == clock.now + duration
        clock.advance(duration - 0.5)
        assert q.flush() == 0 and queue_of(q, "ns/p") == BACKOFF_Q
        clock.advance(0.5)  # exactly at expiry: no longer backing off
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
    ("backoff_just_expired", 1, 1.0, ACTIVE_Q),
    ("long_expired", 1, 30.0, ACTIVE_Q),
    ("third_attempt_backs_off_4s", 3, 3.0, BACKOFF_Q),
    ("third_attempt_after_4s", 3, 4.0, ACTIVE_Q),
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
    clock.advance(1)
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
    ("unschedulable_backoff_done", UNSCHEDULABLE_Q, 1.0, ACTIVE_Q),
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
    assert got.backoff_expiry == 1712345679.654321 + 1.0


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

    clock.advance(1)  # the first attempt's 1 s backoff is over
    assert q.flush() == 1
    assert seen == [(ACTIVE_Q, "BackoffComplete", 1)]
    seen.clear()

    assert q.update("ns/a", 0) == ACTIVE_Q  # the unschedulable pod changed and its backoff is over
    assert seen == [(ACTIVE_Q, "UnschedulablePodUpdate", 1)]
    seen.clear()

    # Both back in the pool, then a cluster event while they still back off (2 s after a 2nd attempt).
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
