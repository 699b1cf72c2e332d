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

# One round trip, atomic: the expired slots go, ARGV[3] (a token, or "") is given back, and as many of the
# candidate tokens that follow as there are free slots are taken, in order; the tokens taken come back. (Asked
# command by command it was five round trips per batch, and a check for a kicker racing between them.) With
# KEYS[2] and KEYS[3] (the queue's activeQ and backoffQ), only while a pod waits in activeQ, or in backoffQ
# when ARGV[5] is '1' (pop() takes its head then): kick_if_waiting's check, in the same step as the release.
_TAKE_SLOTS = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, ARGV[1])
if ARGV[3] ~= '' then redis.call('ZREM', KEYS[1], ARGV[3]) end
if #KEYS > 1 then
  local ready = redis.call('ZCARD', KEYS[2])
  if ARGV[5] == '1' then ready = ready + redis.call('ZCARD', KEYS[3]) end
  if ready == 0 then return {} end
end
local free = tonumber(ARGV[4]) - redis.call('ZCARD', KEYS[1])
local taken = {}
for i = 6, #ARGV do
  if #taken >= free then break end
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[i])
  taken[#taken + 1] = ARGV[i]
end
return taken
"""
_scripts: dict = {}


def _take_slots(r, release: str | None, wanted: int, waiting: tuple[str, str, bool] | None = None) -> list[str]:
    """`waiting`: (activeQ's key, backoffQ's key, whether pop() takes backoffQ's head): only if pods wait there."""
    script = _scripts.get(id(r))
    if script is None or script.registered_client is not r:
        script = _scripts[id(r)] = r.register_script(_TAKE_SLOTS)
    now = time.time()
    tokens = [uuid.uuid4().hex for _ in range(wanted)]
    keys = [_KICK_SLOTS, *(waiting[:2] if waiting else ())]
    from_backoff = "1" if waiting and waiting[2] else "0"
    taken = script(keys=keys, args=[repr(now), repr(now + _SLOT_SECONDS), release or "", wanted, from_backoff, *tokens])
    return [t.decode() if isinstance(t, bytes) else t for t in taken]


def kick(release: str | None = None) -> None:
    """Make sure up to SCHEDBOARD_PARALLELISM schedule tasks are queued or running (Redis only); `release`: the
    slot of the task ending now, given back first (in the same round trip)."""
    r = get_redis()
    if r is None:
        return
    if settings.CELERY_TASK_ALWAYS_EAGER:  # embedded (or inline tasks): the caller's own loop polls
        if release:
            r.zrem(_KICK_SLOTS, release)
        return
    for token in _take_slots(r, release, settings.SCHEDBOARD_PARALLELISM):
        dispatch.send(dispatch.SCHEDULE, token)


def slot_release(token: str) -> None:
    r = get_redis()
    if r is not None:
        r.zrem(_KICK_SLOTS, token)


def kick_if_waiting(queue, release: str | None = None) -> None:
    """After a schedule task released its slot having popped nothing: a kick that came while every slot was
    held (this task's among them) sent no task, so pods queued since its pop would wait for the next kick
    (the reconciler's, up to a period later). Asked after the release, a pod queued after this check finds a
    free slot and its own kick sends a task. Waiting means what pop() would hand out: activeQ's pods and, with
    SchedulerPopFromBackoffQ, backoffQ's rejected ones (never those backing off after an error, which pop()
    leaves until their backoff ends and the flush moves them: kicking for them would spin empty tasks).

    `release`: the ending task's slot, given back here. On the Redis queue the release, the check and the kick's
    slots are one script (one round trip at the end of every task instead of two or three)."""
    waiting = getattr(queue, "waiting_keys", None)
    r = get_redis()
    if waiting is None or r is None or settings.CELERY_TASK_ALWAYS_EAGER:
        if release:
            slot_release(release)
        if queue.ready():
            kick()
        return
    for token in _take_slots(r, release, settings.SCHEDBOARD_PARALLELISM, waiting=waiting()):
        dispatch.send(dispatch.SCHEDULE, token)
