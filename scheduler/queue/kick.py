"""Waking workers: up to SCHEDBOARD_PARALLELISM schedule tasks queued or running at once, each holding a
slot (a token in a Redis sorted set) until its batch ends or the slot expires."""

from __future__ import annotations

import time
import uuid

from django.conf import settings

from .. import dispatch
from .queues import get_redis

_KICK_SLOTS = "schedboard:schedule-slots"
_SLOT_SECONDS = 5  # a dead worker holds its slot this long at most


def kick() -> None:
    """Make sure up to SCHEDBOARD_PARALLELISM schedule tasks are queued or running (Redis only)."""
    r = get_redis()
    if r is None or settings.CELERY_TASK_ALWAYS_EAGER:
        return  # embedded (or inline tasks): the caller's own loop polls
    now = time.time()
    r.zremrangebyscore(_KICK_SLOTS, 0, now)
    while r.zcard(_KICK_SLOTS) < settings.SCHEDBOARD_PARALLELISM:
        token = uuid.uuid4().hex
        r.zadd(_KICK_SLOTS, {token: now + _SLOT_SECONDS})
        if r.zcard(_KICK_SLOTS) > settings.SCHEDBOARD_PARALLELISM:  # lost a race with another kicker
            r.zrem(_KICK_SLOTS, token)
            break
        dispatch.send(dispatch.SCHEDULE, token)


def slot_release(token: str) -> None:
    r = get_redis()
    if r is not None:
        r.zrem(_KICK_SLOTS, token)


def kick_if_waiting(queue) -> None:
    """After a schedule task released its slot having popped nothing: a kick that came while every slot was
    held (this task's among them) sent no task, so pods queued since its pop would wait for the next kick
    (the reconciler's, up to a period later). Asked after the release, a pod queued after this check finds a
    free slot and its own kick sends a task. Waiting means what pop() would hand out: activeQ's pods and, with
    SchedulerPopFromBackoffQ, backoffQ's rejected ones (never those backing off after an error, which pop()
    leaves until their backoff ends and the flush moves them: kicking for them would spin empty tasks)."""
    if queue.ready():
        kick()
