"""The scheduling queue: activeQ, backoffQ and the unschedulable pod pool, plus in-flight pods.

Shaped like kube-scheduler's PriorityQueue (pkg/scheduler/backend/queue/scheduling_queue.go,
backoff_queue.go, active_queue.go) without queueing hints: a failed pod goes to the
unschedulable pool unless a move request (cluster event) arrived since it was popped
(moveRequestCycle, as addUnschedulableWithoutQueueingHint). `SchedulingQueue` is the contract;
`MemoryQueue` keeps it in process, `scheduler.queue.redis_queue.RedisQueue` keeps it in Redis for
many worker processes. Extra to upstream, for workers that may die: popped pods stay *in
flight* with a lease until done(), add_unschedulable_if_not_present() or reclaim_expired().
"""

from __future__ import annotations

import heapq
import math
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable, Protocol, runtime_checkable

# As scheduling_queue.go (DefaultPodInitialBackoffDuration, DefaultPodMaxBackoffDuration,
# DefaultPodMaxInUnschedulablePodsDuration), in seconds.
DEFAULT_POD_INITIAL_BACKOFF = 1.0
DEFAULT_POD_MAX_BACKOFF = 10.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION = 300.0

# Ours: how long a popped pod may stay in flight before reclaim_expired() gives it back.
DEFAULT_IN_FLIGHT_LEASE = 60.0

# Sub-queue names, as lengths() and entries() spell them.
ACTIVE_Q = "active"
BACKOFF_Q = "backoff"
UNSCHEDULABLE_Q = "unschedulable"
IN_FLIGHT = "in_flight"
QUEUE_NAMES = (ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q, IN_FLIGHT)

# Cluster event labels, as ClusterEvent.Label() in pkg/scheduler/framework/events.go
# (Resource + ActionType, or the custom label of a wildcard event).
EVENT_NODE_ADD = "NodeAdd"
EVENT_NODE_UPDATE = "NodeUpdate"
EVENT_ASSIGNED_POD_DELETE = "AssignedPodDelete"
EVENT_ASSIGNED_POD_ADD = "AssignedPodAdd"
EVENT_ASSIGNED_POD_UPDATE = "AssignedPodUpdate"
EVENT_UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
EVENT_FORCE_ACTIVATE = "ForceActivate"
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
# An unscheduled pod added or updated (EventUnscheduledPodAdd/Update: Resource "UnschedulablePod").
EVENT_UNSCHEDULED_POD_ADD = "UnschedulablePodAdd"
EVENT_UNSCHEDULED_POD_UPDATE = "UnschedulablePodUpdate"

# on_incoming(queue, event, count): told of every pod entering a sub-queue, with upstream's event
# label, so the caller can keep scheduler_queue_incoming_pods_total without the engine knowing it.
IncomingHook = Callable[[str, str, int], None]


def _ignore_incoming(queue: str, event: str, count: int) -> None:
    pass

# Pod priorities are int32 (PodSpec.Priority); nil counts as 0 (corev1helpers.PodPriority).
MIN_POD_PRIORITY = -(2**31)
MAX_POD_PRIORITY = 2**31 - 1


@dataclass
class QueuedPodInfo:
    """One pod's queue record (framework.QueuedPodInfo, keyed by "namespace/name")."""

    key: str
    priority: int = 0
    timestamp: float = 0.0  # when added, or when last put back after a failed attempt
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    cycle: int = 0  # the scheduling cycle of the last pop
    backoff_expiry: float | None = None
    unschedulable_since: float | None = None
    message: str = ""  # the last failure's message, for the dashboard
    queue: str = ""  # one of QUEUE_NAMES
    popped_at: float | None = None  # start of the in-flight lease


@runtime_checkable
class SchedulingQueue(Protocol):
    """The queue contract both backends pass (scheduler/test_queue_contract.py)."""

    def add(self, key: str, priority: int = 0) -> bool:
        """Queue a new pending pod in activeQ; a known key only gets its priority updated."""
        ...

    def update(self, key: str, priority: int = 0) -> str:
        """The pod changed (not just its status): returns the sub-queue it is in afterwards."""
        ...

    def delete(self, key: str) -> bool: ...

    def done(self, key: str) -> bool:
        """The pod was bound or dropped: forget it entirely."""
        ...

    def done_many(self, keys: list[str]) -> None:
        """done() for each key."""
        ...

    def add_many(self, entries: list[tuple[str, int]]) -> int:
        """add() for each (key, priority), in order; how many were new."""
        ...

    def pop(self, max_count: int = 1) -> list[QueuedPodInfo]: ...

    def scheduling_cycle(self) -> int: ...

    def move_request_cycle(self) -> int: ...

    def add_unschedulable_if_not_present(
        self, info: QueuedPodInfo, unschedulable: bool = True, message: str = ""
    ) -> str | None:
        """Put back a pod after a failed attempt; returns the sub-queue, or None if ignored."""
        ...

    def move_all_to_active_or_backoff(self, event: str) -> int: ...

    def move_to_active_or_backoff(self, keys: list[str], event: str) -> int:
        """Those of `keys` in the unschedulable pool go to activeQ or backoffQ (a queueing hint said
        `event` may make them schedulable); how many moved."""
        ...

    def unschedulable_with_message(self, texts: tuple[str, ...]) -> list[tuple[str, str]]:
        """(key, message) of the pods in the unschedulable pool whose last failure message contains one
        of `texts` (which plugins rejected them, for their queueing hints)."""
        ...

    def flush(self, now: float | None = None) -> int: ...

    def reclaim_expired(
        self, now: float | None = None, lease_seconds: float = DEFAULT_IN_FLIGHT_LEASE
    ) -> list[str]: ...

    def get(self, key: str) -> QueuedPodInfo | None: ...

    def keys(self) -> set[str]: ...

    def lengths(self) -> dict[str, int]: ...

    def entries(self, queue_name: str, limit: int = 100) -> list[QueuedPodInfo]: ...


def calculate_backoff_duration(attempts: int, initial: float, maximum: float) -> float:
    """As backoffQueue.calculateBackoffDuration: 0 before any attempt, then doubling up to max."""
    if attempts == 0:
        return 0.0
    duration = initial
    for _ in range(1, attempts):
        if duration > maximum - duration:
            return maximum
        duration += duration
    return duration


def active_sort_key(priority: int, timestamp: float, key: str) -> tuple[int, int, str]:
    """PrioritySort.Less as a sort key: priority desc, then timestamp asc (µs), then key.

    The key breaks ties that upstream's heap leaves arbitrary, so both backends agree.
    """
    return (-priority, math.floor(timestamp * 1e6 + 0.5), key)


def check_priority(priority: int) -> int:
    priority = int(priority)
    if not MIN_POD_PRIORITY <= priority <= MAX_POD_PRIORITY:
        raise ValueError(f"pod priority {priority} is outside int32")
    return priority


class MemoryQueue:
    """SchedulingQueue in one process; every method holds one lock, as PriorityQueue.lock."""

    def __init__(
        self,
        clock: Callable[[], float] = time.time,
        initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
        max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
        on_incoming: IncomingHook | None = None,
    ):
        self._clock = clock
        self._incoming = on_incoming or _ignore_incoming
        self.clock = clock  # the time base of every timestamp this queue hands out
        self.initial_backoff = float(initial_backoff)
        self.max_backoff = float(max_backoff)
        self.max_in_unschedulable = float(max_in_unschedulable)
        self._lock = threading.Lock()
        self._pods: dict[str, QueuedPodInfo] = {}
        # activeQ: a heap with lazy deletion; _active maps a key to its live sort key.
        self._active: dict[str, tuple] = {}
        self._heap: list[tuple] = []
        self._cycle = 0
        # As NewPriorityQueue: moveRequestCycle starts at -1.
        self._move_request_cycle = -1

    # -- helpers (lock held) -------------------------------------------------------------

    def _in(self, name: str) -> list[QueuedPodInfo]:
        return [p for p in self._pods.values() if p.queue == name]

    def _unlink(self, info: QueuedPodInfo) -> None:
        if info.queue == ACTIVE_Q:
            del self._active[info.key]  # the heap entry goes stale
        info.queue = ""

    def _to_active(self, info: QueuedPodInfo, now: float) -> None:
        # As moveToActiveQ: the initial attempt timestamp is set when the pod first enters activeQ.
        if info.initial_attempt_timestamp is None:
            info.initial_attempt_timestamp = now
        info.queue = ACTIVE_Q
        info.unschedulable_since = None
        sk = active_sort_key(info.priority, info.timestamp, info.key)
        self._active[info.key] = sk
        heapq.heappush(self._heap, sk)
        if len(self._heap) > 2 * len(self._active) + 64:
            self._heap = list(self._active.values())
            heapq.heapify(self._heap)

    def _to_backoff(self, info: QueuedPodInfo) -> None:
        if info.backoff_expiry is None:
            info.backoff_expiry = info.timestamp + calculate_backoff_duration(
                info.attempts, self.initial_backoff, self.max_backoff
            )
        info.queue = BACKOFF_Q
        info.unschedulable_since = None

    def _backing_off(self, info: QueuedPodInfo, now: float) -> bool:
        # As isPodBackingoff (without the PopFromBackoffQ ordering window): expiry after now.
        return info.backoff_expiry is not None and info.backoff_expiry > now

    def _move_to_active_or_backoff(self, infos: list[QueuedPodInfo], now: float, event: str) -> int:
        # As movePodsToActiveOrBackoffQueue with every event of interest (no queueing hints).
        backoff = 0
        for info in infos:
            self._unlink(info)
            if self._backing_off(info, now):
                self._to_backoff(info)
                backoff += 1
            else:
                self._to_active(info, now)
        self._move_request_cycle = self._cycle
        self._count(ACTIVE_Q, event, len(infos) - backoff)
        self._count(BACKOFF_Q, event, backoff)
        return len(infos)

    def _count(self, queue: str, event: str, count: int) -> None:
        if count:
            self._incoming(queue, event, count)

    def _new(self, key: str, priority: int, now: float) -> QueuedPodInfo:
        info = QueuedPodInfo(key=key, priority=priority, timestamp=now)
        self._pods[key] = info
        self._to_active(info, now)
        return info

    def _set_priority(self, info: QueuedPodInfo, priority: int, now: float) -> None:
        if info.priority == priority:
            return
        if info.queue == ACTIVE_Q:
            self._unlink(info)
            info.priority = priority
            self._to_active(info, now)
        else:
            info.priority = priority

    # -- the contract --------------------------------------------------------------------

    def add(self, key: str, priority: int = 0) -> bool:
        priority = check_priority(priority)
        with self._lock:
            now = self._clock()
            info = self._pods.get(key)
            if info is not None:
                self._set_priority(info, priority, now)
                return False
            self._new(key, priority, now)
            self._count(ACTIVE_Q, EVENT_UNSCHEDULED_POD_ADD, 1)
            return True

    def update(self, key: str, priority: int = 0) -> str:
        priority = check_priority(priority)
        with self._lock:
            now = self._clock()
            info = self._pods.get(key)
            if info is None:
                # As Update: a pod in no queue is put in activeQ.
                self._new(key, priority, now)
                self._count(ACTIVE_Q, EVENT_UNSCHEDULED_POD_ADD, 1)
                return ACTIVE_Q
            self._set_priority(info, priority, now)
            if info.queue == UNSCHEDULABLE_Q:
                # As Update for an updated pod in unschedulablePods: backoffQ if still backing
                # off, else activeQ. Not a move request: moveRequestCycle is unchanged.
                self._unlink(info)
                if self._backing_off(info, now):
                    self._to_backoff(info)
                else:
                    self._to_active(info, now)
                self._count(info.queue, EVENT_UNSCHEDULED_POD_UPDATE, 1)
            return info.queue

    def delete(self, key: str) -> bool:
        with self._lock:
            info = self._pods.pop(key, None)
            if info is None:
                return False
            self._unlink(info)
            return True

    def done(self, key: str) -> bool:
        return self.delete(key)

    def done_many(self, keys: list[str]) -> None:
        for key in keys:
            self.delete(key)

    def add_many(self, entries: list[tuple[str, int]]) -> int:
        return sum(self.add(key, priority) for key, priority in entries)

    def pop(self, max_count: int = 1) -> list[QueuedPodInfo]:
        out = []
        with self._lock:
            now = self._clock()
            while len(out) < max_count and self._heap:
                sk = heapq.heappop(self._heap)
                key = sk[2]
                if self._active.get(key) != sk:
                    continue  # stale entry
                del self._active[key]
                info = self._pods[key]
                # As activeQueue.unlockedPop: Attempts++ and schedCycle++ per popped pod.
                info.attempts += 1
                self._cycle += 1
                info.cycle = self._cycle
                info.backoff_expiry = None  # recomputed from the new attempts when put back
                info.queue = IN_FLIGHT
                info.popped_at = now
                out.append(replace(info))
        return out

    def scheduling_cycle(self) -> int:
        with self._lock:
            return self._cycle

    def move_request_cycle(self) -> int:
        with self._lock:
            return self._move_request_cycle

    def add_unschedulable_if_not_present(
        self, info: QueuedPodInfo, unschedulable: bool = True, message: str = ""
    ) -> str | None:
        with self._lock:
            now = self._clock()
            stored = self._pods.get(info.key)
            # Upstream refuses a pod already in a queue; we also drop one that was deleted,
            # done, or reclaimed and popped again since (its cycle fences stale workers).
            if stored is None or stored.queue != IN_FLIGHT or stored.cycle != info.cycle:
                return None
            stored.queue = ""
            stored.popped_at = None
            stored.message = message
            # As AddUnschedulableIfNotPresent: refresh the timestamp, drop the cached expiry.
            stored.timestamp = now
            stored.backoff_expiry = None
            if not unschedulable or self._move_request_cycle >= stored.cycle:
                # As addUnschedulableWithoutQueueingHint: an error, or a move request since
                # this pod's cycle started, sends it to backoffQ (never straight to activeQ).
                self._to_backoff(stored)
            else:
                stored.backoff_expiry = stored.timestamp + calculate_backoff_duration(
                    stored.attempts, self.initial_backoff, self.max_backoff
                )
                stored.queue = UNSCHEDULABLE_Q
                stored.unschedulable_since = now
            self._count(stored.queue, SCHEDULE_ATTEMPT_FAILURE, 1)
            return stored.queue

    def move_all_to_active_or_backoff(self, event: str) -> int:
        with self._lock:
            now = self._clock()
            pods = sorted(self._in(UNSCHEDULABLE_Q), key=lambda p: (p.unschedulable_since, p.key))
            return self._move_to_active_or_backoff(pods, now, event)

    def move_to_active_or_backoff(self, keys: list[str], event: str) -> int:
        with self._lock:
            pods = [p for p in (self._pods.get(k) for k in set(keys)) if p is not None and p.queue == UNSCHEDULABLE_Q]
            if not pods:
                return 0
            pods.sort(key=lambda p: (p.unschedulable_since, p.key))
            return self._move_to_active_or_backoff(pods, self._clock(), event)

    def unschedulable_with_message(self, texts: tuple[str, ...]) -> list[tuple[str, str]]:
        with self._lock:
            return [(p.key, p.message) for p in self._in(UNSCHEDULABLE_Q) if any(t in p.message for t in texts)]

    def flush(self, now: float | None = None) -> int:
        with self._lock:
            now = self._clock() if now is None else now
            # As flushBackoffQCompleted: pods whose backoff expired go to activeQ.
            done = [p for p in self._in(BACKOFF_Q) if not self._backing_off(p, now)]
            for info in done:
                self._unlink(info)
                self._to_active(info, now)
            self._count(ACTIVE_Q, BACKOFF_COMPLETE, len(done))
            # As flushUnschedulablePodsLeftover: longer than the maximum in the pool.
            cutoff = now - self.max_in_unschedulable
            left = [p for p in self._in(UNSCHEDULABLE_Q) if p.timestamp < cutoff]
            moved = 0
            if left:
                left.sort(key=lambda p: (p.timestamp, p.key))
                moved = self._move_to_active_or_backoff(left, now, EVENT_UNSCHEDULABLE_TIMEOUT)
            return len(done) + moved

    def reclaim_expired(
        self, now: float | None = None, lease_seconds: float = DEFAULT_IN_FLIGHT_LEASE
    ) -> list[str]:
        with self._lock:
            now = self._clock() if now is None else now
            cutoff = now - lease_seconds
            dead = sorted(
                (p for p in self._in(IN_FLIGHT) if p.popped_at < cutoff),
                key=lambda p: (p.popped_at, p.key),
            )
            for info in dead:
                info.queue = ""
                info.popped_at = None
                self._to_active(info, now)
            return [p.key for p in dead]

    def get(self, key: str) -> QueuedPodInfo | None:
        with self._lock:
            info = self._pods.get(key)
            return None if info is None else replace(info)

    def keys(self) -> set[str]:
        with self._lock:
            return set(self._pods)

    def lengths(self) -> dict[str, int]:
        with self._lock:
            counts = dict.fromkeys(QUEUE_NAMES, 0)
            for info in self._pods.values():
                counts[info.queue] += 1
            return counts

    def entries(self, queue_name: str, limit: int = 100) -> list[QueuedPodInfo]:
        if queue_name not in QUEUE_NAMES:
            raise ValueError(f"unknown queue {queue_name!r}")
        with self._lock:
            pods = self._in(queue_name)
            if queue_name == ACTIVE_Q:
                pods.sort(key=lambda p: self._active[p.key])
            elif queue_name == BACKOFF_Q:
                pods.sort(key=lambda p: (p.backoff_expiry, p.key))
            elif queue_name == UNSCHEDULABLE_Q:
                pods.sort(key=lambda p: (p.unschedulable_since, p.key))
            else:
                pods.sort(key=lambda p: (p.popped_at, p.key))
            return [replace(p) for p in pods[: max(limit, 0)]]
