"""Pods whose preemption is under way (upstream's Evaluator.preempting and DefaultPreemption's PreEnqueue):
between the cycle that chose the victims and the end of the task that evicts them, the preemptor is not
attempted again; otherwise a retry would see the victims still there and preempt a second time.

A mark lives in Redis (every worker sees it) or in this process when embedded, and expires on its own
(PREEMPTING_TTL): a preempt task lost with its worker never keeps the pod back for long.
"""

from __future__ import annotations

import threading
import time

from django.conf import settings

from .queues import get_redis

PREEMPTING_TTL = 30  # seconds

_local: dict[str, float] = {}
_lock = threading.Lock()


def _key(uid: str) -> str:
    return f"{settings.SCHEDBOARD_QUEUE_PREFIX}:preempting:{uid}"


def mark(uids: list[str]) -> None:
    r = get_redis()
    if r is None:
        with _lock:
            for uid in uids:
                _local[uid] = time.monotonic() + PREEMPTING_TTL
        return
    pipe = r.pipeline(transaction=False)
    for uid in uids:
        pipe.set(_key(uid), "1", ex=PREEMPTING_TTL)
    pipe.execute()


def clear(uid: str) -> None:
    r = get_redis()
    if r is None:
        with _lock:
            _local.pop(uid, None)
        return
    r.delete(_key(uid))


def marked(uids: list[str]) -> set[str]:
    """Which of these pods are preempting now (one round trip)."""
    if not uids:
        return set()
    r = get_redis()
    if r is None:
        now = time.monotonic()
        with _lock:
            return {u for u in uids if _local.get(u, 0) > now}
    return {u for u, v in zip(uids, r.mget([_key(u) for u in uids])) if v is not None}
