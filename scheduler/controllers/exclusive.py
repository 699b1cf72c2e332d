"""One controller pass at a time across processes: upstream runs one kube-controller-manager (leader
elected), while here beat's task, a scenario and `scale` may each run the workload controllers at once,
and two passes seeing the same missing pod would both create it. A Redis lock (SET NX with an expiry, so
a crashed holder frees it) when there is Redis; a process lock embedded."""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

from django.conf import settings

from ..queue.queues import get_redis

LOCK_TTL_MS = 30_000  # longer than any pass; a holder that died frees it after this
_local = threading.Lock()


@contextmanager
def exclusive(name: str, wait: float = 10.0):
    """Hold the lock for `name` (waiting up to `wait` seconds); yields False when it could not be had."""
    r = get_redis()
    if r is None:
        got = _local.acquire(timeout=wait)
        try:
            yield got
        finally:
            if got:
                _local.release()
        return
    key = f"{settings.SCHEDBOARD_QUEUE_PREFIX}:controller-lock:{name}"
    token = f"{os.getpid()}:{threading.get_ident()}:{time.monotonic()}"
    deadline = time.monotonic() + wait
    got = bool(r.set(key, token, nx=True, px=LOCK_TTL_MS))
    while not got and time.monotonic() < deadline:
        time.sleep(0.02)
        got = bool(r.set(key, token, nx=True, px=LOCK_TTL_MS))
    try:
        yield got
    finally:
        if got:
            # Released only if still ours (it may have expired and been taken by another).
            r.eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
                   1, key, token)
