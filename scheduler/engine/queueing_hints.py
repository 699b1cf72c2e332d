"""QueueingHints for assigned pods (kube-scheduler with SchedulerQueueingHints, its default): which pods
waiting in the unschedulable pool a pod becoming assigned (AssignedPodAdd) or an assigned pod's labels
changing (AssignedPodUpdate) moves. Only those that InterPodAffinity or PodTopologySpread rejected (named by
their last failure message: the reasons are the plugins' own words), and only when that plugin's hint
(isSchedulableAfterPodChange) says Queue. Pure: the live queue (scheduler/queue/hints.py) and the replay
both ask it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .labels import SelectorError
from .plugins import inter_pod_affinity, pod_topology_spread
from .pods import DO_NOT_SCHEDULE, PodSpec
from .queue import EVENT_ASSIGNED_POD_ADD, EVENT_ASSIGNED_POD_UPDATE

AFFINITY_REASONS = (
    inter_pod_affinity.ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    inter_pod_affinity.ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    inter_pod_affinity.ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)
SPREAD_REASONS = (pod_topology_spread.ERR_REASON_CONSTRAINTS_NOT_MATCH,)  # "(missing required label)" included


@dataclass(frozen=True)
class PodChange:
    """An assigned pod added (old None) or updated: what the hints read (namespace, uid, node, labels)."""

    new: PodSpec
    old: PodSpec | None = None

    @property
    def event(self) -> str:
        return EVENT_ASSIGNED_POD_ADD if self.old is None else EVENT_ASSIGNED_POD_UPDATE


def assigned(namespace: str, name: str, uid: str, node: str, labels: dict | None) -> PodSpec:
    """The part of a pod the hints read."""
    return PodSpec(namespace=namespace, name=name, uid=uid, node_name=node, labels=dict(labels or {}))


def _affinity_queues(pod: PodSpec, change: PodChange) -> bool:
    return inter_pod_affinity.is_schedulable_after_pod_change(pod, change.old, change.new)


def _spread_queues(pod: PodSpec, change: PodChange) -> bool:
    if not pod.topology_spread_constraints:
        # Rejected under the profile's default constraints, whose selector comes from the Services and
        # controllers selecting the pod: requeued without asking (a superfluous retry costs one attempt).
        return True
    try:
        constraints = pod_topology_spread.filter_constraints(pod.topology_spread_constraints, pod.labels,
                                                             DO_NOT_SCHEDULE)
    except SelectorError:
        return True  # as upstream on an error: requeue
    return pod_topology_spread.is_schedulable_after_pod_change(pod, constraints, change.old, change.new)


def keys_to_move(waiting: list[tuple[str, str]], specs: dict[str, PodSpec], changes: list[PodChange]) -> dict[str, list[str]]:
    """event -> the waiting pods (key, last failure message) that some rejecting plugin's hint queues
    for a change of that event; each pod under the first event that moves it."""
    out: dict[str, list[str]] = {}
    for key, message in waiting:
        pod = specs.get(key)
        if pod is None:
            continue
        asks = []
        if any(r in message for r in AFFINITY_REASONS):
            asks.append(_affinity_queues)
        if any(r in message for r in SPREAD_REASONS):
            asks.append(_spread_queues)
        for change in changes:
            if change.new.namespace == pod.namespace and change.new.name == pod.name:
                continue  # the waiting pod itself (a trace's pods may have no uid)
            if any(ask(pod, change) for ask in asks):
                out.setdefault(change.event, []).append(key)
                break
    return out
