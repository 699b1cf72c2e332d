"""The scheduling queue: activeQ, backoffQ and the unschedulable pod pool, plus in-flight pods.

Shaped like kube-scheduler's PriorityQueue (pkg/scheduler/backend/queue/scheduling_queue.go,
backoff_queue.go, active_queue.go) without queueing hints: a failed pod goes to the
unschedulable pool unless a move request (cluster event) arrived since it was popped
(moveRequestCycle, as addUnschedulableWithoutQueueingHint). With SchedulerPopFromBackoffQ (on by
default, as upstream) backoff expiries are aligned to 1 s ordering windows, backoffQ is ordered by
window then as activeQ, and pop() takes backoffQ's head when activeQ is empty (never a pod whose
attempt ended in an error: those wait in upstream's podErrorBackoffQ until their backoff ends). `SchedulingQueue` is the contract;
`MemoryQueue` keeps it in process, `scheduler.queue.redis_queue.RedisQueue` keeps it in Redis for
many worker processes. Extra to upstream, for workers that may die: popped pods stay *in
flight* with a lease until done(), add_unschedulable_if_not_present() or reclaim_expired().

Also ours: each pod's *timeline*, the queue moves it made (when, which sub-queue, which event), capped and
kept for a while after the pod leaves the queue (timeline()), for the pod page.
"""

from __future__ import annotations

import heapq
import math
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, replace
from typing import Callable, Protocol, runtime_checkable

# As scheduling_queue.go (DefaultPodInitialBackoffDuration, DefaultPodMaxBackoffDuration,
# DefaultPodMaxInUnschedulablePodsDuration), in seconds.
DEFAULT_POD_INITIAL_BACKOFF = 1.0
DEFAULT_POD_MAX_BACKOFF = 10.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION = 300.0

# Ours: how long a popped pod may stay in flight before reclaim_expired() gives it back.
DEFAULT_IN_FLIGHT_LEASE = 60.0

# As backoffQOrderingWindowDuration (backoff_queue.go): with SchedulerPopFromBackoffQ, backoff expiries are
# truncated to whole windows of this many seconds, and pods of one window are ordered as activeQ orders them.
BACKOFF_ORDERING_WINDOW = 1.0

# Ours: a pod's queue timeline keeps its last TIMELINE_MAX_ENTRIES moves, for TIMELINE_TTL seconds after the
# last one (so it is still there on the pod page after binding); 0 keeps none.
DEFAULT_TIMELINE_TTL = 900.0
TIMELINE_MAX_ENTRIES = 64
# The in-memory queue keeps the timelines of this many pods at most (the oldest dropped first).
MEMORY_TIMELINE_PODS = 20_000

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
# As framework.PopFromBackoffQ: a pod popped from backoffQ while activeQ was empty (counted as entering activeQ).
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
# Timeline-only labels (ours, not upstream's event labels): an ordinary pop from activeQ, a lease that
# expired (reclaim_expired) and the pod leaving the queue (done: bound or dropped; delete: deleted).
TIMELINE_POPPED = "Popped"
TIMELINE_LEASE_EXPIRED = "LeaseExpired"
TIMELINE_DONE = "Done"
TIMELINE_DELETED = "Deleted"
# A move a queueing hint asked for (move_to_active_or_backoff), as TimelineEntry.via says.
VIA_HINT = "QueueingHint"
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
    # As QueueingParams.UnschedulableCount / ConsecutiveErrorsCount: failed attempts that plugins rejected,
    # and attempts in a row that ended in an error. The backoff doubles with the errors while there are
    # some, else with the rejections; a pod whose last attempt was an error waits in podErrorBackoffQ.
    unschedulable_count: int = 0
    consecutive_errors: int = 0


@dataclass(frozen=True)
class TimelineEntry:
    """One move of a pod in the queue: when, the sub-queue it entered ("" when it left the queue), and the
    event label that moved it; `via` is VIA_HINT when a queueing hint asked for the move."""

    at: float
    queue: str
    event: str
    via: str = ""


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

    def pop(self, max_count: int = 1) -> list[QueuedPodInfo]:
        """Up to max_count pods, activeQ's head first; with SchedulerPopFromBackoffQ, backoffQ's head while
        activeQ is empty (as activeQueue.unlockedPop, once per pod)."""
        ...

    def ready(self) -> int:
        """How many pods pop() would hand out now (activeQ, and backoffQ's rejected pods when it may pop
        them): a worker that found the queue empty asks this before it goes idle."""
        ...

    def timeline(self, key: str) -> list[TimelineEntry]:
        """The pod's queue moves, oldest first (the last TIMELINE_MAX_ENTRIES, kept TIMELINE_TTL seconds
        after the last one, also after the pod left the queue)."""
        ...

    def scheduling_cycle(self) -> int: ...

    def move_request_cycle(self) -> int: ...

    def add_unschedulable_if_not_present(
        self, info: QueuedPodInfo, unschedulable: bool = True, message: str = "", error: bool | None = None
    ) -> str | None:
        """Put back a pod after a failed attempt; returns the sub-queue, or None if ignored.

        unschedulable=False sends it to backoffQ rather than the pool. `error` says the attempt ended in an
        error, not a plugin's rejection (upstream: no unschedulable plugins); it defaults to `not
        unschedulable`. A rejected pod sent to backoffQ (an event while in flight may help it) passes
        unschedulable=False, error=False."""
        ...

    def move_all_to_active_or_backoff(self, event: str) -> int: ...

    def move_to_active_or_backoff(self, keys: list[str], event: str) -> int:
        """Those of `keys` in the unschedulable pool go to activeQ or backoffQ (a queueing hint said
        `event` may make them schedulable); how many moved."""
        ...

    def count_incoming(self, queue: str, event: str, count: int) -> None:
        """Count pods as entering `queue` under `event` without moving them (a pod a queueing hint left in the
        unschedulable pool on its own update: requeuePodViaQueueingHint's QueueSkip counts it there)."""
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

    def claim_period(self, name: str, seconds: float) -> bool:
        """True for the first caller in each `seconds` of wall time named `name`, across every process
        sharing this queue; a queue that was lost (Redis restarted, a new in-memory queue) knows no period,
        so its first caller gets True at once (the reconciler's full scan for pods the queue lost)."""
        ...

    def lengths(self) -> dict[str, int]: ...

    def entries(self, queue_name: str, limit: int = 100) -> list[QueuedPodInfo]: ...


def calculate_backoff_duration(count: int, initial: float, maximum: float) -> float:
    """As backoffQueue.calculateBackoffDuration: 0 before any failure, then doubling up to max."""
    if count == 0:
        return 0.0
    duration = initial
    for _ in range(1, count):
        if duration > maximum - duration:
            return maximum
        duration += duration
    return duration


def backoff_count(info: QueuedPodInfo) -> int:
    """As getBackoffTime: the consecutive errors while there are some, else the rejections."""
    return info.consecutive_errors if info.consecutive_errors > 0 else info.unschedulable_count


def backoff_release_time(expiry: float, pop_from_backoff: bool) -> float:
    """The first instant a pod whose backoff expires at `expiry` no longer backs off: the next window's start
    with SchedulerPopFromBackoffQ (expiries are window starts), else just after it (not before now)."""
    return expiry + BACKOFF_ORDERING_WINDOW if pop_from_backoff else math.nextafter(expiry, math.inf)


def align_to_window(t: float, pop_from_backoff: bool) -> float:
    """As alignToWindow: truncated to the ordering window with SchedulerPopFromBackoffQ, else as is."""
    return math.floor(t / BACKOFF_ORDERING_WINDOW) * BACKOFF_ORDERING_WINDOW if pop_from_backoff else t


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
        pop_from_backoff: bool = True,
        timeline_ttl: float = DEFAULT_TIMELINE_TTL,
    ):
        self._clock = clock
        self._incoming = on_incoming or _ignore_incoming
        self.clock = clock  # the time base of every timestamp this queue hands out
        self.initial_backoff = float(initial_backoff)
        self.max_backoff = float(max_backoff)
        self.max_in_unschedulable = float(max_in_unschedulable)
        self.pop_from_backoff = bool(pop_from_backoff)  # the SchedulerPopFromBackoffQ feature gate
        self.timeline_ttl = float(timeline_ttl)
        self._lock = threading.Lock()
        self._periods: dict[str, float] = {}  # claim_period: each name's period end (time.monotonic)
        self._pods: dict[str, QueuedPodInfo] = {}
        # activeQ: a heap with lazy deletion; _active maps a key to its live sort key.
        self._active: dict[str, tuple] = {}
        self._heap: list[tuple] = []
        self._cycle = 0
        # As NewPriorityQueue: moveRequestCycle starts at -1.
        self._move_request_cycle = -1
        # key -> (time of the last move, its moves), least recently moved first.
        self._timelines: OrderedDict[str, tuple[float, deque]] = OrderedDict()
        # The replay's pods held back until the instant the live loop tried them again (hold_until()).
        self._held: dict[str, float] = {}

    # -- helpers (lock held) -------------------------------------------------------------

    def _in(self, name: str) -> list[QueuedPodInfo]:
        return [p for p in self._pods.values() if p.queue == name]

    def _note(self, key: str, queue: str, event: str, now: float, via: str = "") -> None:
        if self.timeline_ttl <= 0:
            return
        held = self._timelines.pop(key, None)
        moves = held[1] if held is not None else deque(maxlen=TIMELINE_MAX_ENTRIES)
        moves.append(TimelineEntry(now, queue, event, via))
        self._timelines[key] = (now, moves)
        cutoff = now - self.timeline_ttl
        while self._timelines:
            oldest_key, (last, _) = next(iter(self._timelines.items()))
            if last >= cutoff and len(self._timelines) <= MEMORY_TIMELINE_PODS:
                break
            del self._timelines[oldest_key]

    def _unlink(self, info: QueuedPodInfo) -> None:
        if info.queue == ACTIVE_Q:
            del self._active[info.key]  # the heap entry goes stale
        info.queue = ""

    def _to_active(self, info: QueuedPodInfo, now: float, event: str, via: str = "") -> None:
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
        self._note(info.key, ACTIVE_Q, event, now, via)

    def _expiry(self, info: QueuedPodInfo) -> float | None:
        # As getBackoffTime: none without a failure (or with backoff off: podMaxBackoff 0), else the put-back
        # time plus the backoff, aligned to its window, cached until the pod is put back again.
        if self.max_backoff == 0 or backoff_count(info) == 0:
            return None
        if info.backoff_expiry is None:
            duration = calculate_backoff_duration(backoff_count(info), self.initial_backoff, self.max_backoff)
            info.backoff_expiry = align_to_window(info.timestamp + duration, self.pop_from_backoff)
        return info.backoff_expiry

    def _to_backoff(self, info: QueuedPodInfo, now: float, event: str, via: str = "") -> None:
        self._expiry(info)
        info.queue = BACKOFF_Q
        info.unschedulable_since = None
        self._note(info.key, BACKOFF_Q, event, now, via)

    def _backing_off(self, info: QueuedPodInfo, now: float) -> bool:
        held = self._held.get(info.key)
        if held is not None:
            return held > now
        # As isPodBackingoff: the expiry is not before now's window (a pod in the current window still waits).
        expiry = self._expiry(info)
        return expiry is not None and expiry >= align_to_window(now, self.pop_from_backoff)

    def _backoff_sort_key(self, info: QueuedPodInfo) -> tuple:
        # podBackoffQ with SchedulerPopFromBackoffQ: window, then as activeQ (the key breaks ties, as there);
        # podErrorBackoffQ (and podBackoffQ without the gate) by expiry alone: the key breaks ties.
        expiry = self._expiry(info)
        expiry = -math.inf if expiry is None else expiry
        if info.consecutive_errors > 0 or not self.pop_from_backoff:
            return (expiry, 0, 0, info.key)
        return (expiry, *active_sort_key(info.priority, info.timestamp, info.key))

    def _sorted_backoff(self, errors: bool) -> list[QueuedPodInfo]:
        pods = [p for p in self._in(BACKOFF_Q) if (p.consecutive_errors > 0) == errors]
        pods.sort(key=self._backoff_sort_key)
        return pods

    def _move_to_active_or_backoff(self, infos: list[QueuedPodInfo], now: float, event: str, via: str = "") -> int:
        # As movePodsToActiveOrBackoffQueue with every event of interest (no queueing hints).
        backoff = 0
        for info in infos:
            self._unlink(info)
            if self._backing_off(info, now):
                self._to_backoff(info, now, event, via)
                backoff += 1
            else:
                self._to_active(info, now, event, via)
        self._move_request_cycle = self._cycle
        self._count(ACTIVE_Q, event, len(infos) - backoff)
        self._count(BACKOFF_Q, event, backoff)
        return len(infos)

    def _count(self, queue: str, event: str, count: int) -> None:
        if count:
            self._incoming(queue, event, count)

    def count_incoming(self, queue: str, event: str, count: int) -> None:
        self._count(queue, event, count)

    def _new(self, key: str, priority: int, now: float) -> QueuedPodInfo:
        info = QueuedPodInfo(key=key, priority=priority, timestamp=now)
        self._pods[key] = info
        self._to_active(info, now, EVENT_UNSCHEDULED_POD_ADD)
        return info

    def _set_priority(self, info: QueuedPodInfo, priority: int, now: float) -> None:
        if info.priority == priority:
            return
        if info.queue == ACTIVE_Q:
            # Re-sorted in place: no move, nothing on the timeline.
            del self._active[info.key]
            info.priority = priority
            sk = active_sort_key(info.priority, info.timestamp, info.key)
            self._active[info.key] = sk
            heapq.heappush(self._heap, sk)
        else:
            info.priority = priority  # backoffQ is sorted when read

    def _pop_order(self):
        """The pods pop() hands out, in order: activeQ's, then (as unlockedPop once activeQ is empty, with
        SchedulerPopFromBackoffQ) podBackoffQ's head whether it is still backing off or not; never the errors'."""
        while self._heap:
            sk = heapq.heappop(self._heap)
            key = sk[2]
            if self._active.get(key) != sk:
                continue  # stale entry
            del self._active[key]
            yield self._pods[key], False
        if self.pop_from_backoff:
            for info in self._sorted_backoff(errors=False):
                if info.key not in self._held:
                    yield info, True

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
                    self._to_backoff(info, now, EVENT_UNSCHEDULED_POD_UPDATE)
                else:
                    self._to_active(info, now, EVENT_UNSCHEDULED_POD_UPDATE)
                self._count(info.queue, EVENT_UNSCHEDULED_POD_UPDATE, 1)
            return info.queue

    def _remove(self, key: str, why: str) -> bool:
        with self._lock:
            info = self._pods.pop(key, None)
            if info is None:
                # A deletion of a pod out of the queue (bound, gated) still closes its timeline: a new pod of
                # that name starts after this mark.
                if why == TIMELINE_DELETED and key in self._timelines:
                    self._note(key, "", why, self._clock())
                return False
            self._unlink(info)
            self._held.pop(key, None)
            self._note(key, "", why, self._clock())
            return True

    def delete(self, key: str) -> bool:
        return self._remove(key, TIMELINE_DELETED)

    def done(self, key: str) -> bool:
        return self._remove(key, TIMELINE_DONE)

    def done_many(self, keys: list[str]) -> None:
        for key in keys:
            self.done(key)

    def add_many(self, entries: list[tuple[str, int]]) -> int:
        return sum(self.add(key, priority) for key, priority in entries)

    def pop(self, max_count: int = 1) -> list[QueuedPodInfo]:
        out = []
        from_backoff = 0
        with self._lock:
            now = self._clock()
            order = self._pop_order()
            while len(out) < max_count:
                head = next(order, None)
                if head is None:
                    break
                info, backoff = head
                from_backoff += backoff
                self._held.pop(info.key, None)
                # As unlockedMoveEntityToInFlight: Attempts++ and schedCycle++ per popped pod. Its timestamp and
                # initial attempt timestamp stay; the backoff is computed afresh when it is put back.
                info.attempts += 1
                self._cycle += 1
                info.cycle = self._cycle
                info.backoff_expiry = None
                info.queue = IN_FLIGHT
                info.popped_at = now
                self._note(info.key, IN_FLIGHT, POP_FROM_BACKOFF_Q if backoff else TIMELINE_POPPED, now)
                out.append(replace(info))
            # As unlockedPop: a pod taken from backoffQ counts as entering activeQ with PopFromBackoffQ.
            self._count(ACTIVE_Q, POP_FROM_BACKOFF_Q, from_backoff)
        return out

    def ready(self) -> int:
        with self._lock:
            waiting = len(self._active)
            if self.pop_from_backoff:
                waiting += sum(1 for p in self._pods.values()
                               if p.queue == BACKOFF_Q and p.consecutive_errors == 0 and p.key not in self._held)
            return waiting

    def hold_until(self, key: str, until: float) -> None:
        """The replay's (not a SchedulingQueue method): the pod, once put back, stays out of activeQ until
        `until` (the instant the live loop tried it again), neither flushed nor popped from backoffQ before."""
        with self._lock:
            if key in self._pods:
                self._held[key] = until

    def next_backoff_release(self) -> float | None:
        """The replay's: the first instant a pod now in backoffQ stops backing off (a held one at its hold's end;
        one without a backoff at once), None with backoffQ empty."""
        with self._lock:
            times = []
            for info in self._in(BACKOFF_Q):
                held = self._held.get(info.key)
                expiry = self._expiry(info)
                if held is not None:
                    times.append(held)
                elif expiry is None:
                    times.append(-math.inf)
                else:
                    times.append(backoff_release_time(expiry, self.pop_from_backoff))
            return min(times, default=None)

    def scheduling_cycle(self) -> int:
        with self._lock:
            return self._cycle

    def move_request_cycle(self) -> int:
        with self._lock:
            return self._move_request_cycle

    def add_unschedulable_if_not_present(
        self, info: QueuedPodInfo, unschedulable: bool = True, message: str = "", error: bool | None = None
    ) -> str | None:
        error = (not unschedulable) if error is None else bool(error)
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
            # As AddUnschedulableIfNotPresent: count the error or the rejection (a rejection ends a run of
            # errors), refresh the timestamp, drop the cached expiry.
            if error:
                stored.consecutive_errors += 1
            else:
                stored.unschedulable_count += 1
                stored.consecutive_errors = 0
            stored.timestamp = now
            stored.backoff_expiry = None
            if not unschedulable or error or self._move_request_cycle >= stored.cycle:
                # As addUnschedulableWithoutQueueingHint: an error, or a move request since
                # this pod's cycle started, sends it to backoffQ (never straight to activeQ).
                self._to_backoff(stored, now, SCHEDULE_ATTEMPT_FAILURE)
            else:
                self._expiry(stored)
                stored.queue = UNSCHEDULABLE_Q
                stored.unschedulable_since = now
                self._note(stored.key, UNSCHEDULABLE_Q, SCHEDULE_ATTEMPT_FAILURE, now)
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
            return self._move_to_active_or_backoff(pods, self._clock(), event, VIA_HINT)

    def unschedulable_with_message(self, texts: tuple[str, ...]) -> list[tuple[str, str]]:
        with self._lock:
            return [(p.key, p.message) for p in self._in(UNSCHEDULABLE_Q) if any(t in p.message for t in texts)]

    def flush(self, now: float | None = None) -> int:
        with self._lock:
            now = self._clock() if now is None else now
            # As flushBackoffQCompleted (popAllBackoffCompleted): podBackoffQ's then podErrorBackoffQ's pods
            # whose backoff ended go to activeQ.
            done = [p for p in self._sorted_backoff(errors=False) + self._sorted_backoff(errors=True)
                    if not self._backing_off(p, now)]
            for info in done:
                self._unlink(info)
                self._held.pop(info.key, None)
                self._to_active(info, now, BACKOFF_COMPLETE)
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
                self._to_active(info, now, TIMELINE_LEASE_EXPIRED)
            return [p.key for p in dead]

    def get(self, key: str) -> QueuedPodInfo | None:
        with self._lock:
            info = self._pods.get(key)
            return None if info is None else replace(info)

    def timeline(self, key: str) -> list[TimelineEntry]:
        with self._lock:
            held = self._timelines.get(key)
            if held is None or held[0] < self._clock() - self.timeline_ttl:
                return []
            return list(held[1])

    def keys(self) -> set[str]:
        with self._lock:
            return set(self._pods)

    def claim_period(self, name: str, seconds: float) -> bool:
        now = time.monotonic()
        with self._lock:
            if self._periods.get(name, now) > now:
                return False
            self._periods[name] = now + seconds
            return True

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
            if queue_name == ACTIVE_Q:
                pods = self._in(queue_name)
                pods.sort(key=lambda p: self._active[p.key])
            elif queue_name == BACKOFF_Q:
                # podBackoffQ in its order (the one pop() takes from), then podErrorBackoffQ.
                pods = self._sorted_backoff(errors=False) + self._sorted_backoff(errors=True)
            elif queue_name == UNSCHEDULABLE_Q:
                pods = self._in(queue_name)
                pods.sort(key=lambda p: (p.unschedulable_since, p.key))
            else:
                pods = self._in(queue_name)
                pods.sort(key=lambda p: (p.popped_at, p.key))
            return [replace(p) for p in pods[: max(limit, 0)]]
