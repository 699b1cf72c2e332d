"""Waking workers (queue/kick.py, loop.run_schedule_task) on the real Redis: a pod queued while every schedule
slot is held is never left waiting for the reconciler's next pass."""

import time

import pytest

from scheduler import dispatch, loop
from scheduler.queue import kick as kicking, queues

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


@pytest.fixture
def sent(settings, monkeypatch):
    """The schedule tasks kick() sends (to the broker in production), recorded instead of sent."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.SCHEDBOARD_PARALLELISM = 2
    r = queues.get_redis()
    r.delete(kicking._KICK_SLOTS)
    out: list = []
    monkeypatch.setattr(dispatch, "send", lambda name, *args: out.append((name, *args)))
    yield out
    r.delete(kicking._KICK_SLOTS)


def _hold(*tokens):
    queues.get_redis().zadd(kicking._KICK_SLOTS, {t: time.time() + 5 for t in tokens})


def test_a_pod_queued_while_every_slot_is_held_wakes_a_worker_when_an_idle_task_ends(sent, monkeypatch):
    """Two tasks run (both slots held); one pops nothing. The mirror queues a pod just after that pop and kicks:
    no slot is free, nothing is sent. The idle task then ends: it must send the task that pod needs."""
    _hold("ours", "other")
    queue = queues.get_queue()
    pop = queue.pop

    def pop_then_the_mirror_queues_a_pod(n):
        popped = pop(n)
        queue.add("default/late", 0)
        kicking.kick()  # the mirror's kick: both slots held
        return popped

    monkeypatch.setattr(queue, "pop", pop_then_the_mirror_queues_a_pod)

    stats = loop.run_schedule_task("ours")

    assert stats.popped == 0
    assert [name for name, *_ in sent] == [dispatch.SCHEDULE]  # sent once this task's slot was free


@pytest.mark.parametrize("error,wakes", [(False, True), (True, False)], ids=["rejected", "errored"])
def test_an_idle_task_ending_wakes_a_worker_for_a_pod_pop_may_take_from_backoff_q(sent, monkeypatch, error, wakes):
    """SchedulerPopFromBackoffQ: with activeQ empty a worker pops backoffQ's head, so a pod put back in backoffQ
    while every slot is held needs a task too; one backing off after an error does not (pop() leaves it until
    its backoff ends: a task sent for it would pop nothing, and send another)."""
    _hold("ours", "other")
    queue = queues.get_queue()
    pop = queue.pop

    def pop_then_another_worker_puts_a_pod_back(n):
        popped = pop(n)
        queue.add("default/back", 0)
        [info] = pop(1)
        assert queue.add_unschedulable_if_not_present(info, unschedulable=False, error=error) == "backoff"
        return popped

    monkeypatch.setattr(queue, "pop", pop_then_another_worker_puts_a_pod_back)

    stats = loop.run_schedule_task("ours")

    assert stats.popped == 0 and queue.lengths()["active"] == 0
    assert [name for name, *_ in sent] == ([dispatch.SCHEDULE] if wakes else [])


def test_an_idle_task_ending_with_nothing_queued_sends_nothing(sent):
    _hold("ours", "other")

    loop.run_schedule_task("ours")

    assert sent == []


def test_the_process_keeps_one_redis_client_for_its_url(settings):
    """kick() and slot_release() run per batch: a client (a pool, a connection and its handshake) per call was
    a tenth of a worker's batch."""
    first = queues.get_redis()
    assert queues.get_redis() is first
    settings.REDIS_URL += "?socket_timeout=30"  # another URL: a client of its own
    assert queues.get_redis() is not first and queues.get_redis() is queues.get_redis()


def test_a_kick_sends_a_task_per_free_slot_and_an_ending_task_s_slot_is_given_back_first(sent):
    r = queues.get_redis()
    _hold("ours")
    r.zadd(kicking._KICK_SLOTS, {"dead": time.time() - 1})  # a dead worker's slot, expired

    kicking.kick()  # the expired slot goes; one slot is free
    assert [name for name, *_ in sent] == [dispatch.SCHEDULE]
    assert r.zscore(kicking._KICK_SLOTS, "dead") is None and r.zcard(kicking._KICK_SLOTS) == 2
    kicking.kick()  # none free
    assert len(sent) == 1

    kicking.kick(release="ours")  # the ending task's slot is the next task's
    assert len(sent) == 2 and r.zscore(kicking._KICK_SLOTS, "ours") is None
    tokens = {t.decode() for t in r.zrange(kicking._KICK_SLOTS, 0, -1)}
    assert tokens == {token for _, token in sent}


def _pods_arrive_after_each_pop(monkeypatch, queue, keys):
    """queue.pop, with the next of `keys` queued just after each pop that took a pod (as the mirror would)."""
    pop, arriving = queue.pop, list(keys)

    def pop_then_a_pod_arrives(n):
        popped = pop(n)
        if popped and arriving:
            queue.add(arriving.pop(0), 0)
        return popped

    monkeypatch.setattr(queue, "pop", pop_then_a_pod_arrives)


def test_the_celery_task_goes_on_with_the_next_batch_while_pods_wait(sent, monkeypatch):
    """Live arrival: each batch finds the pods that came during the last. The task pops them itself (no task sent,
    none consumed, for each), and once a pop finds nothing it gives its slot back, sending nothing."""
    from scheduler import tasks
    from scheduler.loop import schedule

    monkeypatch.setattr(schedule, "TASK_BUDGET_SECONDS", 60.0)  # however slow the test machine is
    r = queues.get_redis()
    _hold("ours", "other")
    queue = queues.get_queue()
    queue.add("default/p0", 0)
    _pods_arrive_after_each_pop(monkeypatch, queue, ["default/p1", "default/p2"])

    out = tasks.schedule("ours")

    assert out["popped"] == 3 and sent == []
    assert r.zscore(kicking._KICK_SLOTS, "ours") is None


def test_a_task_past_its_budget_hands_on_through_the_celery_queue(sent, monkeypatch):
    """Bounded: what waits behind the task in the Celery queue (bind, reconcile tasks) must get its turn. Past
    the budget the task ends after its batch and the next batch is a task of its own, sent as before."""
    _hold("ours", "other")
    queue = queues.get_queue()
    queue.add("default/p0", 0)
    _pods_arrive_after_each_pop(monkeypatch, queue, ["default/p1", "default/p2"])

    stats = loop.run_schedule_task("ours", budget=1e-9)  # (any batch takes longer)

    assert stats.popped == 1 and [name for name, *_ in sent] == [dispatch.SCHEDULE]
    assert queue.lengths()["active"] == 1


def test_without_a_budget_a_task_runs_one_batch(sent, monkeypatch):
    """The callers that loop themselves (embedded mode, the replica, tests) get one batch a call, as before."""
    _hold("ours", "other")
    queue = queues.get_queue()
    queue.add("default/p0", 0)
    _pods_arrive_after_each_pop(monkeypatch, queue, ["default/p1"])

    assert loop.run_schedule_task("ours").popped == 1
    assert [name for name, *_ in sent] == [dispatch.SCHEDULE]


def test_an_idle_task_s_release_check_and_kick_are_one_script(sent, monkeypatch):
    """The end of every task that popped nothing (each live task's last pop): one round trip, not a ZREM, a
    MULTI of two ZCARDs and a kick."""
    r = queues.get_redis()
    _hold("ours", "other")
    queue = queues.get_queue()
    monkeypatch.setattr(queue, "ready", lambda: pytest.fail("asked apart"))
    monkeypatch.setattr(kicking, "slot_release", lambda token: pytest.fail("released apart"))
    calls = []
    execute = r.execute_command
    monkeypatch.setattr(r, "execute_command", lambda *args, **kw: calls.append(args[0]) or execute(*args, **kw))

    kicking.kick_if_waiting(queue, release="ours")
    assert calls == ["EVALSHA"] and sent == [] and r.zscore(kicking._KICK_SLOTS, "ours") is None

    queue.add("default/late", 0)
    _hold("ours")
    calls.clear()
    kicking.kick_if_waiting(queue, release="ours")
    assert calls == ["EVALSHA"] and [name for name, *_ in sent] == [dispatch.SCHEDULE]
