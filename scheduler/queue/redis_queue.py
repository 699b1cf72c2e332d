"""The scheduling queue on Redis, shared by many worker processes.

Same contract and semantics as scheduler.engine.queue.MemoryQueue (kube-scheduler's
PriorityQueue); every operation is one Lua script, so it is atomic across processes.

Layout under `prefix`:
  :active         ZSET, all scores 0, member "<2^31-1-priority:10>|<timestamp µs:19>|<key>"
                  so ZPOPMIN pops in PrioritySort order (priority desc, timestamp asc)
  :backoff        ZSET podBackoffQ (rejected pods): member as :active's -> backoff expiry (aligned to its
                  1 s window with SchedulerPopFromBackoffQ), so ZPOPMIN pops a window in activeQ's order
  :errbackoff     ZSET podErrorBackoffQ (pods whose attempt ended in an error): key -> backoff expiry
  :unschedulable  ZSET key -> time it entered the pool
  :inflight       ZSET key -> time it was popped (start of the lease)
  :cycle          scheduling cycle counter; :movecycle the move request cycle
  :pod:<key>      HASH of the QueuedPodInfo fields, as strings
  :tl:<key>       LIST, the pod's timeline: "<time>|<queue>|<event>|<via>" per move, appended by the same
                  scripts, capped at TIMELINE_MAX_ENTRIES, expiring timeline_ttl seconds after the last move

Lua prints numbers with "%.14g"; every number the scripts compute is written with "%.17g"
so timestamps survive the round trip exactly. Pod hashes and timelines are touched by name from inside
the scripts (not passed in KEYS), which standalone Redis allows and Redis Cluster does not.
"""

from __future__ import annotations

import time
import math
from pathlib import Path
from typing import Callable

from ..engine.queue import (
    ACTIVE_Q,
    BACKOFF_COMPLETE,
    BACKOFF_Q,
    DEFAULT_IN_FLIGHT_LEASE,
    DEFAULT_POD_INITIAL_BACKOFF,
    DEFAULT_POD_MAX_BACKOFF,
    DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
    DEFAULT_TIMELINE_TTL,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_ADD,
    EVENT_UNSCHEDULED_POD_UPDATE,
    QUEUE_NAMES,
    SCHEDULE_ATTEMPT_FAILURE,
    POP_FROM_BACKOFF_Q,
    TIMELINE_DELETED,
    TIMELINE_DONE,
    TIMELINE_MAX_ENTRIES,
    IncomingHook,
    QueuedPodInfo,
    TimelineEntry,
    check_priority,
)


_LUA = Path(__file__).with_name("lua")


# Keys per delete_many script: a batch is a few hundred; the cap keeps one script's time in Redis short.
_MANY_PER_SCRIPT = 1000


def _lua(name: str) -> str:
    """One operation's script, after the prelude every script shares (keys, backoff, ordering helpers)."""
    return (_LUA / "prelude.lua").read_text() + (_LUA / f"{name}.lua").read_text()


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
        unschedulable_count=int(h.get("unschedulable_count") or 0),
        consecutive_errors=int(h.get("consecutive_errors") or 0),
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
        pop_from_backoff: bool = True,
        timeline_ttl: float = DEFAULT_TIMELINE_TTL,
    ):
        self.redis = redis_client
        self._incoming = on_incoming
        self.prefix = prefix
        self._clock = clock
        self.clock = clock  # the time base of every timestamp this queue hands out
        self.initial_backoff = float(initial_backoff)
        self.max_backoff = float(max_backoff)
        self.max_in_unschedulable = float(max_in_unschedulable)
        self.pop_from_backoff = bool(pop_from_backoff)  # the SchedulerPopFromBackoffQ feature gate
        self.timeline_ttl = float(timeline_ttl)
        self._keys = [
            f"{prefix}:active",
            f"{prefix}:backoff",
            f"{prefix}:unschedulable",
            f"{prefix}:inflight",
            f"{prefix}:cycle",
            f"{prefix}:movecycle",
            f"{prefix}:errbackoff",
        ]
        reg = redis_client.register_script
        self._add_many = reg(_lua("add_many"))
        self._update = reg(_lua("update"))
        self._delete_many = reg(_lua("delete_many"))
        self._pop = reg(_lua("pop"))
        self._add_unschedulable = reg(_lua("add_unschedulable"))
        self._move_all = reg(_lua("move_all"))
        self._move_keys = reg(_lua("move_keys"))
        self._rejected = reg(_lua("rejected"))
        self._flush = reg(_lua("flush"))
        self._reclaim = reg(_lua("reclaim"))
        self._entries = reg(_lua("entries"))

    def _head(self, now: float) -> list[str]:
        """The arguments every script starts with (prelude.lua)."""
        ttl = math.ceil(self.timeline_ttl) if self.timeline_ttl > 0 else 0
        return [self.prefix, repr(self.initial_backoff), repr(self.max_backoff), repr(float(now)),
                "1" if self.pop_from_backoff else "0", str(ttl), str(TIMELINE_MAX_ENTRIES)]

    def _run(self, script, *args, now: float | None = None):
        now = self._clock() if now is None else now
        return script(keys=self._keys, args=self._head(now) + [str(a) for a in args])

    def _count(self, queue: str, event: str, count: int) -> None:
        if count and self._incoming is not None:
            self._incoming(queue, event, count)

    def count_incoming(self, queue: str, event: str, count: int) -> None:
        self._count(queue, event, count)

    def add(self, key: str, priority: int = 0) -> bool:
        added = self._run(self._add_many, key, check_priority(priority)) == 1
        if added:
            self._count(ACTIVE_Q, EVENT_UNSCHEDULED_POD_ADD, 1)
        return added

    def update(self, key: str, priority: int = 0) -> str:
        queue, how = (_s(v) for v in self._run(self._update, key, check_priority(priority)))
        if how:
            self._count(queue, EVENT_UNSCHEDULED_POD_ADD if how == "added" else EVENT_UNSCHEDULED_POD_UPDATE, 1)
        return queue

    def delete(self, key: str) -> bool:
        return self._run(self._delete_many, TIMELINE_DELETED, key) == 1

    def done(self, key: str) -> bool:
        return self._run(self._delete_many, TIMELINE_DONE, key) == 1

    def done_many(self, keys: list[str]) -> None:
        """done() for many pods in one round trip, one script."""
        if not keys:
            return
        for start in range(0, len(keys), _MANY_PER_SCRIPT):
            self._run(self._delete_many, TIMELINE_DONE, *keys[start:start + _MANY_PER_SCRIPT])

    def add_many(self, entries: list[tuple[str, int]]) -> int:
        """add() for many pods in one script (a round trip per thousand), in order: the pod mirror queues a watch
        batch's new pods at once, not one round trip or one script call each."""
        if not entries:
            return 0
        args = [str(x) for key, priority in entries for x in (key, check_priority(priority))]
        now = self._clock()  # one instant for the whole batch, as one round trip of adds had
        added = sum(int(self._run(self._add_many, *args[start:start + 2 * _MANY_PER_SCRIPT], now=now))
                    for start in range(0, len(args), 2 * _MANY_PER_SCRIPT))
        self._count(ACTIVE_Q, EVENT_UNSCHEDULED_POD_ADD, added)
        return added

    def pop(self, max_count: int = 1) -> list[QueuedPodInfo]:
        if max_count <= 0:
            return []
        from_backoff, flat = self._run(self._pop, int(max_count))
        # As unlockedPop: a pod taken from backoffQ counts as entering activeQ with PopFromBackoffQ.
        self._count(ACTIVE_Q, POP_FROM_BACKOFF_Q, int(from_backoff))
        return _pairs(flat)

    def ready(self) -> int:
        pipe = self.redis.pipeline(transaction=True)
        pipe.zcard(self._keys[0])
        pipe.zcard(self._keys[1])
        active, backoff = (int(n) for n in pipe.execute())
        return active + (backoff if self.pop_from_backoff else 0)

    def waiting_keys(self) -> tuple[str, str, bool]:
        """What ready() counts, for a script of another module's to count it (queue/kick.py): activeQ's key,
        backoffQ's, and whether backoffQ's pods count."""
        return self._keys[0], self._keys[1], self.pop_from_backoff

    def timeline(self, key: str) -> list[TimelineEntry]:
        out = []
        for raw in self.redis.lrange(f"{self.prefix}:tl:{key}", 0, -1):
            at, queue, event, via = _s(raw).split("|", 3)
            out.append(TimelineEntry(float(at), queue, event, via))
        return out

    def scheduling_cycle(self) -> int:
        return int(self.redis.get(self._keys[4]) or 0)

    def move_request_cycle(self) -> int:
        value = self.redis.get(self._keys[5])
        return -1 if value is None else int(value)

    def add_unschedulable_if_not_present(
        self, info: QueuedPodInfo, unschedulable: bool = True, message: str = "", error: bool | None = None
    ) -> str | None:
        error = (not unschedulable) if error is None else bool(error)
        out = self._run(
            self._add_unschedulable, info.key, int(info.cycle), "1" if unschedulable else "0", message,
            "1" if error else "0",
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

    def move_to_active_or_backoff(self, keys: list[str], event: str) -> int:
        if not keys:
            return 0
        moved, backoff = (int(v) for v in self._run(self._move_keys, event, *keys))
        self._count(ACTIVE_Q, event, moved - backoff)
        self._count(BACKOFF_Q, event, backoff)
        return moved

    def unschedulable_with_message(self, texts: tuple[str, ...]) -> list[tuple[str, str]]:
        if not texts:
            return []
        flat = self._run(self._rejected, *texts)
        return [(_s(flat[i]), _s(flat[i + 1])) for i in range(0, len(flat), 2)]

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
        for k in (*self._keys[:4], self._keys[6]):
            pipe.zrange(k, 0, -1)
        active, backoff, *rest = pipe.execute()
        out = {_s(m).split("|", 2)[2] for m in (*active, *backoff)}
        for members in rest:
            out.update(_s(m) for m in members)
        return out

    def claim_period(self, name: str, seconds: float) -> bool:
        # Redis's own expiry, so every process sees the same period; a flushed or restarted Redis has none.
        return bool(self.redis.set(f"{self.prefix}:period:{name}", b"1", nx=True, px=max(1, int(seconds * 1000))))

    def lengths(self) -> dict[str, int]:
        pipe = self.redis.pipeline(transaction=True)
        for k in (*self._keys[:4], self._keys[6]):
            pipe.zcard(k)
        active, backoff, unschedulable, in_flight, errors = (int(n) for n in pipe.execute())
        return dict(zip(QUEUE_NAMES, (active, backoff + errors, unschedulable, in_flight)))

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

