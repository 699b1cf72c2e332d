"""QueueingHints for assigned pods (kube-scheduler with SchedulerQueueingHints, its default): when a pod
becomes assigned (AssignedPodAdd) or an assigned pod's labels change (AssignedPodUpdate), the pods waiting
in the unschedulable pool that InterPodAffinity or PodTopologySpread rejected are asked those plugins'
hints (isSchedulableAfterPodChange); exactly those a hint queues move to activeQ or backoffQ.

Which plugins rejected a pod is read from its last failure message, kept in the queue (the reasons are
the plugins' own words), so a binding batch costs one queue call when no such pod waits, and one Pod
query for those that do.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..engine.labels import SelectorError
from ..engine.plugins import inter_pod_affinity, pod_topology_spread
from ..engine.pods import DO_NOT_SCHEDULE, PodSpec
from ..engine.queue import EVENT_ASSIGNED_POD_ADD, EVENT_ASSIGNED_POD_UPDATE
from ..manifests.objects import pod_from_manifest
from ..models import Pod

log = logging.getLogger(__name__)

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
            if change.new.uid == pod.uid:
                continue
            if any(ask(pod, change) for ask in asks):
                out.setdefault(change.event, []).append(key)
                break
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
