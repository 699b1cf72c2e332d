"""The process's SchedulingQueue: Redis when REDIS_URL is set (shared by every worker), else in memory."""

from __future__ import annotations

import threading

from django.conf import settings

from ..telemetry.metrics import count_incoming

_lock = threading.Lock()
_queue = None


def get_queue():
    global _queue
    with _lock:
        if _queue is None:
            from ..versions.profiles import scheduler_config

            backoff = queue_backoff(scheduler_config())
            backoff["on_incoming"] = count_incoming  # scheduler_queue_incoming_pods_total
            backoff["pop_from_backoff"] = settings.SCHEDBOARD_FEATURE_GATES["SchedulerPopFromBackoffQ"]
            backoff["timeline_ttl"] = settings.SCHEDBOARD_QUEUE_TIMELINE_TTL
            if settings.REDIS_URL:
                import redis

                from .redis_queue import RedisQueue

                _queue = RedisQueue(redis.Redis.from_url(settings.REDIS_URL), prefix=settings.SCHEDBOARD_QUEUE_PREFIX, **backoff)
            else:
                from ..engine.queue import MemoryQueue

                _queue = MemoryQueue(**backoff)
        return _queue


def queue_backoff(config) -> dict:
    """The queue's backoff settings from a SchedulerConfig (podInitialBackoffSeconds, podMaxBackoffSeconds)."""
    return {"initial_backoff": float(config.pod_initial_backoff_seconds),
            "max_backoff": float(config.pod_max_backoff_seconds)}


def set_queue_backoff(queue, config) -> None:
    """Apply a new configuration's backoffs; both queues read them when a pod is requeued."""
    for name, value in queue_backoff(config).items():
        setattr(queue, name, value)


def reset_queue(queue=None) -> None:
    """Tests: use this queue (or build a fresh one on next use)."""
    global _queue
    with _lock:
        _queue = queue


_clients: dict[str, object] = {}


def get_redis():
    """The process's Redis client for REDIS_URL (None without one), made once: a client per call was a new
    pool, so a new connection and its handshake each time (kick() and slot_release() ran per batch, in every
    worker and in the mirror). redis-py's pool is thread-safe and starts afresh in a forked child."""
    url = settings.REDIS_URL
    if not url:
        return None
    client = _clients.get(url)
    if client is None:
        import redis

        with _lock:
            client = _clients.setdefault(url, redis.Redis.from_url(url))
    return client
