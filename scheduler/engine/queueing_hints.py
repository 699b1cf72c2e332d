"""QueueingHints (kube-scheduler with SchedulerQueueingHints, its default): which pods waiting in the
unschedulable pool a cluster event moves to activeQ or backoffQ.

As upstream's isPodWorthRequeuing: a pod moves when one of the plugins that rejected it (its
UnschedulablePlugins; here the plugins whose reasons appear in its last failure message: the reasons are
the plugins' own words) registers the event (EventsToRegister) and its hint (isSchedulableAfter*) says
Queue, or registers it with no hint; a pod whose message names none of these plugins moves on every event
(upstream: no rejector plugin, queueAfterBackoff); a hint that fails says Queue (upstream's error
behaviour). A pod whose rejecting plugins register nothing for the event stays.

The events, with upstream's labels (ClusterEvent.Label(): Resource + ActionType):
- AssignedPodAdd / AssignedPodUpdate (PodChange): InterPodAffinity, PodTopologySpread.
- AssignedPodDelete (PodDelete): NodeResourcesFit, NodePorts, InterPodAffinity, PodTopologySpread.
- NodeAdd and the node updates NodeUpdateNodeAllocatable / NodeUpdateNodeLabel / NodeUpdateNodeTaint
  (NodeChange; node_update_events splits an update as NodeSchedulingPropertiesChange does):
  NodeResourcesFit (Add, allocatable), NodeAffinity (Add, labels), TaintToleration and NodeUnschedulable
  (Add, taints; spec.unschedulable cleared counts as a taint change, as upstream), NodeName and NodePorts
  (Add, no hint), PodTopologySpread (Add, labels, taints), InterPodAffinity (Add, labels).
- NodeDelete (NodeDeleted): PodTopologySpread (a deleted node with every topology key may lift a skew).
- The waiting pod's own update (PodUpdate; pod_update_events splits it as PodSchedulingPropertiesChange does
  for an unscheduled pod: UnschedulablePodUpdatePodLabel / ...PodScaleDown / ...PodSchedulingGatesEliminated /
  ...PodToleration, else the generic UnschedulablePodUpdate, which every plugin registering some Pod update
  is asked about, as ActionType Update matches them all): NodeResourcesFit (scale down), TaintToleration and
  NodeUnschedulable (toleration), PodTopologySpread (labels, toleration), InterPodAffinity (labels: its hint
  skips an unscheduled pod).

Cheap over many waiting pods: consecutive node changes of one label are asked together over one NodeTable
of their nodes (NodeBatch: the plugins' own vectorized filters answer for every row), and pods alike in
what a hint reads (a workload's replicas) are asked once per event.

Pure: the live queue (scheduler/queue/hints.py) and the replay both ask it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Callable, Union

import numpy as np

from .nodes import NodeSpec, NodeTable, NodeUsage
from .plugins import (inter_pod_affinity, node_affinity, node_name, node_ports, node_resources_fit,
                      node_unschedulable, pod_topology_spread, taint_toleration)
from .pods import DO_NOT_SCHEDULE, HONOR, PodSpec
from .queue import (EVENT_ASSIGNED_POD_ADD, EVENT_ASSIGNED_POD_DELETE, EVENT_ASSIGNED_POD_UPDATE, EVENT_NODE_ADD,
                    EVENT_UNSCHEDULED_POD_UPDATE)
from .resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS

log = logging.getLogger(__name__)

EVENT_NODE_DELETE = "NodeDelete"
# Node update labels: "Node" + the ActionType NodeSchedulingPropertiesChange found.
EVENT_NODE_UPDATE_ALLOCATABLE = "NodeUpdateNodeAllocatable"
EVENT_NODE_UPDATE_LABEL = "NodeUpdateNodeLabel"
EVENT_NODE_UPDATE_TAINT = "NodeUpdateNodeTaint"
NODE_UPDATE_EVENTS = (EVENT_NODE_UPDATE_TAINT, EVENT_NODE_UPDATE_ALLOCATABLE, EVENT_NODE_UPDATE_LABEL)

# An unscheduled pod's own update: "UnschedulablePod" + the ActionType PodSchedulingPropertiesChange found
# (EVENT_UNSCHEDULED_POD_UPDATE, the generic one, when it found none).
EVENT_POD_UPDATE_LABEL = "UnschedulablePodUpdatePodLabel"
EVENT_POD_UPDATE_SCALE_DOWN = "UnschedulablePodUpdatePodScaleDown"
EVENT_POD_UPDATE_GATES_ELIMINATED = "UnschedulablePodUpdatePodSchedulingGatesEliminated"
EVENT_POD_UPDATE_TOLERATION = "UnschedulablePodUpdatePodToleration"
POD_UPDATE_EVENTS = (EVENT_POD_UPDATE_LABEL, EVENT_POD_UPDATE_SCALE_DOWN, EVENT_POD_UPDATE_GATES_ELIMINATED,
                     EVENT_POD_UPDATE_TOLERATION, EVENT_UNSCHEDULED_POD_UPDATE)

FIT, NODE_AFFINITY, TAINT_TOLERATION, NODE_UNSCHEDULABLE = ("NodeResourcesFit", "NodeAffinity", "TaintToleration",
                                                            "NodeUnschedulable")
NODE_NAME, NODE_PORTS, SPREAD, AFFINITY = "NodeName", "NodePorts", "PodTopologySpread", "InterPodAffinity"

AFFINITY_REASONS = (
    inter_pod_affinity.ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    inter_pod_affinity.ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    inter_pod_affinity.ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)
SPREAD_REASONS = (pod_topology_spread.ERR_REASON_CONSTRAINTS_NOT_MATCH,)  # "(missing required label)" included

# Each plugin's reasons as its Filter (or PreFilter) words them in a failure message.
REASONS: dict[str, tuple[str, ...]] = {
    FIT: ("Insufficient ", "Too many pods"),
    NODE_AFFINITY: (node_affinity.ERR_REASON_POD, node_affinity.ERR_REASON_ENFORCED, node_affinity.ERR_REASON_CONFLICT),
    TAINT_TOLERATION: ("had untolerated taint",),
    NODE_UNSCHEDULABLE: (node_unschedulable.ERR_REASON_UNSCHEDULABLE,),
    NODE_NAME: (node_name.ERR_REASON,),
    NODE_PORTS: (node_ports.ERR_REASON,),
    SPREAD: SPREAD_REASONS,
    AFFINITY: AFFINITY_REASONS,
}


@lru_cache(maxsize=4096)
def rejected_by(message: str) -> frozenset[str] | None:
    """The plugins whose reasons the failure message names; None when it names none of them (unknown:
    every event queues the pod, as upstream for a pod without UnschedulablePlugins)."""
    found = frozenset(p for p, reasons in REASONS.items() if any(r in message for r in reasons))
    return found or None


# ---- events ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PodChange:
    """An assigned pod added (old None) or updated: what the hints read (namespace, uid, node, labels)."""

    new: PodSpec
    old: PodSpec | None = None

    @property
    def event(self) -> str:
        return EVENT_ASSIGNED_POD_ADD if self.old is None else EVENT_ASSIGNED_POD_UPDATE


@dataclass(frozen=True)
class PodDelete:
    """An assigned pod deleted (AssignedPodDelete). pod None: which one is not known, so every plugin
    registering the event queues (as a hint that cannot read its object)."""

    pod: PodSpec | None

    event = EVENT_ASSIGNED_POD_DELETE


@dataclass(frozen=True)
class NodeChange:
    """A node added (NodeAdd, old None) or one kind of its update (event one of NODE_UPDATE_EVENTS). An
    update whose old state is not known (old None: the reconciler replaying a recorded event) is judged on
    the new state alone, as an add would be: never fewer moves than the real old state gives."""

    event: str
    new: NodeSpec
    old: NodeSpec | None = None

    @cached_property
    def batch(self) -> NodeBatch:
        return NodeBatch(self.event, (self,))


@dataclass(frozen=True, eq=False)
class NodeBatch:
    """Node changes of one event label, asked together: the node hints answer over all their rows at once
    (a pod moves when any of the nodes may help it). Node names are distinct."""

    event: str
    changes: tuple[NodeChange, ...]

    @cached_property
    def new_table(self) -> NodeTable:
        return NodeTable([c.new for c in self.changes])

    @cached_property
    def old_table(self) -> NodeTable:
        """Row i: the old state of change i (its new state where there is none; has_old tells)."""
        return NodeTable([c.old or c.new for c in self.changes])

    @cached_property
    def has_old(self) -> np.ndarray:
        return np.fromiter((c.old is not None for c in self.changes), dtype=bool, count=len(self.changes))

    @cached_property
    def taints_changed(self) -> np.ndarray:
        return np.fromiter((c.old is not None and c.old.taints != c.new.taints for c in self.changes), dtype=bool,
                           count=len(self.changes))

    def value_changed(self, key: str) -> np.ndarray:
        cache = self.__dict__.setdefault("_value_changed", {})
        if key not in cache:
            cache[key] = np.fromiter((c.old is not None and c.old.labels.get(key) != c.new.labels.get(key)
                                      for c in self.changes), dtype=bool, count=len(self.changes))
        return cache[key]


@dataclass(frozen=True)
class NodeDeleted:
    """A node deleted (NodeDelete): its last state."""

    old: NodeSpec

    event = EVENT_NODE_DELETE


def node_batches(changes: list) -> list:
    """The events in order, consecutive NodeChanges of one label (distinct nodes) merged into a NodeBatch."""
    out: list = []
    run: list[NodeChange] = []

    def flush():
        if run:
            out.append(NodeBatch(run[0].event, tuple(run)) if len(run) > 1 else run[0])
            run.clear()

    for change in changes:
        if isinstance(change, NodeChange) and run and (
                change.event != run[0].event or any(c.new.name == change.new.name for c in run)):
            flush()
        if isinstance(change, NodeChange):
            run.append(change)
        else:
            flush()
            out.append(change)
    flush()
    return out


def _rows(change: NodeChange | NodeBatch) -> NodeBatch:
    return change.batch if isinstance(change, NodeChange) else change


@dataclass(frozen=True)
class PodUpdate:
    """The waiting pod's own update (event one of POD_UPDATE_EVENTS): its spec before and after."""

    event: str
    new: PodSpec
    old: PodSpec


def pod_update_events(old: PodSpec, new: PodSpec) -> list[PodUpdate]:
    """As PodSchedulingPropertiesChange for an unscheduled pod, in upstream's order: labels changed, a request
    scaled down (lowered or removed), the last scheduling gate removed, tolerations added (the API server only
    adds them: their number tells); none of these: the generic update."""
    labels = []
    if old.labels != new.labels:
        labels.append(EVENT_POD_UPDATE_LABEL)
    if any(r not in new.requests or want > new.requests[r] for r, want in old.requests.items()):
        labels.append(EVENT_POD_UPDATE_SCALE_DOWN)
    if old.scheduling_gates and not new.scheduling_gates:
        labels.append(EVENT_POD_UPDATE_GATES_ELIMINATED)
    if len(old.tolerations) != len(new.tolerations):
        labels.append(EVENT_POD_UPDATE_TOLERATION)
    return [PodUpdate(label, new, old) for label in labels or [EVENT_UNSCHEDULED_POD_UPDATE]]


def _itself(pod: PodSpec, changed: PodSpec) -> bool:
    # The updated pod is the waiting one (by uid; a trace's pods may have none: by name).
    if pod.uid and changed.uid:
        return pod.uid == changed.uid
    return (pod.namespace, pod.name) == (changed.namespace, changed.name)


@dataclass(frozen=True)
class UnknownObject:
    """An event whose object is not known (a recorded node event whose node is gone or unreadable): every
    plugin registering the event queues, as a hint that cannot read its object."""

    event: str


Event = Union[PodChange, PodDelete, NodeChange, NodeBatch, NodeDeleted, PodUpdate, UnknownObject]


def assigned(namespace: str, name: str, uid: str, node: str, labels: dict | None) -> PodSpec:
    """The part of a pod the assigned-pod hints read."""
    return PodSpec(namespace=namespace, name=name, uid=uid, node_name=node, labels=dict(labels or {}))


def node_added(new: NodeSpec) -> list[NodeChange]:
    return [NodeChange(EVENT_NODE_ADD, new)]


def node_update_events(old: NodeSpec, new: NodeSpec) -> list[NodeChange]:
    """As NodeSchedulingPropertiesChange, the events of a node update that a plugin here registers, in
    upstream's order: spec.unschedulable cleared (UpdateNodeTaint), allocatable, labels, taints (one event
    per label). Images, conditions and annotations changed: none."""
    labels = []
    if old.unschedulable and not new.unschedulable:
        labels.append(EVENT_NODE_UPDATE_TAINT)
    if old.allocatable != new.allocatable:
        labels.append(EVENT_NODE_UPDATE_ALLOCATABLE)
    if old.labels != new.labels:
        labels.append(EVENT_NODE_UPDATE_LABEL)
    if old.taints != new.taints:
        labels.append(EVENT_NODE_UPDATE_TAINT)
    return [NodeChange(label, new, old) for label in dict.fromkeys(labels)]


def node_update_unknown_old(new: NodeSpec) -> list[NodeChange]:
    """A node update whose old state is not known (a recorded NodeUpdate): every kind, judged on `new`."""
    return [NodeChange(label, new) for label in NODE_UPDATE_EVENTS]


# ---- the hints (True: Queue, False: QueueSkip) ----------------------------------------------------------

_FIT = node_resources_fit.NodeResourcesFit()
_TAINTS = taint_toleration.TaintToleration()
_PORTS = node_ports.NodePorts()


def _requested_increased(pod: PodSpec, rows: NodeBatch) -> np.ndarray:
    """As haveAnyRequestedResourcesIncreased, per row: more pods allowed, or more of a resource the pod requests."""
    old, new = rows.old_table, rows.new_table
    grew = new.allocatable_of(PODS) > old.allocatable_of(PODS)
    for resource, want in pod.requests.items():
        if resource == PODS or want <= 0:
            continue
        if resource in (CPU, MEMORY, EPHEMERAL_STORAGE) or node_resources_fit.is_scalar_resource_name(resource):
            if resource in new.allocatable or resource in old.allocatable:
                grew = grew | (_allocatable(new, resource) > _allocatable(old, resource))
    return grew


def _allocatable(table: NodeTable, resource: str) -> np.ndarray:
    return table.allocatable[resource] if resource in table.allocatable else np.zeros(table.n, dtype=np.int64)


def fit_after_node_change(pod: PodSpec, change: NodeChange | NodeBatch) -> bool:
    """NodeResourcesFit's isSchedulableAfterNodeChange: the node could hold the pod alone (isFit: its
    requests against the allocatable of a node with no pod), and it is new or its allocatable grew in
    something the pod requests."""
    rows = _rows(change)
    fits = _FIT.filter(pod, rows.new_table).passed
    return bool(np.any(fits & (~rows.has_old | _requested_increased(pod, rows))))


def fit_after_pod_delete(pod: PodSpec, change: PodDelete) -> bool:
    """NodeResourcesFit's isSchedulableAfterPodEvent for a deletion: any pod bound (or nominated) frees room."""
    deleted = change.pod
    return deleted is None or bool(deleted.node_name or deleted.nominated_node_name)


def fit_after_pod_update(pod: PodSpec, change: PodUpdate) -> bool:
    """NodeResourcesFit's isSchedulableAfterPodEvent for an update (InPlacePodVerticalScaling, on by default):
    the waiting pod's own update queues it (isSchedulableAfterPodScaleDown: the target pod itself)."""
    return _itself(pod, change.new)


def taint_toleration_after_pod_update(pod: PodSpec, change: PodUpdate) -> bool:
    """TaintToleration's isSchedulableAfterPodTolerationChange: the waiting pod itself got a toleration."""
    return _itself(pod, change.new)


def node_unschedulable_after_pod_update(pod: PodSpec, change: PodUpdate) -> bool:
    """NodeUnschedulable's isSchedulableAfterPodTolerationChange: the waiting pod itself now tolerates the
    node.kubernetes.io/unschedulable:NoSchedule taint."""
    return _itself(pod, change.new) and node_unschedulable.tolerates_unschedulable(change.new)


def node_affinity_after_node_change(pod: PodSpec, change: NodeChange | NodeBatch) -> bool:
    """NodeAffinity's isSchedulableAfterNodeChange: the node matches the pod's nodeSelector and required
    node affinity now, and did not before (or is new). (A profile's addedAffinity is not asked: it can
    only skip more.)"""
    rows = _rows(change)
    matches = node_affinity.required_mask(pod, rows.new_table)
    if not matches.any():
        return False
    return bool(np.any(matches & (~rows.has_old | ~node_affinity.required_mask(pod, rows.old_table))))


def taint_toleration_after_node_change(pod: PodSpec, change: NodeChange | NodeBatch) -> bool:
    """TaintToleration's isSchedulableAfterNodeChange: the pod tolerates the node's NoSchedule/NoExecute
    taints now and did not before (a new node counts as untolerated before)."""
    rows = _rows(change)
    tolerated = _TAINTS.filter(pod, rows.new_table).passed
    if not tolerated.any():
        return False
    return bool(np.any(tolerated & (~rows.has_old | ~_TAINTS.filter(pod, rows.old_table).passed)))


def node_unschedulable_after_node_change(pod: PodSpec, change: NodeChange | NodeBatch) -> bool:
    """NodeUnschedulable's isSchedulableAfterNodeChange: a schedulable node added, or a node uncordoned."""
    rows = _rows(change)
    schedulable = ~rows.new_table.unschedulable
    return bool(np.any(schedulable & (~rows.has_old | rows.old_table.unschedulable)))


def node_ports_after_pod_delete(pod: PodSpec, change: PodDelete) -> bool:
    """NodePorts' isSchedulableAfterPodDeleted: the deleted pod was placed and held a host port the pod wants."""
    deleted = change.pod
    if deleted is None:
        return True
    if not (deleted.node_name or deleted.nominated_node_name):
        return False
    ports = tuple(p for p in deleted.host_ports if p.port > 0)
    if not ports:
        return False
    held = NodeTable([NodeSpec(name="deleted")], [NodeUsage(ports=ports)])
    return not _PORTS.filter(pod, held).passed[0]


def _spread_constraints(pod: PodSpec):
    """The pod's DoNotSchedule constraints; None when it has none of its own (the profile's defaults, whose
    selector comes from the Services and controllers selecting it, are not known here: Queue)."""
    if not pod.topology_spread_constraints:
        return None
    return pod_topology_spread.filter_constraints(pod.topology_spread_constraints, pod.labels, DO_NOT_SCHEDULE)


def spread_after_pod_change(pod: PodSpec, change: PodChange | PodDelete) -> bool:
    """PodTopologySpread's isSchedulableAfterPodChange (an assigned pod added, relabelled or deleted)."""
    constraints = _spread_constraints(pod)
    if constraints is None:
        return True
    if isinstance(change, PodDelete):
        if change.pod is None:
            return True
        return pod_topology_spread.is_schedulable_after_pod_change(pod, constraints, change.pod, None)
    return pod_topology_spread.is_schedulable_after_pod_change(pod, constraints, change.old, change.new)


def spread_after_pod_update(pod: PodSpec, change: PodUpdate) -> bool:
    """PodTopologySpread's isSchedulableAfterPodChange for the waiting pod's own update: it got a toleration
    and a constraint honours node taints, or its labels changed whether a constraint's selector matches it."""
    constraints = _spread_constraints(pod)
    if constraints is None:
        return True
    if not _itself(pod, change.new):
        return False
    if change.old.tolerations != change.new.tolerations and any(c.node_taints_policy == HONOR for c in constraints):
        return True
    if change.old.labels == change.new.labels:
        return False
    return any(c.selector.matches(change.old.labels) != c.selector.matches(change.new.labels) for c in constraints)


def affinity_after_pod_update(pod: PodSpec, change: PodUpdate) -> bool:
    """InterPodAffinity's isSchedulableAfterPodChange for the waiting pod's own update: an unscheduled pod
    never makes a pod schedulable (its own labels included), so QueueSkip."""
    return False


def _has_keys(table: NodeTable, constraints) -> np.ndarray:
    # As nodeLabelsMatchSpreadConstraints, per row: the node has every constraint's topology key.
    mask = np.ones(table.n, dtype=bool)
    for c in constraints:
        mask &= table.label(c.topology_key).exists()
    return mask


def spread_after_node_change(pod: PodSpec, change: NodeChange | NodeBatch) -> bool:
    """PodTopologySpread's isSchedulableAfterNodeChange: a new node with every topology key; an updated node
    that gained or lost them, or that has them and changed a topology value or its taints."""
    constraints = _spread_constraints(pod)
    if constraints is None:
        return True
    rows = _rows(change)
    new_matching = _has_keys(rows.new_table, constraints)
    old_matching = _has_keys(rows.old_table, constraints)
    changed = rows.taints_changed.copy()
    for c in constraints:
        changed |= rows.value_changed(c.topology_key)
    updated = (old_matching != new_matching) | (new_matching & changed)
    return bool(np.any(np.where(rows.has_old, updated, new_matching)))


def spread_after_node_delete(pod: PodSpec, change: NodeDeleted) -> bool:
    """PodTopologySpread's isSchedulableAfterNodeChange for a deletion: the deleted node had every topology key."""
    constraints = _spread_constraints(pod)
    if constraints is None:
        return True
    return bool(_has_keys(NodeTable([change.old]), constraints)[0])


def affinity_after_pod_change(pod: PodSpec, change: PodChange | PodDelete) -> bool:
    """InterPodAffinity's isSchedulableAfterPodChange (an assigned pod added, relabelled or deleted)."""
    if isinstance(change, PodDelete):
        if change.pod is None:
            return True
        return inter_pod_affinity.is_schedulable_after_pod_change(pod, change.pod, None)
    return inter_pod_affinity.is_schedulable_after_pod_change(pod, change.old, change.new)


def affinity_after_node_change(pod: PodSpec, change: NodeChange | NodeBatch) -> bool:
    """InterPodAffinity's isSchedulableAfterNodeChange: the node has the topology key of one of the pod's
    required affinity or anti-affinity terms."""
    terms = ((pod.pod_affinity.required if pod.pod_affinity else ())
             + (pod.pod_anti_affinity.required if pod.pod_anti_affinity else ()))
    table = _rows(change).new_table
    return any(table.label(key).exists().any() for key in {t.topology_key for t in terms})


Hint = Callable[[PodSpec, Event], bool]

# EventsToRegister with SchedulerQueueingHints on: plugin -> event label -> its hint (None: no hint, Queue).
def _own_update(hint: Hint, *labels: str) -> dict[str, Hint]:
    # A Pod update registration: its ActionTypes, and the generic update (ActionType Update matches any).
    return {label: hint for label in (*labels, EVENT_UNSCHEDULED_POD_UPDATE)}


REGISTRATIONS: dict[str, dict[str, Hint | None]] = {
    FIT: {EVENT_ASSIGNED_POD_DELETE: fit_after_pod_delete,
          EVENT_NODE_ADD: fit_after_node_change, EVENT_NODE_UPDATE_ALLOCATABLE: fit_after_node_change,
          **_own_update(fit_after_pod_update, EVENT_POD_UPDATE_SCALE_DOWN)},
    NODE_AFFINITY: {EVENT_NODE_ADD: node_affinity_after_node_change,
                    EVENT_NODE_UPDATE_LABEL: node_affinity_after_node_change},
    TAINT_TOLERATION: {EVENT_NODE_ADD: taint_toleration_after_node_change,
                       EVENT_NODE_UPDATE_TAINT: taint_toleration_after_node_change,
                       **_own_update(taint_toleration_after_pod_update, EVENT_POD_UPDATE_TOLERATION)},
    NODE_UNSCHEDULABLE: {EVENT_NODE_ADD: node_unschedulable_after_node_change,
                         EVENT_NODE_UPDATE_TAINT: node_unschedulable_after_node_change,
                         **_own_update(node_unschedulable_after_pod_update, EVENT_POD_UPDATE_TOLERATION)},
    NODE_NAME: {EVENT_NODE_ADD: None},
    NODE_PORTS: {EVENT_ASSIGNED_POD_DELETE: node_ports_after_pod_delete, EVENT_NODE_ADD: None},
    SPREAD: {EVENT_ASSIGNED_POD_ADD: spread_after_pod_change, EVENT_ASSIGNED_POD_UPDATE: spread_after_pod_change,
             EVENT_ASSIGNED_POD_DELETE: spread_after_pod_change,
             EVENT_NODE_ADD: spread_after_node_change, EVENT_NODE_UPDATE_LABEL: spread_after_node_change,
             EVENT_NODE_UPDATE_TAINT: spread_after_node_change, EVENT_NODE_DELETE: spread_after_node_delete,
             **_own_update(spread_after_pod_update, EVENT_POD_UPDATE_LABEL, EVENT_POD_UPDATE_TOLERATION)},
    AFFINITY: {EVENT_ASSIGNED_POD_ADD: affinity_after_pod_change, EVENT_ASSIGNED_POD_UPDATE: affinity_after_pod_change,
               EVENT_ASSIGNED_POD_DELETE: affinity_after_pod_change,
               EVENT_NODE_ADD: affinity_after_node_change, EVENT_NODE_UPDATE_LABEL: affinity_after_node_change,
               **_own_update(affinity_after_pod_update, EVENT_POD_UPDATE_LABEL)},
}


def registers(plugins: frozenset[str] | None, event: str) -> bool:
    """Whether some rejecting plugin registers the event (unknown rejectors: every event)."""
    return plugins is None or any(event in REGISTRATIONS.get(p, {}) for p in plugins)


def needs_spec(plugins: frozenset[str] | None, events: set[str]) -> bool:
    """Whether deciding for such a pod reads its spec (some registered hint function to ask)."""
    return plugins is not None and any(REGISTRATIONS.get(p, {}).get(e) is not None for p in plugins for e in events)


# What each hint reads of the waiting pod, for node events and deletions: pods alike in it (a workload's
# replicas) are asked once per event. The assigned-pod hints also compare uids: not shared.
_READS: dict[str, Callable[[PodSpec], object]] = {
    FIT: lambda p: tuple(sorted(p.requests.items())),
    NODE_AFFINITY: lambda p: (tuple(sorted(p.node_selector.items())), p.required_terms),
    TAINT_TOLERATION: lambda p: p.tolerations,
    NODE_UNSCHEDULABLE: lambda p: (),
    NODE_PORTS: lambda p: p.host_ports,
    SPREAD: lambda p: (p.namespace, tuple(sorted(p.labels.items())), p.topology_spread_constraints),
    AFFINITY: lambda p: (p.namespace, tuple(sorted(p.labels.items())), p.pod_affinity, p.pod_anti_affinity),
}


def _ask(plugin: str, hint: Hint, pod: PodSpec, change: Event, memo: dict | None) -> bool:
    if memo is None or isinstance(change, PodChange) or (plugin in (SPREAD, AFFINITY) and isinstance(change, PodDelete)):
        return hint(pod, change)
    try:
        key = (plugin, id(change), _READS[plugin](pod))
        hash(key)
    except TypeError:
        return hint(pod, change)
    answer = memo.get(key)
    if answer is None:
        answer = memo[key] = hint(pod, change)
    return answer


def queues(pod: PodSpec | None, plugins: frozenset[str] | None, change: Event, memo: dict | None = None) -> bool:
    """isPodWorthRequeuing for one event: some rejecting plugin registers it and its hint says Queue.
    `memo`: answers kept for pods alike in what a hint reads (keys_to_move's, for one batch of events)."""
    if plugins is None:
        return True
    if isinstance(change, UnknownObject):
        return registers(plugins, change.event)
    if isinstance(change, PodChange) and pod is not None and (
            change.new.namespace == pod.namespace and change.new.name == pod.name):
        return False  # the waiting pod itself (a trace's pods may have no uid)
    for plugin in plugins:
        registered = REGISTRATIONS.get(plugin, {})
        if change.event not in registered:
            continue
        hint = registered[change.event]
        if hint is None:
            return True
        if pod is None:
            continue  # its spec is gone: nothing to ask (the pod is leaving the queue)
        try:
            if _ask(plugin, hint, pod, change, memo):
                return True
        except Exception:  # noqa: BLE001 - a hint that cannot decide
            log.warning("queueing hint %s for %s failed: Queue", plugin, pod.key, exc_info=True)
            return True  # as upstream on an error
    return False


def own_update_moves(plugins: frozenset[str] | None, updates: list[PodUpdate]) -> tuple[str | None, list[str]]:
    """As PriorityQueue.Update for a pod in the unschedulable pool: its update's events asked in order; the
    label of the first a rejecting plugin's hint queues it for (None: it stays), and the labels asked before
    that said QueueSkip (upstream counts each as entering the pool again)."""
    skipped = []
    for change in updates:
        if queues(change.new, plugins, change):
            return change.event, skipped
        skipped.append(change.event)
    return None, skipped


def keys_to_move(waiting: list[tuple[str, str]], specs: dict[str, PodSpec], changes: list[Event]) -> dict[str, list[str]]:
    """event -> the waiting pods (key, last failure message) that some rejecting plugin's hint queues for
    an event of that label, each pod under the first event that moves it (upstream calls the queue once
    per event, in order: a pod moved by one is no longer in the pool for the next). A pod with no spec in
    `specs` moves only where no hint needs reading it."""
    out: dict[str, list[str]] = {}
    memo: dict = {}
    changes = node_batches(changes)
    for key, message in waiting:
        plugins = rejected_by(message)
        pod = specs.get(key)
        for change in changes:
            if queues(pod, plugins, change, memo):
                out.setdefault(change.event, []).append(key)
                break
    return out
