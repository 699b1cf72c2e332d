"""The nominator (backend/queue/nominator.go), the filters counting nominated pods
(RunFilterPluginsWithNominatedPods: two passes, each node with its own nominated pods), the
nominated node tried first (evaluateNominatedNode), and a preemption cycle end to end through
schedule_one: nominate, evict, the room held against a lower-priority pod, the preemptor placed."""

from __future__ import annotations

from .cache import Cache
from .framework import Algorithm, Profile
from .labels import LabelSelector
from .nodes import NodeSpec, NodeTable
from .nominator import Nominator
from .plugins.default_preemption import DefaultPreemption
from .plugins.inter_pod_affinity import InterPodAffinity
from .plugins.node_resources_fit import NodeResourcesFit
from .plugins.pod_topology_spread import PodTopologySpread
from .pods import Container, PodAffinity, PodAffinityTerm, PodSpec, TopologySpreadConstraint
from .schedule_one import SCHEDULED, UNSCHEDULABLE, schedule_one


def pod(name: str, priority: int = 0, cpu: int = 0, labels: dict | None = None, **kw) -> PodSpec:
    containers = (Container("c", requests={"cpu": cpu}),) if cpu else ()
    return PodSpec("default", name, uid=name, priority=priority, containers=containers, labels=labels or {}, **kw)


def nodes(*names: str, cpu: int = 1000, labels: dict | None = None) -> NodeTable:
    return NodeTable([NodeSpec(n, labels=(labels or {}).get(n, {}), allocatable={"cpu": cpu, "pods": 110})
                      for n in names])


# ---- the nominator ------------------------------------------------------------------------------

def test_a_pod_is_nominated_by_its_status_or_by_an_override_and_only_once():
    nom = Nominator()
    nom.add(pod("a", nominated_node_name="n1"))
    nom.add(pod("b"), "n2")
    nom.add(pod("b"), "n1")  # moved, not duplicated
    assert [p.name for p in nom.pods_for_node("n1")] == ["a", "b"]
    assert nom.pods_for_node("n2") == [] and len(nom) == 2
    nom.add(pod("a", nominated_node_name="n1"), "")  # an override with "" clears it
    assert nom.node_of("default/a") is None and len(nom) == 1


def test_a_bound_pod_or_one_without_a_nomination_is_not_kept():
    nom = Nominator()
    nom.add(pod("a", node_name="n1", nominated_node_name="n1"))
    nom.add(pod("b"))
    assert len(nom) == 0


def test_an_update_without_a_nomination_on_either_side_keeps_the_node_nominated_in_memory():
    nom = Nominator()
    nom.add(pod("a"), "n1")
    nom.update(pod("a"), pod("a", labels={"v": "2"}))
    assert nom.node_of("default/a") == "n1"
    assert nom.pods_for_node("n1")[0].labels == {"v": "2"}  # the stored pod is the new one
    nom.update(pod("a"), pod("a", nominated_node_name="n2"))
    assert nom.node_of("default/a") == "n2"


def test_only_nominated_pods_of_equal_or_higher_priority_count_and_never_the_pod_itself():
    t = nodes("n1", "n2")
    nom = Nominator()
    nom.add(pod("high", 10), "n1")
    nom.add(pod("same", 5), "n2")
    nom.add(pod("low", 1), "n2")
    nom.add(pod("gone", 10), "n9")  # a node not in the table
    nom.add(pod("me", 5), "n1")
    counted = [(row, p.name) for row, p in nom.counted_for(pod("me", 5), t)]
    assert sorted(counted) == [(0, "high"), (1, "same")]


# ---- filtering with nominated pods --------------------------------------------------------------

def test_room_held_for_a_nominated_pod_of_higher_priority_is_not_given_to_another():
    t = nodes("n1", "n2")
    t.add_pod(1, pod("busy", 0, 800))
    nom = Nominator()
    nom.add(pod("preemptor", 100, 600), "n1")
    decision = Algorithm(seed=1, nominator=nom).schedule(Profile(filters=[NodeResourcesFit()]), pod("p", 10, 500), t)
    assert not decision.scheduled
    assert decision.nominated_pods_counted == 1
    assert decision.fit_error_message() == "0/2 nodes are available: 2 Insufficient cpu."
    # A pod of higher priority than the nominated one may take the room.
    decision = Algorithm(seed=1, nominator=nom).schedule(Profile(filters=[NodeResourcesFit()]), pod("q", 200, 500), t)
    assert decision.scheduled and t.names[decision.selected_row] == "n1"


def test_affinity_to_a_nominated_pod_does_not_count_it_as_running():
    # Pass one (nominated pod added) satisfies the affinity; pass two (without it) does not, so the node fails.
    hostnames = {"n1": {"hostname": "n1"}, "n2": {"hostname": "n2"}}
    t = nodes("n1", "n2", labels=hostnames)
    nom = Nominator()
    nom.add(pod("web", 100, labels={"app": "web"}), "n1")
    affinity = PodAffinity(required=(PodAffinityTerm("hostname", LabelSelector.of({"app": "web"})),))
    decision = Algorithm(seed=1, nominator=nom).schedule(
        Profile(filters=[NodeResourcesFit(), InterPodAffinity()]), pod("p", 10, pod_affinity=affinity), t)
    assert not decision.scheduled
    assert decision.reason_histogram() == {"node(s) didn't match pod affinity rules": 2}


def test_each_node_sees_only_its_own_nominated_pods_in_a_topology_domain():
    # As addGeneratedNominatedPods, node by node: n1 sees one nominated pod in zone z1 (skew 1+1-0 = 2,
    # allowed); seeing both nominated pods of z1 at once (skew 3) would wrongly reject it.
    zones = {"n1": {"zone": "z1"}, "n2": {"zone": "z1"}, "n3": {"zone": "z2"}}
    t = nodes("n1", "n2", "n3", labels=zones)
    nom = Nominator()
    nom.add(pod("a", 100, labels={"app": "x"}), "n1")
    nom.add(pod("b", 100, labels={"app": "x"}), "n2")
    incoming = pod("p", 10, labels={"app": "x"}, topology_spread_constraints=(
        TopologySpreadConstraint(2, "zone", label_selector=LabelSelector.of({"app": "x"})),))
    algorithm = Algorithm(seed=1, nominator=nom)
    decision = algorithm.schedule(Profile(filters=[PodTopologySpread()]), incoming, t, all_nodes=True)
    assert (decision.rejected_by == -1).all()


def test_the_nominated_node_is_taken_when_it_passes_without_moving_the_round_robin():
    t = nodes("n1", "n2", "n3")
    t.add_pod(2, pod("x", 0, 900))
    algorithm = Algorithm(seed=1)
    profile = Profile(filters=[NodeResourcesFit()], scores=[(NodeResourcesFit(), 1)])
    decision = algorithm.schedule(profile, pod("p", 0, 100, nominated_node_name="n3"), t)
    assert decision.nominated_node_taken and t.names[decision.selected_row] == "n3"
    assert algorithm.next_start_node_index == 0
    # A nominated node that no longer fits is looked past.
    decision = algorithm.schedule(profile, pod("q", 0, 500, nominated_node_name="n3"), t)
    assert not decision.nominated_node_taken and t.names[decision.selected_row] != "n3"


# ---- a preemption cycle through schedule_one ----------------------------------------------------

def test_a_preemptor_is_nominated_holds_the_room_and_then_lands_on_its_node():
    t = nodes("n1", "n2")
    t.add_pod(0, pod("victim", 0, 800))
    t.add_pod(1, pod("important", 500, 800))
    cache = Cache(t)
    profile = Profile(filters=[NodeResourcesFit()], scores=[(NodeResourcesFit(), 1)],
                      post_filters=[DefaultPreemption(seed=0, clock=lambda: 0.0)])
    algorithm = Algorithm(seed=1, nominator=Nominator())

    first = schedule_one(pod("preemptor", 100, 600), profile=profile, algorithm=algorithm, cache=cache)
    assert first.status == UNSCHEDULABLE
    assert (first.nominated_node, [v.name for v in first.victims]) == ("n1", ["victim"])
    assert first.message == "0/2 nodes are available: 2 Insufficient cpu."
    assert algorithm.nominator.node_of("default/preemptor") == "n1"

    # The victim goes; a pod of lower priority arriving meanwhile does not get the freed room.
    t.remove_pod(0, pod("victim", 0, 800))
    other = schedule_one(pod("other", 50, 600), profile=profile, algorithm=algorithm, cache=cache)
    assert other.status == UNSCHEDULABLE
    assert other.message.startswith("0/2 nodes are available: 2 Insufficient cpu. preemption: ")

    # The preemptor comes back with status.nominatedNodeName set and lands there.
    again = schedule_one(pod("preemptor", 100, 600, nominated_node_name="n1"), profile=profile,
                         algorithm=algorithm, cache=cache)
    assert (again.status, again.node_name) == (SCHEDULED, "n1")
    assert again.decision.nominated_node_taken
    assert algorithm.nominator.node_of("default/preemptor") is None


def test_a_preemption_clears_the_nominations_of_lower_priority_pods_on_the_chosen_node():
    t = nodes("n1")
    t.add_pod(0, pod("victim", 0, 900))
    cache = Cache(t)
    profile = Profile(filters=[NodeResourcesFit()], post_filters=[DefaultPreemption(seed=0, clock=lambda: 0.0)])
    algorithm = Algorithm(seed=1, nominator=Nominator())
    algorithm.nominator.add(pod("waiting", 5, 100), "n1")
    result = schedule_one(pod("preemptor", 100, 600), profile=profile, algorithm=algorithm, cache=cache)
    assert result.nominated_node == "n1"
    assert [p.name for p in result.cleared_nominations] == ["waiting"]
    assert algorithm.nominator.node_of("default/waiting") is None
    assert algorithm.nominator.node_of("default/preemptor") == "n1"
