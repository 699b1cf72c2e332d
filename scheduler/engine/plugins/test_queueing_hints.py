"""The QueueingHints of InterPodAffinity and PodTopologySpread for assigned pods added, updated or
deleted (isSchedulableAfterPodChange upstream): True is Queue, False QueueSkip."""

from __future__ import annotations

import pytest

from scheduler.engine.labels import LabelSelector
from scheduler.engine.plugins import inter_pod_affinity, pod_topology_spread
from scheduler.engine.pods import DO_NOT_SCHEDULE, PodAffinity, PodAffinityTerm, PodSpec, TopologySpreadConstraint


def sel(**labels) -> LabelSelector:
    return LabelSelector(match_labels=tuple(sorted(labels.items())))


def pending(**kw) -> PodSpec:
    return PodSpec(namespace=kw.pop("namespace", "default"), name="waiting", uid="w", **kw)


def other(labels=None, node="n1", namespace="default", uid="o") -> PodSpec:
    return PodSpec(namespace=namespace, name="other", uid=uid, node_name=node, labels=labels or {})


AFFINITY = pending(pod_affinity=PodAffinity(required=(
    PodAffinityTerm("zone", sel(app="cache")),)))
AFFINITY_TWO = pending(pod_affinity=PodAffinity(required=(
    PodAffinityTerm("zone", sel(app="cache")), PodAffinityTerm("zone", sel(tier="db")))))
AFFINITY_OTHER_NS = pending(pod_affinity=PodAffinity(required=(
    PodAffinityTerm("zone", sel(app="cache"), namespaces=("infra",)),)))
ANTI = pending(pod_anti_affinity=PodAffinity(required=(PodAffinityTerm("zone", sel(app="web")),)))

AFFINITY_CASES = [
    # (id, pending pod, old, new, queue)
    ("add_matching_bound_pod", AFFINITY, None, other({"app": "cache"}), True),
    ("add_not_matching", AFFINITY, None, other({"app": "web"}), False),
    ("add_unbound_pod", AFFINITY, None, other({"app": "cache"}, node=""), False),
    ("add_other_namespace", AFFINITY, None, other({"app": "cache"}, namespace="infra"), False),
    ("add_in_listed_namespace", AFFINITY_OTHER_NS, None, other({"app": "cache"}, namespace="infra"), True),
    ("add_must_match_every_term", AFFINITY_TWO, None, other({"app": "cache"}), False),
    ("add_matching_every_term", AFFINITY_TWO, None, other({"app": "cache", "tier": "db"}), True),
    ("add_no_affinity_terms", ANTI, None, other({"app": "cache"}), False),
    ("update_labels_now_match", AFFINITY, other({"app": "x"}), other({"app": "cache"}), True),
    ("update_matched_before", AFFINITY, other({"app": "cache"}), other({"app": "cache", "v": "2"}), False),
    ("update_leaves_anti_affinity", ANTI, other({"app": "web"}), other({"app": "api"}), True),
    ("update_enters_anti_affinity", ANTI, other({"app": "api"}), other({"app": "web"}), False),
    ("delete_anti_affinity_match", ANTI, other({"app": "web"}), None, True),
    ("delete_affinity_match", AFFINITY, other({"app": "cache"}), None, False),
]


@pytest.mark.parametrize("pod,old,new,queue", [c[1:] for c in AFFINITY_CASES], ids=[c[0] for c in AFFINITY_CASES])
def test_inter_pod_affinity_hint_after_pod_change(pod, old, new, queue):
    assert inter_pod_affinity.is_schedulable_after_pod_change(pod, old, new) is queue


SPREAD = pending(labels={"app": "web"}, topology_spread_constraints=(
    TopologySpreadConstraint(1, "zone", DO_NOT_SCHEDULE, sel(app="web")),
    TopologySpreadConstraint(1, "node", DO_NOT_SCHEDULE, sel(tier="front"))))

SPREAD_CASES = [
    # (id, old, new, queue)
    ("add_matching_first_selector", None, other({"app": "web"}), True),
    ("add_matching_second_selector", None, other({"tier": "front"}), True),
    ("add_not_matching", None, other({"app": "db"}), False),
    ("add_unbound", None, other({"app": "web"}, node=""), False),
    ("add_other_namespace", None, other({"app": "web"}, namespace="other"), False),
    ("delete_matching", other({"app": "web"}), None, True),
    ("update_labels_unchanged", other({"app": "web"}), other({"app": "web"}), False),
    ("update_starts_matching", other({"app": "db"}), other({"app": "web"}), True),
    ("update_stops_matching", other({"app": "web"}), other({"app": "db"}), True),
    ("update_still_matching", other({"app": "web", "v": "1"}), other({"app": "web", "v": "2"}), False),
]


@pytest.mark.parametrize("old,new,queue", [c[1:] for c in SPREAD_CASES], ids=[c[0] for c in SPREAD_CASES])
def test_pod_topology_spread_hint_after_pod_change(old, new, queue):
    constraints = pod_topology_spread.filter_constraints(SPREAD.topology_spread_constraints, SPREAD.labels,
                                                         DO_NOT_SCHEDULE)
    assert pod_topology_spread.is_schedulable_after_pod_change(SPREAD, constraints, old, new) is queue
