"""The Celery broker's Redis transport, keeping one client per channel (config/celery.py selects it for a redis://
or rediss:// broker URL).

kombu's Redis channel builds a new redis.Redis for every publish (Channel.conn_or_acquire), and redis-py's
constructor registers some 170 response callbacks, one case-insensitive dict entry each: measured, 0.19 ms of
CPU per client, as much as the LPUSH round trip it wraps, paid by every kick, bind hand-off and preemption job
sent (a worker sends one or two tasks per batch, the kube mirror one per watch batch). The client holds no
connection of its own (each command takes one from the channel's pool and gives it back, as the fresh client
did), so one is kept per channel and pool: made again only when the channel replaced its pool.
"""

from __future__ import annotations

from contextlib import contextmanager

from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    _kept_client = None

    @contextmanager
    def conn_or_acquire(self, client=None):
        if client:
            yield client
            return
        kept = self._kept_client
        if kept is None or kept.connection_pool is not self.pool:
            kept = self._kept_client = self._create_client()
        yield kept


class Transport(kombu_redis.Transport):
    Channel = Channel


TRANSPORT = f"{__name__}:Transport"
