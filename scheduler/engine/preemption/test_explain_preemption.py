"""explain.preemption: the PostFilter outcome as the `explain --preempt` JSON and the Attempt page read it."""

from __future__ import annotations

from ..cluster_objects import PodDisruptionBudget
from ..explain import preemption
from ..framework import Algorithm, Handle, Profile, run_post_filter_plugins
from ..labels import LabelSelector
from ..nodes import NodeSpec, NodeTable
from ..plugins.default_preemption import DefaultPreemption
from ..plugins.node_resources_fit import NodeResourcesFit
from ..plugins.taint_toleration import TaintToleration
from ..pods import NO_SCHEDULE, Container, PodSpec, Taint


def pod(name: str, priority: int, cpu: int, labels: dict | None = None) -> PodSpec:
    return PodSpec("default", name, priority=priority, labels=labels or {},
                   containers=(Container("c", requests={"cpu": cpu}),))


def run(t: NodeTable, incoming: PodSpec):
    profile = Profile(filters=[TaintToleration(), NodeResourcesFit()],
                      post_filters=[DefaultPreemption(seed=0, clock=lambda: 0.0)])
    decision = Algorithm(seed=1).schedule(profile, incoming, t)
    decision.post_filter = run_post_filter_plugins(Handle(profile), incoming, t, decision)
    return decision


def cluster() -> NodeTable:
    t = NodeTable([NodeSpec(f"n{i}", allocatable={"cpu": 1000, "pods": 110},
                            taints=(Taint("k", "v", NO_SCHEDULE),) if i == 3 else ()) for i in range(4)])
    t.add_pod(0, pod("guarded", 0, 900, {"app": "db"}))
    t.add_pod(1, pod("cheap", 0, 900))
    t.add_pod(2, pod("vip", 100, 900))
    t.objects.pdbs = [PodDisruptionBudget("default", "db", LabelSelector.of({"app": "db"}), 0)]
    return t


def test_it_names_the_chosen_node_the_victims_and_the_candidates_weighed():
    out = preemption(run(cluster(), pod("p", 50, 500)))
    assert out["nominated"] == "n1" and out["victims"] == ["default/cheap"]
    assert out["message"] == "" and out["code"] == "Success" and out["plugin"] == "DefaultPreemption"
    assert out["potential_nodes"] == 3 and out["examined"] == 3
    assert out["candidates"] == [{"node": "n1", "victims": ["default/cheap"], "pdb_violations": 0},
                                 {"node": "n0", "victims": ["default/guarded"], "pdb_violations": 1}]
    assert out["rejected"] == [{"reasons": ["No preemption victims found for incoming pod"], "nodes": ["n2"]}]


def test_a_failed_preemption_has_no_nomination_and_upstreams_message():
    out = preemption(run(cluster(), pod("p", 0, 500)))
    assert out["nominated"] is None and out["victims"] == []
    assert out["message"] == ("preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, "
                              "3 No preemption victims found for incoming pod.")
    assert out["candidates"] == []


def test_lists_are_bounded():
    out = preemption(run(cluster(), pod("p", 50, 500)), max_candidates=1, max_nodes=0)
    assert [c["node"] for c in out["candidates"]] == ["n1"] and out["candidates_omitted"] == 1
    assert out["rejected"] == [{"reasons": ["No preemption victims found for incoming pod"], "nodes": [], "omitted": 1}]


def test_no_post_filter_no_preemption_section():
    t = cluster()
    decision = Algorithm(seed=1).schedule(Profile(filters=[NodeResourcesFit()]), pod("p", 50, 500), t)
    assert preemption(decision) is None
