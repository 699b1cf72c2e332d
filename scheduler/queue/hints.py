"""QueueingHints for assigned pods on the live queue: when a pod becomes assigned (AssignedPodAdd) or an
assigned pod's labels change (AssignedPodUpdate), the pods waiting in the unschedulable pool whose last
failure names InterPodAffinity's or PodTopologySpread's reasons are asked those plugins' hints
(scheduler/engine/queueing_hints.py); exactly those a hint queues move to activeQ or backoffQ.

The rejecting plugins are read from the failure message the queue keeps, so a binding batch costs one
queue call when no such pod waits, and one Pod query for those that do.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone as dt_timezone

from ..engine.pods import PodSpec
from ..engine.queueing_hints import AFFINITY_REASONS, SPREAD_REASONS, PodChange, assigned, keys_to_move
from ..manifests.objects import pod_from_manifest
from ..models import Binding, Pod

__all__ = ["PodChange", "assigned", "asks_hints", "assigned_from_row", "bound_while_in_flight", "keys_to_move",
           "move_after_assigned"]

# Clocks of the processes differ a little: a binding this much before a pod was popped still counts.
_CLOCK_MARGIN_SECONDS = 1.0

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
