"""The dry run (upstream's TestDryRunPreemption cases that translate) and pickOneNodeForPreemption
(TestSelectBestCandidate's rules), on the real filters; the spread and anti-affinity cases go node by
node, the others are columnar."""

from __future__ import annotations

import pytest

from ..cluster_objects import PodDisruptionBudget
from ..framework import SUCCESS, Algorithm, Handle, Profile
from ..labels import LabelSelector, LabelSelectorRequirement
from ..nodes import NodeSpec, NodeTable
from ..nominator import Nominator
from ..plugins.inter_pod_affinity import InterPodAffinity
from ..plugins.node_resources_fit import NodeResourcesFit
from ..plugins.pod_topology_spread import PodTopologySpread
from ..pods import Container, PodAffinity, PodAffinityTerm, PodSpec, TopologySpreadConstraint
from .evaluator import Evaluator
from .pick import Candidate, pick_one_node_for_preemption

LOW, MID, HIGH = 0, 100, 1000
SMALL = {"cpu": 100, "memory": 100}
MEDIUM = {"cpu": 200, "memory": 200}
LARGE = {"cpu": 300, "memory": 300}
VERY_LARGE = {"cpu": 500, "memory": 500}
NOW = 1000.0
EXISTS_FOO = LabelSelector.of(match_expressions=[LabelSelectorRequirement("foo", "Exists")])


def pod(name: str, priority: int = 0, req: dict | None = None, labels: dict | None = None, start: float | None = None,
        **kw) -> PodSpec:
    containers = (Container("c", requests=dict(req)),) if req else ()
    return PodSpec("default", name, uid=name, priority=priority, containers=containers, labels=labels or {},
                   start_time=start, **kw)


def dry_run(node_names, placed, incoming, *, filters=None, pdbs=(), offset=0, count=None, nominated=(),
            labels=None):
    """Schedule `incoming` (it must fit nowhere), then dry-run preemption with a fixed offset and count."""
    # As TestDryRunPreemption's nodes: veryLargeRes and 32 pods.
    t = NodeTable([NodeSpec(n, labels=(labels or {}).get(n, {}), allocatable={"pods": 32, **VERY_LARGE})
                   for n in node_names])
    for node_name, p in placed:
        t.add_pod(t.index[node_name], p)
    t.objects.pdbs = list(pdbs)
    nominator = Nominator()
    for node_name, p in nominated:
        nominator.add(p, node_name)
    profile = Profile(filters=filters or [NodeResourcesFit()])
    decision = Algorithm(seed=1, nominator=nominator).schedule(profile, incoming, t)
    assert not decision.scheduled
    evaluator = Evaluator(lambda p: (offset % p, p if count is None else count), clock=lambda: NOW)
    return evaluator.preempt(incoming, t, decision, Handle(profile, nominator))


def candidates(result) -> list[tuple[str, list[str], int]]:
    return [(c.node, [v.name for v in c.victims], c.num_pdb_violations) for c in result.detail.dry_run.candidates]


DRY_RUN = [
    dict(name="a pod that fits on both nodes when lower priority pods are preempted",
         nodes=["node1", "node2"], incoming=pod("p", HIGH, LARGE),
         placed=[("node1", pod("p1", MID, LARGE)), ("node2", pod("p2", MID, LARGE))],
         want=[("node1", ["p1"], 0), ("node2", ["p2"], 0)]),
    dict(name="medium priority pod is preempted, but lower priority one stays as it is small",
         nodes=["node1", "node2"], incoming=pod("p", HIGH, LARGE),
         placed=[("node1", pod("p1.1", LOW, SMALL)), ("node1", pod("p1.2", MID, LARGE)), ("node2", pod("p2", MID, LARGE))],
         want=[("node1", ["p1.2"], 0), ("node2", ["p2"], 0)]),
    # Upstream lists these victims sorted by name; ours are as found, the most important first.
    dict(name="mixed priority pods are preempted",
         nodes=["node1", "node2"], incoming=pod("p", HIGH, LARGE),
         placed=[("node1", pod("p1.1", MID, SMALL)), ("node1", pod("p1.2", LOW, SMALL)),
                 ("node1", pod("p1.3", MID, MEDIUM)), ("node1", pod("p1.4", HIGH, SMALL)),
                 ("node2", pod("p2", HIGH, LARGE))],
         want=[("node1", ["p1.3", "p1.2"], 0)]),
    dict(name="mixed priority pods are preempted, pick later StartTime one when priorities are equal",
         nodes=["node1", "node2"], incoming=pod("p", HIGH, LARGE),
         placed=[("node1", pod("p1.1", LOW, SMALL, start=5)), ("node1", pod("p1.2", LOW, SMALL, start=4)),
                 ("node1", pod("p1.3", MID, MEDIUM, start=3)), ("node1", pod("p1.4", HIGH, SMALL, start=2)),
                 ("node2", pod("p2", HIGH, LARGE, start=1))],
         want=[("node1", ["p1.3", "p1.1"], 0)]),
    dict(name="preemption with violation of same pdb",
         nodes=["node1"], incoming=pod("p", HIGH, VERY_LARGE),
         placed=[("node1", pod("p1.1", MID, MEDIUM, {"app": "foo"})), ("node1", pod("p1.2", MID, MEDIUM, {"app": "foo"}))],
         pdbs=[PodDisruptionBudget("default", "pdb", LabelSelector.of({"app": "foo"}), 1)],
         want=[("node1", ["p1.1", "p1.2"], 1)]),
    dict(name="violation of the pdb with a pod whose eviction was processed, the victim not in DisruptedPods",
         nodes=["node1"], incoming=pod("p", HIGH, VERY_LARGE),
         placed=[("node1", pod("p1.1", MID, MEDIUM, {"app": "foo"})), ("node1", pod("p1.2", MID, MEDIUM, {"app": "foo"}))],
         pdbs=[PodDisruptionBudget("default", "pdb", LabelSelector.of({"app": "foo"}), 1, frozenset({"p2"}))],
         want=[("node1", ["p1.1", "p1.2"], 1)]),
    dict(name="violation of the pdb with a pod whose eviction was processed, the victim in DisruptedPods",
         nodes=["node1"], incoming=pod("p", HIGH, VERY_LARGE),
         placed=[("node1", pod("p1.1", MID, MEDIUM, {"app": "foo"})), ("node1", pod("p1.2", MID, MEDIUM, {"app": "foo"}))],
         pdbs=[PodDisruptionBudget("default", "pdb", LabelSelector.of({"app": "foo"}), 1, frozenset({"p1.2"}))],
         want=[("node1", ["p1.1", "p1.2"], 0)]),
    dict(name="the victim in DisruptedPods is treated as non-violating",
         nodes=["node1"], incoming=pod("p", HIGH, VERY_LARGE),
         placed=[("node1", pod(f"p1.{i}", MID, MEDIUM, {"app": "foo"})) for i in (1, 2, 3)],
         pdbs=[PodDisruptionBudget("default", "pdb", LabelSelector.of({"app": "foo"}), 1, frozenset({"p1.3"}))],
         want=[("node1", ["p1.1", "p1.2", "p1.3"], 1)]),
    # cycle=0 => offset=4 => node5 (yes), node1 (yes): the stop after two candidates.
    dict(name="all nodes are possible candidates, but the count limits to 2",
         nodes=[f"node{i}" for i in range(1, 6)], incoming=pod("p", HIGH, LARGE),
         placed=[(f"node{i}", pod(f"p{i}", MID, LARGE)) for i in range(1, 6)], offset=4, count=2,
         want=[("node5", ["p5"], 0), ("node1", ["p1"], 0)]),
    dict(name="some nodes are not possible candidates, the count limits to 2",
         nodes=[f"node{i}" for i in range(1, 6)], incoming=pod("p", HIGH, LARGE),
         placed=[("node1", pod("p1", MID, LARGE)), ("node2", pod("p2", HIGH, LARGE)), ("node3", pod("p3", MID, LARGE)),
                 ("node4", pod("p4", HIGH, LARGE)), ("node5", pod("p5", MID, LARGE))], offset=1, count=2,
         want=[("node3", ["p3"], 0), ("node5", ["p5"], 0)]),
    # Violating candidates count towards the limit, but the run goes on until a non-violating one.
    dict(name="preemption offset across multiple scheduling cycles and wrap around, violating first found",
         nodes=[f"node{i}" for i in range(1, 5)], incoming=pod("p", HIGH, LARGE),
         placed=[("node1", pod("p1", MID, LARGE, {"app": "foo"})), ("node2", pod("p2", MID, LARGE, {"app": "foo"})),
                 ("node3", pod("p3", MID, LARGE)), ("node4", pod("p4", MID, LARGE))], offset=0, count=1,
         pdbs=[PodDisruptionBudget("default", "pdb", LabelSelector.of({"app": "foo"}), 0)],
         want=[("node3", ["p3"], 0), ("node1", ["p1"], 1)]),
]


@pytest.mark.parametrize("case", DRY_RUN, ids=[c["name"] for c in DRY_RUN])
def test_dry_run_preemption(case):
    result = dry_run(case["nodes"], case["placed"], case["incoming"], pdbs=case.get("pdbs", ()),
                     offset=case.get("offset", 0), count=case.get("count"))
    assert result.detail.columnar
    assert candidates(result) == case["want"]


def test_a_pod_that_would_fit_but_other_pods_are_higher_priority_gets_no_candidate():
    result = dry_run(["node1", "node2"], [("node1", pod("p1", MID, LARGE)), ("node2", pod("p2", MID, LARGE))],
                     pod("p", LOW, LARGE))
    assert candidates(result) == []
    assert result.message == "0/2 nodes are available: 2 No preemption victims found for incoming pod."


def test_pod_with_anti_affinity_is_preempted_node_by_node():
    anti = PodAffinity(required=(PodAffinityTerm("hostname", EXISTS_FOO),))
    placed = [("node1", pod("p1.1", LOW, SMALL, {"foo": ""}, pod_anti_affinity=anti)),
              ("node1", pod("p1.2", MID, SMALL)), ("node1", pod("p1.3", HIGH, SMALL)),
              ("node2", pod("p2", HIGH, VERY_LARGE))]
    result = dry_run(["node1", "node2"], placed, pod("p", HIGH, SMALL, {"foo": ""}),
                     filters=[NodeResourcesFit(), InterPodAffinity()],
                     labels={"node1": {"hostname": "node1"}, "node2": {"hostname": "node2"}})
    assert not result.detail.columnar
    assert candidates(result) == [("node1", ["p1.1"], 0)]
    assert (result.code, result.nominated_node) == (SUCCESS, "node1")


def test_preemption_resolves_a_pod_topology_spread_failure():
    labels = {"node-a": {"zone": "zone1", "hostname": "node-a"}, "node-b": {"zone": "zone1", "hostname": "node-b"},
              "node-x": {"zone": "zone2", "hostname": "node-x"}}
    foo = {"foo": ""}
    incoming = pod("p", HIGH, labels=foo, topology_spread_constraints=(
        TopologySpreadConstraint(1, "zone", label_selector=EXISTS_FOO),
        TopologySpreadConstraint(1, "hostname", label_selector=EXISTS_FOO)))
    placed = [("node-a", pod("pod-a1", MID, labels=foo)), ("node-a", pod("pod-a2", LOW, labels=foo)),
              ("node-b", pod("pod-b1", LOW, labels=foo)), ("node-x", pod("pod-x1", HIGH, labels=foo)),
              ("node-x", pod("pod-x2", HIGH, labels=foo))]
    result = dry_run(["node-a", "node-b", "node-x"], placed, incoming, filters=[PodTopologySpread()], labels=labels)
    assert not result.detail.columnar
    assert candidates(result) == [("node-a", ["pod-a2"], 0), ("node-b", ["pod-b1"], 0)]


def test_the_dry_run_counts_nominated_pods_of_equal_or_higher_priority():
    # node1's room is promised to a nominated pod of the same priority: only node2 can be a candidate.
    placed = [("node1", pod("p1", MID, LARGE)), ("node2", pod("p2", MID, LARGE))]
    result = dry_run(["node1", "node2"], placed, pod("p", HIGH, LARGE), nominated=[("node1", pod("n", HIGH, LARGE))])
    assert candidates(result) == [("node2", ["p2"], 0)]
    # A nominated pod of lower priority does not hold the room.
    result = dry_run(["node1", "node2"], placed, pod("p", HIGH, LARGE), nominated=[("node1", pod("n", MID, LARGE))])
    assert candidates(result) == [("node1", ["p1"], 0), ("node2", ["p2"], 0)]


def test_the_dry_run_leaves_the_table_as_it_was():
    placed = [("node1", pod("p1", MID, LARGE)), ("node2", pod("p2", MID, LARGE))]
    t = NodeTable([NodeSpec(n, allocatable={"pods": 32, **VERY_LARGE}) for n in ("node1", "node2")])
    for node_name, p in placed:
        t.add_pod(t.index[node_name], p)
    before = [t.usage_of(r) for r in range(t.n)], sorted(t.pods.pods())
    profile = Profile(filters=[NodeResourcesFit()])
    incoming = pod("p", HIGH, LARGE)
    decision = Algorithm(seed=1).schedule(profile, incoming, t)
    for node_by_node in (False, True):
        Evaluator(lambda p: (0, p), clock=lambda: NOW, node_by_node=node_by_node).preempt(
            incoming, t, decision, Handle(profile))
        assert ([t.usage_of(r) for r in range(t.n)], sorted(t.pods.pods())) == before


# ---- pickOneNodeForPreemption (TestSelectBestCandidate's rules, one at a time) ------------------

def cand(node: str, *victims: PodSpec, violations: int = 0) -> Candidate:
    return Candidate(node, 0, tuple(victims), violations)


PICK = [
    ("fewest PDB violations", [cand("a", pod("x", LOW), violations=2), cand("b", pod("y", HIGH), violations=1)], "b"),
    ("lowest highest-victim priority", [cand("a", pod("x", HIGH)), cand("b", pod("y", MID), pod("z", MID))], "b"),
    ("smallest sum of priorities", [cand("a", pod("x", MID), pod("y", MID)), cand("b", pod("z", MID), pod("w", LOW))], "b"),
    ("negative priorities: more victims is a larger sum (the 2^31 shift)",
     [cand("a", pod("x", -5), pod("y", -5)), cand("b", pod("z", -5))], "b"),
    ("fewest victims", [cand("a", pod("x", MID), pod("y", 0), pod("z", 0)),
                        cand("b", pod("w", MID), pod("v", 0))], "b"),
    ("latest start among the highest-priority victims",
     [cand("a", pod("x", MID, start=5), pod("y", LOW, start=100)), cand("b", pod("z", MID, start=7), pod("w", LOW, start=1))],
     "b"),
    ("a victim that has not started reads as now (the latest)",
     [cand("a", pod("x", MID, start=5)), cand("b", pod("z", MID))], "b"),
    ("all tied: the first found", [cand("a", pod("x", MID, start=5)), cand("b", pod("z", MID, start=5))], "a"),
]


@pytest.mark.parametrize("name,cands,want", PICK, ids=[p[0] for p in PICK])
def test_pick_one_node_for_preemption(name, cands, want):
    assert pick_one_node_for_preemption(cands, NOW).node == want


def test_pick_with_no_candidates_is_none():
    assert pick_one_node_for_preemption([], NOW) is None
