"""The workload controllers run one pass at a time across processes (a Redis lock): a pass that cannot have
the lock in time is skipped, and says so; a lock whose holder died expires."""

import time

import pytest
from django.conf import settings

from scheduler.controllers import workloads
from scheduler.controllers.exclusive import exclusive
from scheduler.queue.queues import get_redis

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_second_holder_waits_then_gives_up_and_the_first_release_frees_it():
    with exclusive("t") as first:
        assert first
        with exclusive("t", wait=0.1) as second:
            assert not second
    with exclusive("t", wait=0.1) as again:
        assert again


def test_a_workload_pass_is_skipped_while_another_holds_the_lock():
    with exclusive("workloads"):
        assert workloads.sync_all(wait=0.1) == {"skipped": True}
        # A scenario's control plane does not wait at all: the other pass is doing the work.
        t0 = time.monotonic()
        assert workloads.sync_all(wait=0) == {"skipped": True}
        assert time.monotonic() - t0 < 0.5
    assert workloads.sync_all() == {}


def test_a_lock_left_by_a_dead_holder_expires():
    r = get_redis()
    key = f"{settings.SCHEDBOARD_QUEUE_PREFIX}:controller-lock:t"
    r.set(key, "dead", px=200)
    with exclusive("t", wait=2.0) as got:
        assert got
    assert r.get(key) is None
