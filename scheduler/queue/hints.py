"""QueueingHints for assigned pods on the live queue: when a pod becomes assigned (AssignedPodAdd) or an
assigned pod's labels change (AssignedPodUpdate), the pods waiting in the unschedulable pool whose last
failure names InterPodAffinity's or PodTopologySpread's reasons are asked those plugins' hints
(scheduler/engine/queueing_hints.py); exactly those a hint queues move to activeQ or backoffQ.

The rejecting plugins are read from the failure message the queue keeps, so a binding batch costs one
queue call when no such pod waits, and one Pod query for those that do.
"""

from __future__ import annotations

import logging

from ..engine.pods import PodSpec
from ..engine.queueing_hints import AFFINITY_REASONS, SPREAD_REASONS, PodChange, assigned, keys_to_move
from ..manifests.objects import pod_from_manifest
from ..models import Pod

__all__ = ["PodChange", "assigned", "assigned_from_row", "keys_to_move", "move_after_assigned"]

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
