"""DefaultPreemption's PostFilter, table-driven from upstream's TestPostFilter and
TestPodEligibleToPreemptOthers (default_preemption_test.go), its args and their validation.

Upstream hands PostFilter a made-up NodeToStatus; here the statuses come from running the real
filters (the end-to-end cases), or are injected into the Decision where upstream's case needs a
status our filters would not give (a node whose request exceeds its allocatable is
UnschedulableAndUnresolvable in master, so upstream's "Insufficient cpu" cases inject it).
"""

from __future__ import annotations

import numpy as np
import pytest

from ..cluster_objects import PodDisruptionBudget
from ..framework import (
    SUCCESS,
    UNSCHEDULABLE,
    UNSCHEDULABLE_AND_UNRESOLVABLE,
    Algorithm,
    Decision,
    FilterResult,
    Handle,
    Profile,
    run_post_filter_plugins,
)
from ..labels import LabelSelector
from ..nodes import NodeSpec, NodeTable
from ..pods import NO_SCHEDULE, POD_REASON_PREEMPTION_BY_SCHEDULER, PREEMPT_NEVER, Container, PodSpec, Taint
from .default_preemption import DefaultPreemption, DefaultPreemptionArgs, aggregate_error, validate_default_preemption_args
from .node_ports import NodePorts
from .node_resources_fit import NodeResourcesFit
from .node_unschedulable import NodeUnschedulable
from .taint_toleration import TaintToleration

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": 100, "memory": 100}
MEDIUM = {"cpu": 200, "memory": 200}
LARGE = {"cpu": 300, "memory": 300}
VERY_LARGE = {"cpu": 500, "memory": 500}
ONE_POD = {"pods": 1}
NODE_RES = {"cpu": 200, "memory": 400}
NOW = 1_000_000.0


def node(name: str, capacity: dict, taints=()) -> NodeSpec:
    # As st.MakeNode().Capacity(): 32 pods unless the capacity says otherwise.
    return NodeSpec(name, allocatable={"pods": 32, **capacity}, taints=tuple(taints))


def pod(name: str, priority: int = 0, req: dict | None = None, labels: dict | None = None, **kw) -> PodSpec:
    containers = (Container("c", requests=dict(req)),) if req else ()
    return PodSpec("default", name, uid=name, priority=priority, containers=containers, labels=labels or {}, **kw)


def profile() -> Profile:
    return Profile(filters=[NodeUnschedulable(), TaintToleration(), NodePorts(), NodeResourcesFit()],
                   post_filters=[DefaultPreemption(seed=0, clock=lambda: NOW)])


def table(nodes, placed, pdbs=()) -> NodeTable:
    t = NodeTable(nodes)
    for node_name, p in placed:
        t.add_pod(t.index[node_name], p)
    t.objects.pdbs = list(pdbs)
    return t


def injected(t: NodeTable, statuses: dict[str, str]) -> Decision:
    """A Decision whose node statuses are given (upstream's filteredNodesStatuses); nodes not named are
    absent (UnschedulableAndUnresolvable, as NewNodeToStatus's default)."""
    n = t.n
    rejected = np.zeros(n, dtype=bool)
    unresolvable = np.ones(n, dtype=bool)
    for name, code in statuses.items():
        rejected[t.index[name]] = True
        unresolvable[t.index[name]] = code == UNSCHEDULABLE_AND_UNRESOLVABLE
    rejected_by = np.where(rejected, 0, -2)
    result = FilterResult(~rejected, [("injected", rejected)], unresolvable_rows=unresolvable)
    return Decision("default/p", n, np.zeros(0, dtype=np.int64), rejected_by, ["Injected"], [result])


def post_filter(t: NodeTable, p: PodSpec, decision: Decision | None = None):
    prof = profile()
    if decision is None:
        decision = Algorithm(seed=1).schedule(prof, p, t)
        assert not decision.scheduled
    return run_post_filter_plugins(Handle(prof), p, t, decision)


# ---- TestPostFilter, end to end (the statuses our filters give) --------------------------------

END_TO_END = [
    dict(name="pod with higher priority can be made schedulable",
         pod=pod("p", HIGH), nodes=[node("node1", ONE_POD)], pods=[("node1", pod("p1"))],
         code=SUCCESS, nominated="node1", victims=["p1"], message=""),
    dict(name="pod with tied priority is still unschedulable",
         pod=pod("p"), nodes=[node("node1", ONE_POD)], pods=[("node1", pod("p1"))],
         code=UNSCHEDULABLE, nominated="", victims=[],
         message="preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."),
    dict(name="preemption should respect filteredNodesStatuses (an untolerated taint is unresolvable)",
         pod=pod("p", HIGH), nodes=[node("node1", ONE_POD, [Taint("k", "v", NO_SCHEDULE)])], pods=[("node1", pod("p1"))],
         code=UNSCHEDULABLE, nominated="", victims=[],
         message="preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."),
    dict(name="pod can be made schedulable on one node",
         pod=pod("p", MID), nodes=[node("node1", ONE_POD), node("node2", ONE_POD)],
         pods=[("node1", pod("p1", HIGH)), ("node2", pod("p2", LOW))],
         code=SUCCESS, nominated="node2", victims=["p2"], message=""),
    dict(name="pod can be made schedulable on minHighestPriority node",
         pod=pod("p", VERY_HIGH), nodes=[node("node1", ONE_POD), node("node2", ONE_POD)],
         pods=[("node1", pod("p1", HIGH, labels={"pdb": "non-violating"})),
               ("node1", pod("p2", LOW, labels={"pdb": "violating"})),
               ("node2", pod("p3", MID, labels={"pdb": "violating"}))],
         pdbs=[PodDisruptionBudget("default", "violating-pdb", LabelSelector.of({"pdb": "violating"}), 0),
               PodDisruptionBudget("default", "non-violating-pdb", LabelSelector.of({"pdb": "non-violating"}), 2**31 - 1)],
         code=SUCCESS, nominated="node2", victims=["p3"], message=""),
    dict(name="a request above every node's allocatable: preemption cannot help (master's Unresolvable)",
         pod=pod("p", HIGH, LARGE), nodes=[node("node1", NODE_RES), node("node2", NODE_RES)],
         pods=[("node1", pod("p1")), ("node2", pod("p2"))],
         code=UNSCHEDULABLE, nominated="", victims=[],
         message="preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."),
]


@pytest.mark.parametrize("case", END_TO_END, ids=[c["name"] for c in END_TO_END])
def test_post_filter(case):
    t = table(case["nodes"], case["pods"], case.get("pdbs", ()))
    result = post_filter(t, case["pod"])
    assert result.code == case["code"]
    assert result.message == case["message"]
    assert result.nominated_node == case["nominated"]
    assert [v.name for v in result.victims] == case["victims"]
    assert result.plugin == "DefaultPreemption"


# ---- TestPostFilter, with upstream's injected statuses ----------------------------------------

INJECTED = [
    dict(name="no candidate nodes found, no enough resource after removing low priority pods",
         pod=pod("p", HIGH, LARGE), nodes=[node("node1", NODE_RES), node("node2", NODE_RES)],
         pods=[("node1", pod("p1")), ("node2", pod("p2"))],
         statuses={"node1": UNSCHEDULABLE, "node2": UNSCHEDULABLE},
         message="preemption: 0/2 nodes are available: 2 Insufficient cpu."),
    dict(name="no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
         pod=pod("p", HIGH, LARGE), nodes=[node("node1", ONE_POD), node("node2", NODE_RES), node("node3", ONE_POD)],
         pods=[("node1", pod("p1", HIGH)), ("node2", pod("p2")), ("node3", pod("p3", HIGH))],
         statuses={"node1": UNSCHEDULABLE, "node2": UNSCHEDULABLE, "node3": UNSCHEDULABLE},
         message="preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod."),
    dict(name="no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes don't have enough CPU resource",
         pod=pod("p", HIGH, LARGE), nodes=[node(f"node{i}", NODE_RES) for i in range(1, 5)],
         pods=[("node1", pod("p1")), ("node2", pod("p2"))],
         statuses={"node1": UNSCHEDULABLE, "node2": UNSCHEDULABLE, "node4": UNSCHEDULABLE_AND_UNRESOLVABLE},
         message="preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling."),
]


@pytest.mark.parametrize("case", INJECTED, ids=[c["name"] for c in INJECTED])
def test_post_filter_with_upstreams_statuses(case):
    t = table(case["nodes"], case["pods"])
    result = post_filter(t, case["pod"], injected(t, case["statuses"]))
    assert (result.code, result.message, result.nominated_node) == (UNSCHEDULABLE, case["message"], "")


def test_the_failed_scheduling_message_ends_with_the_preemption_part():
    t = table([node("node1", ONE_POD)], [("node1", pod("p1"))])
    prof = profile()
    p = pod("p")
    decision = Algorithm(seed=1).schedule(prof, p, t)
    decision.post_filter = run_post_filter_plugins(Handle(prof), p, t, decision)
    assert decision.fit_error_message() == (
        "0/1 nodes are available: 1 Too many pods. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")


def test_a_successful_preemption_adds_nothing_to_the_message():
    t = table([node("node1", ONE_POD)], [("node1", pod("p1"))])
    prof = profile()
    p = pod("p", HIGH)
    decision = Algorithm(seed=1).schedule(prof, p, t)
    decision.post_filter = run_post_filter_plugins(Handle(prof), p, t, decision)
    assert decision.post_filter.nominated_node == "node1"
    assert decision.fit_error_message() == "0/1 nodes are available: 1 Too many pods."


# ---- TestPodEligibleToPreemptOthers -------------------------------------------------------------

def terminating(name: str, priority: int, by_scheduler: bool = True) -> PodSpec:
    return pod(name, priority, deleting=True,
               disruption_target_reason=POD_REASON_PREEMPTION_BY_SCHEDULER if by_scheduler else "")


ELIGIBILITY = [
    dict(name="Pod with nominated node", pod=pod("p", HIGH, nominated_node_name="node1"),
         pods=[], statuses={"node1": UNSCHEDULABLE}, eligible=True, message=""),
    dict(name="Pod with nominated node, but without nominated node status",
         pod=pod("p", HIGH, nominated_node_name="node1"), pods=[], statuses={}, eligible=True, message=""),
    dict(name="Pod without nominated node", pod=pod("p", HIGH), pods=[], statuses={}, eligible=True, message=""),
    dict(name="Pod with 'PreemptNever' preemption policy", pod=pod("p", HIGH, preemption_policy=PREEMPT_NEVER),
         pods=[], statuses={}, eligible=False, message="not eligible due to preemptionPolicy=Never."),
    dict(name="victim Pods are still terminating", pod=pod("p", HIGH, nominated_node_name="node1"),
         pods=[("node1", terminating("p1", LOW))], statuses={"node1": UNSCHEDULABLE}, eligible=False,
         message="not eligible due to a terminating pod on the nominated node."),
    dict(name="non-victim Pods are still terminating", pod=pod("p", LOW, nominated_node_name="node1"),
         pods=[("node1", terminating("p1", HIGH))], statuses={"node1": UNSCHEDULABLE}, eligible=True, message=""),
    dict(name="victim Pods are terminating, but not by the scheduler's preemption",
         pod=pod("p", HIGH, nominated_node_name="node1"), pods=[("node1", terminating("p1", LOW, by_scheduler=False))],
         statuses={"node1": UNSCHEDULABLE}, eligible=True, message=""),
    dict(name="victim Pods are still terminating but the nominated node is UnschedulableAndUnresolvable",
         pod=pod("p", HIGH, nominated_node_name="node1"), pods=[("node1", terminating("p1", LOW))],
         statuses={"node1": UNSCHEDULABLE_AND_UNRESOLVABLE}, eligible=True, message=""),
]


@pytest.mark.parametrize("case", ELIGIBILITY, ids=[c["name"] for c in ELIGIBILITY])
def test_pod_eligible_to_preempt_others(case):
    t = table([node("node1", ONE_POD)], case["pods"])
    plugin = DefaultPreemption(seed=0, clock=lambda: NOW)
    assert plugin.evaluator.eligible(case["pod"], t, injected(t, case["statuses"])) == (case["eligible"], case["message"])


def test_an_ineligible_pod_keeps_its_nomination_and_gets_the_prefixed_message():
    t = table([node("node1", ONE_POD)], [("node1", terminating("p1", LOW))])
    p = pod("p", HIGH, nominated_node_name="node1")
    result = post_filter(t, p, injected(t, {"node1": UNSCHEDULABLE}))
    assert (result.code, result.nominated_node) == (UNSCHEDULABLE, None)
    assert result.message == "preemption: not eligible due to a terminating pod on the nominated node."


# ---- args: calculateNumCandidates, GetOffsetAndNumCandidates, validation ------------------------

@pytest.mark.parametrize("pct,absolute,nodes,want", [
    (5, 50, 10, 10),      # "no nodes": the absolute number, capped at the node count
    (10, 100, 0, 0),      # no nodes
    (10, 100, 10000, 1000),
    (5, 50, 10000, 500),  # percentage above the absolute
    (5, 500, 10000, 500),
    (0, 10, 30, 10),      # percentage zero, absolute only
    (10, 0, 30, 3),       # absolute zero
    (100, 100, 10000, 10000),
])
def test_calculate_num_candidates(pct, absolute, nodes, want):
    plugin = DefaultPreemption(DefaultPreemptionArgs(pct, absolute))
    assert plugin.calculate_num_candidates(nodes) == want


def test_the_offset_is_random_among_the_potential_nodes_and_seedable():
    a = [DefaultPreemption(seed=7).get_offset_and_num_candidates(1000) for _ in range(3)]
    assert a[0] == a[1] == a[2]
    offsets = {DefaultPreemption(seed=s).get_offset_and_num_candidates(1000)[0] for s in range(50)}
    assert len(offsets) > 40 and all(0 <= o < 1000 for o in offsets)
    assert DefaultPreemption(seed=7).get_offset_and_num_candidates(1000)[1] == 100


@pytest.mark.parametrize("args,want", [
    (DefaultPreemptionArgs(10, 100), []),
    (DefaultPreemptionArgs(-1, 100),
     [("minCandidateNodesPercentage", "Invalid value: -1: not in valid range [0, 100]")]),
    (DefaultPreemptionArgs(900, 100),
     [("minCandidateNodesPercentage", "Invalid value: 900: not in valid range [0, 100]")]),
    (DefaultPreemptionArgs(20, -1),
     [("minCandidateNodesAbsolute", "Invalid value: -1: not in valid range [0, inf)")]),
    (DefaultPreemptionArgs(0, 0),
     [("minCandidateNodesPercentage", "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"),
      ("minCandidateNodesAbsolute", "Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage")]),
    (DefaultPreemptionArgs(1000, -1),
     [("minCandidateNodesPercentage", "Invalid value: 1000: not in valid range [0, 100]"),
      ("minCandidateNodesAbsolute", "Invalid value: -1: not in valid range [0, inf)")]),
])
def test_validate_default_preemption_args(args, want):
    assert validate_default_preemption_args(args) == want


def test_invalid_args_stop_the_plugin_with_upstreams_aggregate():
    with pytest.raises(ValueError) as err:
        DefaultPreemption(DefaultPreemptionArgs(0, 0))
    assert str(err.value) == (
        "[minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute, "
        "minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage]")
    assert aggregate_error([("a", "b")]) == "a: b"
    assert validate_default_preemption_args(DefaultPreemptionArgs(-1, 1), "profiles[0].pluginConfig[0].args") == [
        ("profiles[0].pluginConfig[0].args.minCandidateNodesPercentage", "Invalid value: -1: not in valid range [0, 100]")]
