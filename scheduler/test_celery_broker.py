"""The Celery broker's Redis transport (queue/broker.py): one client per channel, not one per publish."""

import pytest
from django.conf import settings

from config.celery import app
from scheduler.queue import broker

pytestmark = pytest.mark.skipif(not settings.REDIS_URL, reason="a Redis broker")


def test_a_redis_broker_goes_through_the_transport_that_keeps_its_client():
    with app.connection_for_write() as conn:
        assert isinstance(conn.transport, broker.Transport)
        channel = conn.default_channel
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as again:
            assert first is again and first.connection_pool is channel.pool
        given = object()
        with channel.conn_or_acquire(given) as client:
            assert client is given  # a caller's own client (kombu's pipelines) is used as given


def test_a_channel_whose_pool_was_replaced_makes_a_client_on_the_new_pool():
    with app.connection_for_write() as conn:
        channel = conn.default_channel
        with channel.conn_or_acquire() as old:
            pass
        channel._pool = None  # as kombu's channel does when it closes its pools
        with channel.conn_or_acquire() as new:
            assert new is not old and new.connection_pool is channel.pool


def test_messages_published_through_the_kept_client_arrive(settings):
    from scheduler.queue.queues import get_redis

    name = f"{settings.CELERY_TASK_DEFAULT_QUEUE}.broker-test"
    r = get_redis()
    r.delete(name)
    try:
        with app.connection_for_write() as conn, conn.Producer() as producer:
            for n in range(3):
                producer.publish({"n": n}, routing_key=name, declare=[], exchange="")
        assert r.llen(name) == 3
    finally:
        r.delete(name)
