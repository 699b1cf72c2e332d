"""The reconciler's scan for pending pods the queue lost (loop/reconcile.py), on the real Redis and Postgres."""

import pytest

from scheduler import loop
from scheduler.queue import queues
from scheduler.testing.loop import apply, node, pod

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def test_the_scan_for_lost_pods_runs_once_a_period_and_at_once_after_redis_lost_the_queue(settings):
    """The scan reads every pending pod (~120 ms at 20,000), so a reconcile every second does it once a
    SCHEDBOARD_REQUEUE_LOST_SECONDS; a Redis that lost the queue lost the period's claim too."""
    settings.SCHEDBOARD_REQUEUE_LOST_SECONDS = 60
    apply(node("node-a"), pod("web"), pod("db"))
    queue = queues.get_queue()
    queues.get_redis().flushdb()  # Redis restarted
    assert loop.reconcile(queue=queue)["requeued"] == 2
    queue.delete("default/web")  # lost again, without Redis losing the rest: found at the next period
    assert loop.reconcile(queue=queue)["requeued"] == 0
    assert queue.get("default/web") is None
    queues.get_redis().flushdb()
    assert loop.reconcile(queue=queue)["requeued"] == 2
    assert queue.get("default/web") is not None and queue.get("default/db") is not None
