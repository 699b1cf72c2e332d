"""A PodDisruptionBudget's status as the disruption controller computes it (getExpectedPodCount,
countHealthyPods, updatePdbStatus), table-driven."""

import pytest

from .disruption_budget import BudgetPod, budget_status
from .labels import LabelSelector

DB = LabelSelector.of({"app": "db"})
RS = ("ReplicaSet", "db-rs")


def pods(healthy: int, unhealthy: int = 0, controller=RS, ns="default"):
    return ([BudgetPod(ns, f"h{i}", {"app": "db"}, True, controller) for i in range(healthy)]
            + [BudgetPod(ns, f"u{i}", {"app": "db"}, False, controller) for i in range(unhealthy)])


@pytest.mark.parametrize("spec, selector, members, scales, want", [
    # minAvailable as an integer: the matching pods are expected.
    ({"minAvailable": 2}, DB, pods(3, 1), {}, (4, 2, 3, 1)),
    ({"minAvailable": 3}, DB, pods(3), {}, (3, 3, 3, 0)),
    ({"minAvailable": 5}, DB, pods(3), {}, (3, 5, 3, 0)),  # never below zero
    # A percentage or maxUnavailable: the controllers' scale is expected (rounded up as upstream).
    ({"minAvailable": "50%"}, DB, pods(3), {RS: 5}, (5, 3, 3, 0)),
    ({"maxUnavailable": 1}, DB, pods(4), {RS: 4}, (4, 3, 4, 1)),
    ({"maxUnavailable": "25%"}, DB, pods(10), {RS: 10}, (10, 7, 10, 3)),  # 2.5 rounds up to 3
    # A matching pod without a controller: the controller fails safe (nothing allowed).
    ({"maxUnavailable": 1}, DB, pods(3, controller=None), {}, (0, 0, 3, 0)),
    # Neither set: nothing expected, nothing allowed.
    ({}, DB, pods(3), {}, (0, 0, 3, 0)),
    # A nil selector matches no pod; an empty one every pod of the namespace (the controller's reading).
    ({"minAvailable": 1}, None, pods(3), {}, (0, 1, 0, 0)),
    ({"minAvailable": 1}, LabelSelector.of({}), pods(3) + [BudgetPod("default", "x", {}, True)], {}, (4, 1, 4, 3)),
    # Other namespaces' pods do not count.
    ({"minAvailable": 1}, DB, pods(2) + pods(5, ns="other"), {}, (2, 1, 2, 1)),
])
def test_budget_status(spec, selector, members, scales, want):
    status = budget_status(spec, "default", selector, members, scales)
    assert (status["expectedPods"], status["desiredHealthy"], status["currentHealthy"],
            status["disruptionsAllowed"]) == want
