"""QueueingHints on the live queue (scheduler/engine/queueing_hints.py decides): a cluster event moves
exactly the pods waiting in the unschedulable pool that a rejecting plugin's hint queues for it.

- AssignedPodAdd / AssignedPodUpdate (move_after_assigned): the pods whose last failure names
  InterPodAffinity's or PodTopologySpread's reasons are asked those plugins' hints.
- AssignedPodDelete, NodeAdd and the node updates (move_after_events, and move_after_recorded for the
  reconciler's replay of recorded ClusterEvents): every pod in the pool, by its rejecting plugins.
- NodeDelete (move_after_node_deleted): the pods PodTopologySpread rejected, by its hint.
- A pending pod's own update (move_after_own_updates): one waiting in the pool is asked its rejecting
  plugins' Pod/Update hints and moves only if one says Queue; else it stays (the row holds its new spec).

The rejecting plugins are read from the failure message the queue keeps, so an event costs one queue call
to read the pool (with the messages), and one Pod query for the specs of the pods some hint must read.

In flight: a pod popped before an event and failing after it must not miss it. Upstream's in-flight events
check, with the hint taken as Queue: each event's label is noted with the scheduling cycle it was told at
(note_events), and a pod popped at or before that cycle whose rejecting plugins register the label (or
with no known rejector) goes to backoffQ, not the pool (events_while_in_flight); an event noted between
that check and the pod's arrival in the pool moves it after (move_missed_while_in_flight). The queue's own
move-request cycle (set by any move that moved a pod) still sends every pod in flight then to backoffQ.
Pods bound while one was in flight are checked with the hints themselves (bound_while_in_flight). A pod's
own update while it is in flight is noted for that pod and attempt alone (addEventsIfPodInFlight), checked
the same way when it comes back.
"""

from __future__ import annotations

import dataclasses
import logging
import weakref
from datetime import datetime, timedelta, timezone as dt_timezone
from typing import Callable

from ..engine.nodes import NodeSpec
from ..engine.pods import PodSpec
from ..engine.queue import (EVENT_ASSIGNED_POD_DELETE, EVENT_NODE_ADD, EVENT_NODE_UPDATE, EVENT_UNSCHEDULED_POD_UPDATE,
                            IN_FLIGHT, UNSCHEDULABLE_Q)
from ..engine.queueing_hints import (AFFINITY_REASONS, EVENT_NODE_DELETE, NODE_UPDATE_EVENTS, SPREAD_REASONS, Event,
                                     NodeChange, NodeDeleted, PodChange, PodDelete, UnknownObject, assigned,
                                     keys_to_move, needs_spec, node_added, node_update_events, node_update_unknown_old,
                                     own_update_moves, pod_update_events, registers, rejected_by)
from ..manifests.objects import node_from_manifest, pod_from_manifest
from ..models import Binding, DeletedPod, Node, Pod

__all__ = ["NodeChange", "PodChange", "PodDelete", "assigned", "asks_hints", "assigned_from_row", "bound_while_in_flight",
           "deleted_pod", "events_while_in_flight", "keys_to_move", "move_after_assigned", "move_after_events",
           "move_after_node_deleted", "move_after_own_updates", "move_after_recorded", "move_missed_while_in_flight",
           "node_changes", "note_events"]

# Clocks of the processes differ a little: a binding this much before a pod was popped still counts.
_CLOCK_MARGIN_SECONDS = 1.0
# A deletion is recorded (DeletedPod, by a trigger) in the transaction that records its ClusterEvent.
_RECORDED_MARGIN_SECONDS = 60.0

log = logging.getLogger(__name__)


def assigned_from_row(pod: Pod, node: str) -> PodSpec:
    labels = ((pod.manifest or {}).get("metadata") or {}).get("labels")
    return assigned(pod.namespace, pod.name, pod.uid, node, labels)


# Parsed specs of waiting pods by (uid, updated_at), as the worker keeps them: a pod that waits is asked
# again at every binding batch, and parsing its manifest each time would cost more than the hints.
_SPECS: dict[tuple, PodSpec] = {}
_SPECS_MAX = 10_000


def _waiting_specs(keys: list[str]) -> dict[str, PodSpec]:
    """The pending pods' specs, one query."""
    pairs = [k.split("/", 1) for k in keys]
    wanted = set(keys)
    out = {}
    rows = Pod.objects.filter(name__in={n for _, n in pairs}, namespace__in={ns for ns, _ in pairs},
                              node_name="").values_list("namespace", "name", "uid", "updated_at", "manifest")
    for ns, name, uid, updated_at, manifest in rows:
        key = f"{ns}/{name}"
        if key not in wanted:
            continue
        spec = _SPECS.get((uid, updated_at))
        if spec is None:
            try:
                spec = pod_from_manifest(manifest)
            except Exception:  # a row that no longer parses: left to the timeout, as any other
                log.warning("queueing hints: cannot read pod %s", key, exc_info=True)
                continue
            if len(_SPECS) >= _SPECS_MAX:
                _SPECS.clear()
            _SPECS[(uid, updated_at)] = spec
        out[key] = spec
    return out


def move_after_assigned(queue, changes: list[PodChange]) -> int:
    """Ask the hints about these assigned pods' changes; move the pods they queue. How many moved."""
    if not changes:
        return 0
    waiting = queue.unschedulable_with_message(AFFINITY_REASONS + SPREAD_REASONS)
    if not waiting:
        return 0
    specs = _waiting_specs([k for k, _ in waiting])
    moved = 0
    for event, keys in keys_to_move(waiting, specs, changes).items():
        moved += queue.move_to_active_or_backoff(keys, event)
    return moved


def asks_hints(message: str) -> bool:
    """Whether a failure message names a plugin with assigned-pod hints (InterPodAffinity, PodTopologySpread)."""
    return any(r in message for r in AFFINITY_REASONS + SPREAD_REASONS)


def bound_while_in_flight(failures: list[tuple[str, float | None, PodSpec, str]]) -> set[str]:
    """Of the pods failing as unschedulable (key, popped_at, spec, message), those a pod our binder bound
    while they were in flight may help, by the same hints: as upstream's in-flight events, checked when a
    pod comes back (AddUnschedulableIfNotPresent), which sends it to backoffQ rather than the pool. A
    binding's own hint move ran before the pod was back in the pool and could not see it. One Binding query
    (indexed by time) per batch that has such failures; none otherwise."""
    asking = [f for f in failures if f[1] is not None and asks_hints(f[3])]
    if not asking:
        return set()
    since = datetime.fromtimestamp(min(f[1] for f in asking) - _CLOCK_MARGIN_SECONDS, tz=dt_timezone.utc)
    rows = (Binding.objects.filter(bound_at__gte=since, pod__isnull=False)
            .values_list("namespace", "pod_name", "pod_uid", "node_name", "bound_at", "pod__manifest"))
    bound = [(at.timestamp(), PodChange(assigned(ns, name, uid, node, ((manifest or {}).get("metadata") or {}).get("labels"))))
             for ns, name, uid, node, at, manifest in rows]
    out: set[str] = set()
    for key, popped_at, spec, message in asking:
        changes = [c for at, c in bound if at >= popped_at - _CLOCK_MARGIN_SECONDS]
        if changes and keys_to_move([(key, message)], {key: spec}, changes):
            out.add(key)
    return out


# ---- a pending pod's own update ------------------------------------------------------------------------

def _scheduling_view(manifest: dict | None) -> dict:
    """As isPodUpdated strips it: the pod without its status, resourceVersion, generation, managedFields and
    finalizers (our own PodScheduled condition, written after each failure, is not an update of the pod)."""
    manifest = manifest if isinstance(manifest, dict) else {}
    meta = {k: v for k, v in (manifest.get("metadata") or {}).items()
            if k not in ("resourceVersion", "generation", "managedFields", "finalizers")}
    return {**{k: v for k, v in manifest.items() if k not in ("status", "metadata")}, "metadata": meta}


def _own_update_events(key: str, old_manifest: dict | None, new_manifest: dict) -> list:
    """The update's events (PodSchedulingPropertiesChange); None when a manifest cannot be read."""
    try:
        return pod_update_events(pod_from_manifest(old_manifest or {}), pod_from_manifest(new_manifest))
    except Exception:  # noqa: BLE001 - unreadable: as a hint that cannot decide, Queue
        log.warning("queueing hints: cannot read the update of pod %s", key, exc_info=True)
        return None


def move_after_own_updates(queue, updates: list[tuple[str, dict | None, dict]]) -> int:
    """Pending pods updated (key, old manifest, new manifest), told to the queue after their priority was (add):
    as PriorityQueue.Update with SchedulerQueueingHints, one waiting in the unschedulable pool moves to
    activeQ or backoffQ under the first of its update's events (PodSchedulingPropertiesChange) that a
    rejecting plugin's hint queues it for, and otherwise stays; each event asked before counts as the pod
    entering the pool again (scheduler_queue_incoming_pods_total, as requeuePodViaQueueingHint's QueueSkip).
    One in flight has the update's labels noted for its attempt (addEventsIfPodInFlight): if that attempt
    fails as unschedulable and a rejecting plugin registers one, it goes to backoffQ, not the pool. One in
    activeQ or backoffQ is left there (its row holds the new spec the next attempt reads). One queue read per
    pod whose spec changed; how many moved."""
    moved = 0
    for key, old_manifest, new_manifest in updates:
        if _scheduling_view(old_manifest) == _scheduling_view(new_manifest):
            continue
        info = queue.get(key)
        if info is not None and info.queue == IN_FLIGHT:
            changes = _own_update_events(key, old_manifest, new_manifest)
            _note_own_update(queue, key, info.cycle, [c.event for c in changes] if changes else
                             [EVENT_UNSCHEDULED_POD_UPDATE])
            info = queue.get(key)  # back in the pool meanwhile (before the note): judged there
            if info is not None and info.queue == UNSCHEDULABLE_Q:
                _forget_own_updates(queue, [key])
        if info is None or info.queue != UNSCHEDULABLE_Q:
            continue
        changes = _own_update_events(key, old_manifest, new_manifest)
        if changes is None:
            event, skipped = EVENT_UNSCHEDULED_POD_UPDATE, []
        else:
            event, skipped = own_update_moves(rejected_by(info.message), changes)
        for label in skipped:
            queue.count_incoming(UNSCHEDULABLE_Q, label, 1)
        if event is not None:
            moved += queue.move_to_active_or_backoff([key], event)
    return moved


# A pod's own update while it was in flight: key -> "<cycle it was popped at>|<label>,<label>...", in Redis
# beside the queue's keys (expiring: an attempt that never ends leaves none behind), in memory for the
# in-memory queue.
_OWN_UPDATE_TTL_SECONDS = 3600
_LOCAL_OWN_UPDATES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _own_update_key(queue, key: str) -> str:
    return f"{queue.prefix}:hints:own:{key}"


def _note_own_update(queue, key: str, cycle: int, labels: list[str]) -> None:
    value = f"{int(cycle)}|{','.join(labels)}"
    redis = getattr(queue, "redis", None)
    if redis is None:
        _LOCAL_OWN_UPDATES.setdefault(queue, {})[key] = value
    else:
        redis.set(_own_update_key(queue, key), value, ex=_OWN_UPDATE_TTL_SECONDS)


def _own_updates_noted(queue, keys: list[str]) -> dict[str, tuple[int, list[str]]]:
    """key -> (the cycle of the attempt it was in flight for, its update's labels), for those noted."""
    if not keys:
        return {}
    redis = getattr(queue, "redis", None)
    if redis is None:
        local = _LOCAL_OWN_UPDATES.get(queue, {})
        raw = [local.get(k) for k in keys]
    else:
        raw = redis.mget([_own_update_key(queue, k) for k in keys])
    out = {}
    for key, value in zip(keys, raw):
        if value:
            cycle, labels = (value.decode() if isinstance(value, bytes) else value).split("|", 1)
            out[key] = (int(cycle), labels.split(","))
    return out


def _forget_own_updates(queue, keys: list[str]) -> None:
    redis = getattr(queue, "redis", None)
    if redis is None:
        local = _LOCAL_OWN_UPDATES.get(queue, {})
        for key in keys:
            local.pop(key, None)
    elif keys:
        redis.delete(*[_own_update_key(queue, k) for k in keys])


def _own_updates_missed(queue, entries: list[tuple[str, int, str]]) -> dict[str, str]:
    """Of these pods back from an attempt (key, cycle, message): key -> the label of an own update noted while
    that attempt was in flight that one of its rejecting plugins registers; the notes read are forgotten."""
    notes = _own_updates_noted(queue, [key for key, _, _ in entries])
    if not notes:
        return {}
    out = {}
    for key, cycle, message in entries:
        note = notes.get(key)
        if note is None or note[0] < cycle:
            continue  # none, or one for an earlier attempt
        plugins = rejected_by(message)
        label = next((label for label in note[1] if registers(plugins, label)), None)
        if label is not None:
            out[key] = label
    _forget_own_updates(queue, list(notes))
    return out


# ---- node events and assigned pods deleted ----------------------------------------------------------

def deleted_pod(manifest: dict | None, node: str) -> PodDelete:
    """The AssignedPodDelete event of a pod row being deleted from `node` (its spec None if it does not parse:
    then every plugin registering the event queues)."""
    try:
        spec = pod_from_manifest(manifest or {})
    except Exception:  # noqa: BLE001 - an unreadable row: the hints cannot read it, so they queue
        return PodDelete(None)
    if spec.node_name != node:
        spec = dataclasses.replace(spec, node_name=node)
    return PodDelete(spec)


def move_after_node_deleted(queue, manifest: dict | None) -> int:
    """The pods a node's deletion (its last manifest) may help, by their hints (NodeDelete). How many moved."""
    def make() -> list[Event]:
        try:
            return [NodeDeleted(node_from_manifest(manifest or {}))]
        except Exception:  # noqa: BLE001 - unreadable: every plugin registering the event queues
            return [UnknownObject(EVENT_NODE_DELETE)]

    return move_after_events(queue, make, {EVENT_NODE_DELETE})


def node_changes(old: NodeSpec | dict | None, new: NodeSpec) -> list[NodeChange]:
    """The events of a node added (old None) or updated (old its spec or stored manifest)."""
    if old is None:
        return node_added(new)
    if isinstance(old, dict):
        try:
            old = node_from_manifest(old)
        except Exception:  # noqa: BLE001 - its old state unreadable: judged on the new one
            return node_update_unknown_old(new)
    return node_update_events(old, new)


# The in-flight record: label -> the scheduling cycle when an event of that label was last told to the
# queue. A pod popped at a cycle up to that one was in flight then. In Redis beside the queue's keys (one
# script call reads the cycle and writes it); in memory for the in-memory queue (one process).
_LOCAL_EVENT_CYCLE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NOTE_SCRIPT = """
local c = redis.call('GET', KEYS[2]) or '0'
for i = 1, #ARGV do redis.call('HSET', KEYS[1], ARGV[i], c) end
return c
"""
_NOTE_SCRIPTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _event_cycle_key(queue) -> str:
    return f"{queue.prefix}:hints:event_cycle"


def note_events(queue, labels) -> None:
    """Note that events of these labels are being told to the queue now, for the pods in flight."""
    if not labels:
        return
    redis = getattr(queue, "redis", None)
    if redis is None:
        cycle = queue.scheduling_cycle()
        _LOCAL_EVENT_CYCLE.setdefault(queue, {}).update({label: cycle for label in labels})
        return
    script = _NOTE_SCRIPTS.get(queue)
    if script is None:
        script = _NOTE_SCRIPTS[queue] = redis.register_script(_NOTE_SCRIPT)
    script(keys=[_event_cycle_key(queue), f"{queue.prefix}:cycle"], args=sorted(labels))


def _event_cycles(queue) -> dict[str, int]:
    redis = getattr(queue, "redis", None)
    if redis is None:
        return dict(_LOCAL_EVENT_CYCLE.get(queue, {}))
    raw = redis.hgetall(_event_cycle_key(queue)) or {}
    return {(k.decode() if isinstance(k, bytes) else k): int(v) for k, v in raw.items()}


def _missed(cycles: dict[str, int], cycle: int, message: str) -> str | None:
    """The label of an event told while a pod of this cycle was in flight that one of its rejecting plugins
    registers (any, with no known rejector); None if there is none."""
    plugins = rejected_by(message)
    for label, at in sorted(cycles.items()):
        if at >= cycle and registers(plugins, label):
            return label
    return None


def events_while_in_flight(queue, failures: list[tuple[str, int, str]]) -> set[str]:
    """Of the pods failing as unschedulable (key, the cycle they were popped at, message), those in flight
    when an event was told to the queue that one of their rejecting plugins registers (or any event, with
    no known rejector), or whose own update noted for that attempt has a label one registers: they go to
    backoffQ, not the pool, as upstream's in-flight events check with the hint taken as Queue. Two Redis
    calls per batch that has such failures."""
    if not failures:
        return set()
    cycles = _event_cycles(queue)
    out = {key for key, cycle, message in failures if _missed(cycles, cycle, message)} if cycles else set()
    return out | set(_own_updates_missed(queue, failures))


def move_missed_while_in_flight(queue, pooled: list[tuple[str, int, str]]) -> int:
    """After the failing pods went to the pool (key, cycle, message): an event told between the check above
    and their arrival there, whose own move read the pool before they were in it, is found noted now (a
    pod's own update too); the pods it concerns move as it would have moved them. Two Redis calls; how many
    moved."""
    if not pooled:
        return 0
    cycles = _event_cycles(queue)
    by_label: dict[str, list[str]] = {}
    own = _own_updates_missed(queue, pooled)
    for key, cycle, message in pooled:
        label = own.get(key) or _missed(cycles, cycle, message)
        if label is not None:
            by_label.setdefault(label, []).append(key)
    return sum(queue.move_to_active_or_backoff(keys, label) for label, keys in by_label.items())


def move_after_events(queue, changes: list[Event] | Callable[[], list[Event]], labels: set[str] | None = None) -> int:
    """Ask the hints about these events (or the callable making them, called only when some waiting pod's
    rejecting plugin registers one of `labels`); move the pods they queue. How many moved. One queue call
    to read the pool, one Pod query for the specs the hints read."""
    if labels is None:
        if callable(changes):
            raise ValueError("labels are needed with a callable")
        labels = {c.event for c in changes}
    if not labels:
        return 0
    note_events(queue, labels)
    waiting = [(k, m) for k, m in queue.unschedulable_with_message(("",))
               if any(registers(rejected_by(m), label) for label in labels)]
    if not waiting:
        return 0
    if callable(changes):
        changes = changes()
    if not changes:
        return 0
    need = [k for k, m in waiting if needs_spec(rejected_by(m), labels)]
    specs = _waiting_specs(need) if need else {}
    moved = 0
    for event, keys in keys_to_move(waiting, specs, changes).items():
        moved += queue.move_to_active_or_backoff(keys, event)
    return moved


def _recorded_labels(kind: str) -> tuple[str, ...]:
    if kind == EVENT_NODE_UPDATE:
        return NODE_UPDATE_EVENTS
    return (kind,)


def move_after_recorded(queue, recorded: list[tuple[str, str]], since: datetime | None = None) -> int:
    """The reconciler's replay of recorded ClusterEvents (kind, object name): NodeAdd and NodeUpdate read the
    node as it is now (an update's old state is not recorded: judged on the new one, every kind of update),
    AssignedPodDelete the pod as its deletion recorded it (DeletedPod); one not found is not known (every
    plugin registering the event queues). One query each, only when some waiting pod needs them. `since`: when the first of them was recorded (the deletions are looked up from then)."""
    labels = {label for kind, _ in recorded for label in _recorded_labels(kind)}

    def make() -> list[Event]:
        node_names = {name for kind, name in recorded if kind in (EVENT_NODE_ADD, EVENT_NODE_UPDATE)}
        nodes = {}
        if node_names:
            for name, manifest in Node.objects.filter(name__in=node_names).values_list("name", "manifest"):
                try:
                    nodes[name] = node_from_manifest(manifest)
                except Exception:  # noqa: BLE001 - unreadable: as a node gone, nothing to judge
                    log.warning("queueing hints: cannot read node %s", name, exc_info=True)
        pod_keys = {name for kind, name in recorded if kind == EVENT_ASSIGNED_POD_DELETE}
        deleted = {}
        if pod_keys:
            pairs = [k.split("/", 1) for k in pod_keys if "/" in k]
            rows = DeletedPod.objects.filter(namespace__in={ns for ns, _ in pairs}, name__in={n for _, n in pairs})
            if since is not None:  # by the index on deleted_at
                rows = rows.filter(deleted_at__gte=since - timedelta(seconds=_RECORDED_MARGIN_SECONDS))
            rows = (rows.order_by("deleted_at").values_list("namespace", "name", "node_name", "manifest"))
            for ns, name, node, manifest in rows:  # the latest deletion of a name last
                key = f"{ns}/{name}"
                if key in pod_keys:
                    deleted[key] = deleted_pod(manifest, node)
        out: list[Event] = []
        for kind, name in recorded:
            if kind in (EVENT_NODE_ADD, EVENT_NODE_UPDATE) and name not in nodes:
                # Gone since (or unreadable): not known, so every plugin registering the event queues.
                out.extend(UnknownObject(label) for label in _recorded_labels(kind))
            elif kind == EVENT_NODE_ADD:
                out.extend(node_added(nodes[name]))
            elif kind == EVENT_NODE_UPDATE:
                out.extend(node_update_unknown_old(nodes[name]))
            elif kind == EVENT_ASSIGNED_POD_DELETE:
                out.append(deleted.get(name) or PodDelete(None))
        return out

    return move_after_events(queue, make, labels)
