"""The leader's committer binding asynchronously (upstream's SchedulerAsyncAPICalls): batches' binding cycles
in flight together, one cycle per pod at a time, a job leaving Redis only once every binding in it is
settled, and a cycle's failure put back for recover(). Real Redis; the binder is a stand-in that records
and blocks (the real one is proven against the API server in test_kube_backend.py and test_chaos.py)."""

import json
import threading
import time

import pytest
from django.db import OperationalError

from scheduler.kube.controller import Committer
from scheduler.kube.jobs import jobs_key
from scheduler.queue.queues import get_redis


class FakeRecorder:
    def tick(self):
        pass


class Binder:
    """Binds by recording each batch's (pod, attempt) pairs; a batch with a pod in `hold` waits for `release`."""

    def __init__(self, hold=(), fail=False):
        self.batches: list[list[tuple[int, int]]] = []
        self.hold = set(hold)
        self.release = threading.Event()
        self.started = threading.Event()
        self.fail = fail
        self.in_flight = self.most_in_flight = 0
        self._lock = threading.Lock()

    def __call__(self, items):
        with self._lock:
            self.batches.append([(i["pod"], i["attempt"]) for i in items])
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.hold & {i["pod"] for i in items}:
                self.started.set()
                assert self.release.wait(10)
            if self.fail:
                raise OperationalError("the database went away")
        finally:
            with self._lock:
                self.in_flight -= 1


def until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def bind_job(*pods_attempts):
    return json.dumps({"op": "bind", "items": [{"pod": pod, "attempt": attempt, "node": "n", "info": {"key": f"ns/p{pod}"}}
                                               for pod, attempt in pods_attempts]})


@pytest.fixture
def redis():
    r = get_redis()
    key = jobs_key()
    r.delete(key, key + ":processing")
    yield r
    r.delete(key, key + ":processing")


def committer(redis, binder, cycles=4):
    return Committer(core=None, recorder=FakeRecorder(), redis=redis, bind=binder, cycles=cycles)


def test_a_slow_binding_does_not_hold_the_next_batch_behind_it(redis):
    binder = Binder(hold={1})
    c = committer(redis, binder)
    redis.rpush(jobs_key(), bind_job((1, 10)))
    assert c.run_once(1, wait=False)
    assert binder.started.wait(5)  # pod 1's cycle is in flight, blocked
    redis.rpush(jobs_key(), bind_job((2, 20), (3, 30)))
    assert c.run_once(1, wait=False)
    # The second cycle finishes while the first is still blocked; only the settled job left the processing
    # list, pod 1's is still there (a crash now recovers it).
    until(lambda: [(2, 20), (3, 30)] in binder.batches and redis.llen(jobs_key() + ":processing") == 1)
    assert redis.lrange(jobs_key() + ":processing", 0, -1) == [bind_job((1, 10)).encode()]
    binder.release.set()
    assert c.drain(5)
    assert redis.llen(jobs_key() + ":processing") == 0
    assert binder.most_in_flight == 2
    c.stop_cycles()


def test_a_job_for_a_pod_whose_binding_is_in_flight_waits_and_goes_with_the_next_batch(redis):
    binder = Binder(hold={1})
    c = committer(redis, binder)
    redis.rpush(jobs_key(), bind_job((1, 10)))
    assert c.run_once(1, wait=False)
    assert binder.started.wait(5)
    # The pod placed again (its first mark outlived the timeout, say) beside another pod's binding.
    redis.rpush(jobs_key(), bind_job((1, 11), (2, 20)))
    assert c.run_once(1, wait=False)
    until(lambda: len(binder.batches) == 2 and binder.in_flight == 1)
    assert binder.batches == [[(1, 10)], [(2, 20)]]  # never two cycles on pod 1 at once
    until(lambda: c._running == 1)
    assert redis.llen(jobs_key() + ":processing") == 2  # the second job still owes pod 1's binding
    binder.release.set()
    assert c.drain(5)
    assert c.run_once(1, wait=False)  # the held binding goes out without waiting for a new job
    assert c.drain(5)
    assert binder.batches[2] == [(1, 11)]
    assert redis.llen(jobs_key() + ":processing") == 0
    c.stop_cycles()


def test_with_every_cycle_busy_the_jobs_wait_in_redis(redis):
    binder = Binder(hold={1, 2})
    c = committer(redis, binder, cycles=2)
    for pod in (1, 2, 3):
        redis.rpush(jobs_key(), bind_job((pod, pod * 10)))
        assert c.run_once(0.2, wait=False)
    assert redis.llen(jobs_key()) == 1  # the third job is not taken while both cycles are blocked
    binder.release.set()
    assert c.drain(5)
    assert c.run_once(1, wait=False) and c.drain(5)
    assert sorted(b[0] for b in binder.batches) == [(1, 10), (2, 20), (3, 30)]
    assert redis.llen(jobs_key()) == redis.llen(jobs_key() + ":processing") == 0
    c.stop_cycles()


def test_a_failed_cycle_is_raised_by_the_next_run_once_and_recover_puts_its_job_back(redis):
    binder = Binder(fail=True)
    c = committer(redis, binder)
    redis.rpush(jobs_key(), bind_job((1, 10)))
    assert c.run_once(1, wait=False)
    assert c.drain(5)
    with pytest.raises(OperationalError):
        c.run_once(0.1, wait=False)
    assert redis.llen(jobs_key() + ":processing") == 1  # not settled: not dropped
    assert c.recover() == 1
    assert redis.lrange(jobs_key(), 0, -1) == [bind_job((1, 10)).encode()]
    binder.fail = False
    assert c.run_once(1, wait=False) and c.drain(5)
    assert binder.batches == [[(1, 10)], [(1, 10)]]  # bound again: idempotent
    assert redis.llen(jobs_key() + ":processing") == 0
    c.stop_cycles()


def test_run_once_waiting_binds_in_the_calling_thread_and_raises_at_once(redis):
    binder = Binder(fail=True)
    c = committer(redis, binder)
    redis.rpush(jobs_key(), bind_job((1, 10)))
    with pytest.raises(OperationalError):
        c.run_once(1)
    assert redis.llen(jobs_key() + ":processing") == 1
