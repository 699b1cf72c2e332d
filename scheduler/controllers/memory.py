"""What a controller remembers between its runs (upstream keeps it in the controller's memory: PodGC's
quarantine queue, the taint eviction's timed work). Beat sends each run to any worker process, so with
Redis it lives in one hash per controller; embedded, in this process. Losing it restarts the clocks, as
restarting kube-controller-manager does."""

from __future__ import annotations

from django.conf import settings

from ..queue.queues import get_redis

_local: dict[str, dict[str, float]] = {}


def _key(controller: str) -> str:
    return f"{settings.SCHEDBOARD_QUEUE_PREFIX}:controller:{controller}"


def recall(controller: str) -> dict[str, float]:
    r = get_redis()
    if r is None:
        return dict(_local.get(controller, {}))
    return {k.decode(): float(v) for k, v in r.hgetall(_key(controller)).items()}


def remember(controller: str, values: dict[str, float], *, only_new: bool = False) -> None:
    if not values:
        return
    r = get_redis()
    if r is None:
        into = _local.setdefault(controller, {})
        for k, v in values.items():
            if not only_new or k not in into:
                into[k] = v
        return
    if only_new:
        pipe = r.pipeline()
        for k, v in values.items():
            pipe.hsetnx(_key(controller), k, v)
        pipe.execute()
    else:
        r.hset(_key(controller), mapping=values)


def forget(controller: str, keys) -> None:
    keys = list(keys)
    if not keys:
        return
    r = get_redis()
    if r is None:
        for k in keys:
            _local.get(controller, {}).pop(k, None)
        return
    r.hdel(_key(controller), *keys)


def forget_all() -> None:
    """Tests: every controller starts afresh."""
    _local.clear()
    r = get_redis()
    if r is not None:
        keys = list(r.scan_iter(match=_key("*")))
        if keys:
            r.delete(*keys)
