"""Which waiting pods the assigned-pod hints move, and under which event: only those whose last failure
names InterPodAffinity's or PodTopologySpread's reasons, and only when that plugin's hint queues them."""

import pytest

from scheduler.engine.labels import LabelSelector
from scheduler.engine.pods import DO_NOT_SCHEDULE, PodAffinity, PodAffinityTerm, PodSpec, TopologySpreadConstraint
from scheduler.engine.queueing_hints import PodChange, assigned, keys_to_move

AFFINITY_FAIL = "0/2 nodes are available: 2 node(s) didn't match pod affinity rules."
SPREAD_FAIL = "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints."
FIT_FAIL = "0/2 nodes are available: 2 Insufficient cpu."
CACHE = LabelSelector(match_labels=(("app", "cache"),))

WANTS_CACHE = PodSpec(namespace="default", name="front", uid="f", pod_affinity=PodAffinity(
    required=(PodAffinityTerm("zone", CACHE),)))
SPREADS_CACHE = PodSpec(namespace="default", name="spread", uid="s", labels={"app": "cache"},
                        topology_spread_constraints=(TopologySpreadConstraint(1, "zone", DO_NOT_SCHEDULE, CACHE),))
NO_OWN_CONSTRAINTS = PodSpec(namespace="default", name="defaulted", uid="d")

BOUND_CACHE = PodChange(assigned("default", "cache", "c", "n1", {"app": "cache"}))
BOUND_WEB = PodChange(assigned("default", "web", "w", "n1", {"app": "web"}))
RELABELLED_CACHE = PodChange(assigned("default", "db", "b", "n1", {"app": "cache"}),
                             assigned("default", "db", "b", "n1", {"app": "db"}))

CASES = [
    # (id, waiting (key, message, spec), changes, expected)
    ("affinity_pod_moves_on_matching_add", ("default/front", AFFINITY_FAIL, WANTS_CACHE), [BOUND_CACHE],
     {"AssignedPodAdd": ["default/front"]}),
    ("affinity_pod_stays_on_unrelated_add", ("default/front", AFFINITY_FAIL, WANTS_CACHE), [BOUND_WEB], {}),
    ("same_pod_rejected_by_fit_only_stays", ("default/front", FIT_FAIL, WANTS_CACHE), [BOUND_CACHE], {}),
    ("affinity_pod_moves_on_relabel", ("default/front", AFFINITY_FAIL, WANTS_CACHE), [BOUND_WEB, RELABELLED_CACHE],
     {"AssignedPodUpdate": ["default/front"]}),
    ("spread_pod_moves_on_matching_add", ("default/spread", SPREAD_FAIL, SPREADS_CACHE), [BOUND_CACHE],
     {"AssignedPodAdd": ["default/spread"]}),
    ("spread_pod_stays_on_unrelated_add", ("default/spread", SPREAD_FAIL, SPREADS_CACHE), [BOUND_WEB], {}),
    ("default_constraints_move_without_asking", ("default/defaulted", SPREAD_FAIL, NO_OWN_CONSTRAINTS), [BOUND_WEB],
     {"AssignedPodAdd": ["default/defaulted"]}),
]


@pytest.mark.parametrize("waiting,changes,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_keys_to_move_asks_the_rejecting_plugins_hints(waiting, changes, expected):
    key, message, spec = waiting
    assert keys_to_move([(key, message)], {key: spec}, changes) == expected


def test_a_waiting_pod_whose_row_is_gone_is_not_moved():
    assert keys_to_move([("default/front", AFFINITY_FAIL)], {}, [BOUND_CACHE]) == {}
