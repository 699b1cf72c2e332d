"""The worker's collector policy: thresholds raised, survivors frozen at most once a minute."""

import gc

import pytest

from scheduler.loop import collector


def test_a_worker_freezes_after_its_first_batch_and_then_at_most_once_a_minute():
    now = [1000.0]
    try:
        assert collector.after_batch(lambda: now[0]) is False  # not a worker process: nothing
        collector.install()
        assert gc.get_threshold()[0] == collector.YOUNG_THRESHOLD
        assert collector.after_batch(lambda: now[0]) is True
        assert gc.get_freeze_count() > 0
        now[0] += 30
        assert collector.after_batch(lambda: now[0]) is False
        now[0] += 31
        assert collector.after_batch(lambda: now[0]) is True
    finally:
        collector.uninstall()
    assert gc.get_freeze_count() == 0


def test_a_cycle_frozen_alive_and_dropped_later_is_collected_at_the_next_refreeze():
    now = [0.0]

    class Node:
        pass

    try:
        collector.install()
        a, b = Node(), Node()
        a.other, b.other = b, a
        collector.after_batch(lambda: now[0])  # frozen while alive
        del a, b
        gc.collect()
        assert sum(isinstance(o, Node) for o in gc.get_objects()) == 0  # (frozen objects are not listed)
        assert gc.get_freeze_count() > 0
        now[0] += collector.REFREEZE_SECONDS
        collector.after_batch(lambda: now[0])
        gc.unfreeze()
        assert sum(isinstance(o, Node) for o in gc.get_objects()) == 0  # collected, not only hidden
    finally:
        collector.uninstall()


def test_a_replica_freezes_its_start_up_heap_and_collects_again_with_the_workers_thresholds():
    try:
        gc.disable()  # as manage.py starts `kube run`
        collector.start_up_done()
        assert gc.isenabled() and gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] == collector.YOUNG_THRESHOLD
    finally:
        gc.enable()
        collector.uninstall()


@pytest.mark.django_db
def test_a_worker_freezes_its_heap_once_prewarmed_so_its_first_batch_does_not_collect_it_again():
    from scheduler.loop.schedule import prewarm

    try:
        collector.install()
        prewarm()
        assert gc.get_freeze_count() > 0
        assert collector.after_batch() is False  # the next refreeze is a minute away
    finally:
        collector.uninstall()
