"""A PodDisruptionBudget's status as upstream's disruption controller computes it
(pkg/controller/disruption: getExpectedPodCount, countHealthyPods, updatePdbStatus), for the simulated
cluster, which has no controller manager: expectedPods, desiredHealthy, currentHealthy and
disruptionsAllowed from the pods the selector matches.

- minAvailable as an integer: expected = the matching pods, desiredHealthy = minAvailable.
- maxUnavailable, or minAvailable as a percentage: expected = the scale of the matching pods'
  controllers (each counted once); a matching pod without a known controller makes the controller fail
  safe (disruptionsAllowed 0), as upstream's "found no controllers for pod".
- healthy: running on a node and not terminating (the simulated cluster has no readiness probes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .labels import LabelSelector, SelectorError, as_selector


@dataclass(frozen=True)
class BudgetPod:
    namespace: str
    name: str
    labels: dict
    healthy: bool
    controller: tuple[str, str] | None = None  # (kind, name) of its controller


def _scaled(value, total: int, round_up: bool) -> int:
    """As intstr.GetScaledValueFromIntOrPercent."""
    if isinstance(value, int):
        return value
    pct = int(str(value)[:-1])
    exact = pct * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def budget_status(spec: dict, namespace: str, selector: LabelSelector | None, pods: list[BudgetPod],
                  scales: dict[tuple[str, str], int]) -> dict:
    """The status fields (expectedPods, desiredHealthy, currentHealthy, disruptionsAllowed) of one
    budget; `scales`: (kind, name) -> replicas of the controllers in the budget's namespace."""
    try:
        compiled = as_selector(selector) if selector is not None else None
    except SelectorError:
        compiled = None
    # As getPodsForPdb (LabelSelectorAsSelector): a nil selector matches no pod, an empty one every pod
    # of the namespace (preemption's own check, engine/preemption/pdb.py, counts neither).
    matching = [p for p in pods if p.namespace == namespace and compiled is not None and compiled.matches(p.labels)]
    current = sum(p.healthy for p in matching)
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is None and max_unavailable is None:
        expected, desired = 0, 0  # neither set (policy/v1 defaults neither): nothing expected, nothing allowed
    elif isinstance(min_available, int) and max_unavailable is None:
        expected, desired = len(matching), min_available
    else:
        owners = {p.controller for p in matching}
        if None in owners:
            return {"expectedPods": 0, "desiredHealthy": 0, "currentHealthy": current, "disruptionsAllowed": 0}
        expected = sum(scales.get(o, 0) for o in owners)
        if max_unavailable is not None:
            desired = max(0, expected - _scaled(max_unavailable, expected, True))
        else:
            desired = _scaled(min_available, expected, True)
    # As updatePdbStatus: nothing is allowed while no pod is expected.
    allowed = max(0, current - desired) if expected > 0 else 0
    return {"expectedPods": expected, "desiredHealthy": desired, "currentHealthy": current,
            "disruptionsAllowed": allowed}
