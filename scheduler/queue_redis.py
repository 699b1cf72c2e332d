"""The scheduling queue on Redis, shared by many worker processes.

Same contract and semantics as scheduler.engine.queue.MemoryQueue (kube-scheduler's
PriorityQueue); every operation is one Lua script, so it is atomic across processes.

Layout under `prefix`:
  :active         ZSET, all scores 0, member "<2^31-1-priority:10>|<timestamp µs:19>|<key>"
                  so ZPOPMIN pops in PrioritySort order (priority desc, timestamp asc)
  :backoff        ZSET key -> backoff expiry
  :unschedulable  ZSET key -> time it entered the pool
  :inflight       ZSET key -> time it was popped (start of the lease)
  :cycle          scheduling cycle counter; :movecycle the move request cycle
  :pod:<key>      HASH of the QueuedPodInfo fields, as strings

Lua prints numbers with "%.14g"; every number the scripts compute is written with "%.17g"
so timestamps survive the round trip exactly. Pod hashes are touched by name from inside
the scripts (not passed in KEYS), which standalone Redis allows and Redis Cluster does not.
"""

from __future__ import annotations

import time
from typing import Callable

from .engine.queue import (
    ACTIVE_Q,
    BACKOFF_COMPLETE,
    BACKOFF_Q,
    DEFAULT_IN_FLIGHT_LEASE,
    DEFAULT_POD_INITIAL_BACKOFF,
    DEFAULT_POD_MAX_BACKOFF,
    DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_ADD,
    EVENT_UNSCHEDULED_POD_UPDATE,
    QUEUE_NAMES,
    SCHEDULE_ATTEMPT_FAILURE,
    IncomingHook,
    QueuedPodInfo,
    check_priority,
)

_PRELUDE = r"""
local P = ARGV[1]
local KA, KB, KU, KI, KC, KM = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local INITIAL, MAXB = tonumber(ARGV[2]), tonumber(ARGV[3])
local NOW_S = ARGV[4]
local NOW = tonumber(NOW_S)

local function pk(key) return P .. ':pod:' .. key end
local function fmt(x) return string.format('%.17g', x) end
local function num(s)
  if s == false or s == nil or s == '' then return nil end
  return tonumber(s)
end

-- PrioritySort.Less as a byte-ordered string; the key breaks ties.
local function member(key)
  local h = pk(key)
  local prio = tonumber(redis.call('HGET', h, 'priority'))
  local ts = tonumber(redis.call('HGET', h, 'timestamp'))
  return string.format('%010.0f|%019.0f|', 2147483647 - prio, math.floor(ts * 1e6 + 0.5)) .. key
end
local function key_of(m) return string.match(m, '^%d+|%d+|(.*)$') end

local function unlink(key)
  local h = pk(key)
  local q = redis.call('HGET', h, 'queue')
  if q == 'active' then redis.call('ZREM', KA, member(key))
  elseif q == 'backoff' then redis.call('ZREM', KB, key)
  elseif q == 'unschedulable' then redis.call('ZREM', KU, key)
  elseif q == 'in_flight' then redis.call('ZREM', KI, key) end
  redis.call('HSET', h, 'queue', '')
end

-- As backoffQueue.calculateBackoffDuration.
local function backoff_duration(attempts)
  if attempts == 0 then return 0 end
  local d = INITIAL
  for _ = 1, attempts - 1 do
    if d > MAXB - d then return MAXB end
    d = d + d
  end
  return d
end

local function expiry_of(key)
  local h = pk(key)
  local e = num(redis.call('HGET', h, 'backoff_expiry'))
  if e == nil then
    e = tonumber(redis.call('HGET', h, 'timestamp'))
        + backoff_duration(tonumber(redis.call('HGET', h, 'attempts')))
    redis.call('HSET', h, 'backoff_expiry', fmt(e))
  end
  return e
end

local function backing_off(key)
  local e = num(redis.call('HGET', pk(key), 'backoff_expiry'))
  return e ~= nil and e > NOW
end

local function to_active(key)
  local h = pk(key)
  if redis.call('HGET', h, 'initial_attempt_timestamp') == '' then
    redis.call('HSET', h, 'initial_attempt_timestamp', NOW_S)
  end
  redis.call('HSET', h, 'queue', 'active', 'unschedulable_since', '')
  redis.call('ZADD', KA, 0, member(key))
end

local function to_backoff(key)
  local e = expiry_of(key)
  redis.call('HSET', pk(key), 'queue', 'backoff', 'unschedulable_since', '')
  redis.call('ZADD', KB, fmt(e), key)
end

-- Returns how many went to backoffQ (the rest went to activeQ), for queue_incoming_pods_total.
local function move_to_active_or_backoff(keys)
  local backoff = 0
  for _, key in ipairs(keys) do
    unlink(key)
    if backing_off(key) then to_backoff(key); backoff = backoff + 1 else to_active(key) end
  end
  redis.call('SET', KM, redis.call('GET', KC) or '0')
  return backoff
end

local function new_pod(key, prio)
  redis.call('HSET', pk(key), 'priority', prio, 'timestamp', NOW_S, 'attempts', '0',
    'initial_attempt_timestamp', '', 'cycle', '0', 'backoff_expiry', '',
    'unschedulable_since', '', 'message', '', 'queue', '', 'popped_at', '')
  to_active(key)
end

local function set_priority(key, prio)
  local h = pk(key)
  if redis.call('HGET', h, 'priority') == prio then return end
  if redis.call('HGET', h, 'queue') == 'active' then
    unlink(key)
    redis.call('HSET', h, 'priority', prio)
    to_active(key)
  else
    redis.call('HSET', h, 'priority', prio)
  end
end
"""

_ADD = r"""
local key, prio = ARGV[5], ARGV[6]
if redis.call('EXISTS', pk(key)) == 1 then
  set_priority(key, prio)
  return 0
end
new_pod(key, prio)
return 1
"""

_UPDATE = r"""
local key, prio = ARGV[5], ARGV[6]
if redis.call('EXISTS', pk(key)) == 0 then
  new_pod(key, prio)
  return {'active', 'added'}
end
set_priority(key, prio)
if redis.call('HGET', pk(key), 'queue') == 'unschedulable' then
  unlink(key)
  if backing_off(key) then to_backoff(key) else to_active(key) end
  return {redis.call('HGET', pk(key), 'queue'), 'moved'}
end
return {redis.call('HGET', pk(key), 'queue'), ''}
"""

_DELETE = r"""
local key = ARGV[5]
if redis.call('EXISTS', pk(key)) == 0 then return 0 end
unlink(key)
redis.call('DEL', pk(key))
return 1
"""

_POP = r"""
local out = {}
local popped = redis.call('ZPOPMIN', KA, tonumber(ARGV[5]))
for i = 1, #popped, 2 do
  local key = key_of(popped[i])
  local h = pk(key)
  local c = redis.call('INCR', KC)
  redis.call('HINCRBY', h, 'attempts', 1)
  redis.call('HSET', h, 'cycle', c, 'backoff_expiry', '', 'queue', 'in_flight', 'popped_at', NOW_S)
  redis.call('ZADD', KI, NOW_S, key)
  out[#out + 1] = key
  out[#out + 1] = redis.call('HGETALL', h)
end
return out
"""

_ADD_UNSCHEDULABLE = r"""
local key, cycle_s, unsched, msg = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local h = pk(key)
if redis.call('HGET', h, 'queue') ~= 'in_flight' then return false end
if redis.call('HGET', h, 'cycle') ~= cycle_s then return false end
unlink(key)
redis.call('HSET', h, 'popped_at', '', 'message', msg, 'timestamp', NOW_S, 'backoff_expiry', '')
local mrc = tonumber(redis.call('GET', KM) or '-1')
if unsched == '0' or mrc >= tonumber(cycle_s) then
  to_backoff(key)
  return 'backoff'
end
expiry_of(key)
redis.call('HSET', h, 'queue', 'unschedulable', 'unschedulable_since', NOW_S)
redis.call('ZADD', KU, NOW_S, key)
return 'unschedulable'
"""

_MOVE_ALL = r"""
local keys = redis.call('ZRANGE', KU, 0, -1)
return {#keys, move_to_active_or_backoff(keys)}
"""

_FLUSH = r"""
local done = redis.call('ZRANGEBYSCORE', KB, '-inf', NOW_S)
for _, key in ipairs(done) do
  unlink(key)
  to_active(key)
end
local cutoff = NOW - tonumber(ARGV[5])
local left = redis.call('ZRANGEBYSCORE', KU, '-inf', '(' .. fmt(cutoff))
local backoff = 0
if #left > 0 then backoff = move_to_active_or_backoff(left) end
return {#done, #left, backoff}
"""

_RECLAIM = r"""
local cutoff = NOW - tonumber(ARGV[5])
local dead = redis.call('ZRANGEBYSCORE', KI, '-inf', '(' .. fmt(cutoff))
for _, key in ipairs(dead) do
  unlink(key)
  redis.call('HSET', pk(key), 'popped_at', '')
  to_active(key)
end
return dead
"""

_ENTRIES = r"""
local z = ({active = KA, backoff = KB, unschedulable = KU, in_flight = KI})[ARGV[5]]
local out = {}
for _, m in ipairs(redis.call('ZRANGE', z, 0, tonumber(ARGV[6]) - 1)) do
  local key = m
  if z == KA then key = key_of(m) end
  out[#out + 1] = key
  out[#out + 1] = redis.call('HGETALL', pk(key))
end
return out
"""


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _opt_float(value: str) -> float | None:
    return float(value) if value != "" else None


def _info(key, flat) -> QueuedPodInfo:
    h = {_s(flat[i]): _s(flat[i + 1]) for i in range(0, len(flat), 2)}
    return QueuedPodInfo(
        key=_s(key),
        priority=int(h["priority"]),
        timestamp=float(h["timestamp"]),
        attempts=int(h["attempts"]),
        initial_attempt_timestamp=_opt_float(h["initial_attempt_timestamp"]),
        cycle=int(h["cycle"]),
        backoff_expiry=_opt_float(h["backoff_expiry"]),
        unschedulable_since=_opt_float(h["unschedulable_since"]),
        message=h["message"],
        queue=h["queue"],
        popped_at=_opt_float(h["popped_at"]),
    )


def _pairs(flat) -> list[QueuedPodInfo]:
    return [_info(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]


class RedisQueue:
    """SchedulingQueue on Redis; safe to share between threads and processes."""

    def __init__(
        self,
        redis_client,
        prefix: str = "schedboard:q",
        clock: Callable[[], float] = time.time,
        initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
        max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
        on_incoming: IncomingHook | None = None,
    ):
        self.redis = redis_client
        self._incoming = on_incoming
        self.prefix = prefix
        self._clock = clock
        self.clock = clock  # the time base of every timestamp this queue hands out
        self.initial_backoff = float(initial_backoff)
        self.max_backoff = float(max_backoff)
        self.max_in_unschedulable = float(max_in_unschedulable)
        self._keys = [
            f"{prefix}:active",
            f"{prefix}:backoff",
            f"{prefix}:unschedulable",
            f"{prefix}:inflight",
            f"{prefix}:cycle",
            f"{prefix}:movecycle",
        ]
        reg = redis_client.register_script
        self._add = reg(_PRELUDE + _ADD)
        self._update = reg(_PRELUDE + _UPDATE)
        self._delete = reg(_PRELUDE + _DELETE)
        self._pop = reg(_PRELUDE + _POP)
        self._add_unschedulable = reg(_PRELUDE + _ADD_UNSCHEDULABLE)
        self._move_all = reg(_PRELUDE + _MOVE_ALL)
        self._flush = reg(_PRELUDE + _FLUSH)
        self._reclaim = reg(_PRELUDE + _RECLAIM)
        self._entries = reg(_PRELUDE + _ENTRIES)

    def _run(self, script, *args, now: float | None = None):
        now = self._clock() if now is None else now
        head = [self.prefix, repr(self.initial_backoff), repr(self.max_backoff), repr(float(now))]
        return script(keys=self._keys, args=head + [str(a) for a in args])

    def _count(self, queue: str, event: str, count: int) -> None:
        if count and self._incoming is not None:
            self._incoming(queue, event, count)

    def add(self, key: str, priority: int = 0) -> bool:
        added = self._run(self._add, key, check_priority(priority)) == 1
        if added:
            self._count(ACTIVE_Q, EVENT_UNSCHEDULED_POD_ADD, 1)
        return added

    def update(self, key: str, priority: int = 0) -> str:
        queue, how = (_s(v) for v in self._run(self._update, key, check_priority(priority)))
        if how:
            self._count(queue, EVENT_UNSCHEDULED_POD_ADD if how == "added" else EVENT_UNSCHEDULED_POD_UPDATE, 1)
        return queue

    def delete(self, key: str) -> bool:
        return self._run(self._delete, key) == 1

    def done(self, key: str) -> bool:
        return self.delete(key)

    def done_many(self, keys: list[str]) -> None:
        """done() for many pods in one round trip (each still its own atomic script)."""
        if not keys:
            return
        pipe = self.redis.pipeline(transaction=False)
        now = self._clock()
        head = [self.prefix, repr(self.initial_backoff), repr(self.max_backoff), repr(float(now))]
        for key in keys:
            self._delete(keys=self._keys, args=[*head, str(key)], client=pipe)
        pipe.execute()

    def pop(self, max_count: int = 1) -> list[QueuedPodInfo]:
        if max_count <= 0:
            return []
        return _pairs(self._run(self._pop, int(max_count)))

    def scheduling_cycle(self) -> int:
        return int(self.redis.get(self._keys[4]) or 0)

    def move_request_cycle(self) -> int:
        value = self.redis.get(self._keys[5])
        return -1 if value is None else int(value)

    def add_unschedulable_if_not_present(
        self, info: QueuedPodInfo, unschedulable: bool = True, message: str = ""
    ) -> str | None:
        out = self._run(
            self._add_unschedulable, info.key, int(info.cycle), "1" if unschedulable else "0", message
        )
        if out is None:
            return None
        queue = _s(out)
        self._count(queue, SCHEDULE_ATTEMPT_FAILURE, 1)
        return queue

    def move_all_to_active_or_backoff(self, event: str) -> int:
        moved, backoff = (int(v) for v in self._run(self._move_all, event))
        self._count(ACTIVE_Q, event, moved - backoff)
        self._count(BACKOFF_Q, event, backoff)
        return moved

    def flush(self, now: float | None = None) -> int:
        done, left, backoff = (int(v) for v in self._run(self._flush, repr(self.max_in_unschedulable), now=now))
        self._count(ACTIVE_Q, BACKOFF_COMPLETE, done)
        self._count(ACTIVE_Q, EVENT_UNSCHEDULABLE_TIMEOUT, left - backoff)
        self._count(BACKOFF_Q, EVENT_UNSCHEDULABLE_TIMEOUT, backoff)
        return done + left

    def reclaim_expired(
        self, now: float | None = None, lease_seconds: float = DEFAULT_IN_FLIGHT_LEASE
    ) -> list[str]:
        return [_s(k) for k in self._run(self._reclaim, repr(float(lease_seconds)), now=now)]

    def get(self, key: str) -> QueuedPodInfo | None:
        flat = self.redis.execute_command("HGETALL", f"{self.prefix}:pod:{key}")
        if not flat:
            return None
        if isinstance(flat, dict):  # a client with RESP3 or response callbacks
            flat = [x for kv in flat.items() for x in kv]
        return _info(key, flat)

    def keys(self) -> set[str]:
        pipe = self.redis.pipeline(transaction=True)
        for k in self._keys[:4]:
            pipe.zrange(k, 0, -1)
        active, *rest = pipe.execute()
        out = {_s(m).split("|", 2)[2] for m in active}
        for members in rest:
            out.update(_s(m) for m in members)
        return out

    def lengths(self) -> dict[str, int]:
        pipe = self.redis.pipeline(transaction=True)
        for k in self._keys[:4]:
            pipe.zcard(k)
        return dict(zip(QUEUE_NAMES, (int(n) for n in pipe.execute())))

    def entries(self, queue_name: str, limit: int = 100) -> list[QueuedPodInfo]:
        if queue_name not in QUEUE_NAMES:
            raise ValueError(f"unknown queue {queue_name!r}")
        if limit <= 0:
            return []
        return _pairs(self._run(self._entries, queue_name, int(limit)))

    def clear(self) -> None:
        """Remove every key under the prefix (tests, and resetting a demo)."""
        for name in self.redis.scan_iter(match=f"{self.prefix}:*", count=500):
            self.redis.delete(name)

