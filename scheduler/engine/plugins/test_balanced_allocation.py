"""NodeResourcesBalancedAllocation: the table of kube-scheduler master's balanced_allocation_test.go
(scores of the change in balance, kubernetes/kubernetes#135573), each case also checked against
the per-node reference; then a hypothesis property."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine.nodes import NodeSpec, NodeTable, NodeUsage
from scheduler.engine.plugin_args import NodeResourcesBalancedAllocationArgs, ResourceSpec
from scheduler.engine.plugins.balanced_allocation import NodeResourcesBalancedAllocation
from scheduler.engine.pods import Container, PodSpec
from scheduler.engine.reference import resources as ref

GPU = "nvidia.com/gpu"
DEFAULT = NodeResourcesBalancedAllocationArgs()
WITH_GPU = NodeResourcesBalancedAllocationArgs(
    resources=(ResourceSpec("cpu", 1), ResourceSpec("memory", 1), ResourceSpec(GPU, 1))
)


def pod(*reqs: dict, name: str = "p") -> PodSpec:
    return PodSpec("default", name, containers=tuple(Container(f"c{i}", requests=dict(r)) for i, r in enumerate(reqs)))


CPU_AND_MEMORY = ({"cpu": 1000, "memory": 2000}, {"cpu": 2000, "memory": 3000})
CPU_ONLY = ({"cpu": 1000, "memory": 0}, {"cpu": 2000, "memory": 0})
MEMORY_ONLY = ({"cpu": 0, "memory": 2000}, {"cpu": 0, "memory": 3000})
CPU_MEMORY_GPU = ({"cpu": 1000, "memory": 2000}, {"cpu": 2000, "memory": 3000, GPU: 3})


def make_node(name: str, milli_cpu: int, memory: int, scalar: dict | None = None) -> NodeSpec:
    # As test_util.go's makeNode.
    return NodeSpec(name, allocatable={"cpu": milli_cpu, "memory": memory, "pods": 100, **(scalar or {})})


def usage(*pods_reqs: tuple[dict, ...]) -> NodeUsage:
    return NodeUsage.of_pods([pod(*reqs, name=f"e{i}") for i, reqs in enumerate(pods_reqs)])


def run_score(plugin, p, specs, usages):
    table = NodeTable(specs, usages)
    got = plugin.score(p, table, np.arange(table.n))
    want_ref = [ref.balanced_allocation_score(p, s, u, plugin.args) for s, u in zip(specs, usages)]
    if got is None:
        assert all(r is None for r in want_ref)
        return None
    assert got.dtype == np.int64
    assert list(got) == want_ref
    return [int(x) for x in got]


CASES = [
    ("nothing scheduled, nothing requested, skip in PreScore", PodSpec("d", "p"),
     [make_node("node1", 4000, 10000), make_node("node2", 4000, 10000)], [usage(), usage()], DEFAULT, None),
    ("nothing scheduled, resources requested, differently sized nodes", pod(*CPU_AND_MEMORY),
     [make_node("node1", 4000, 10000), make_node("node2", 6000, 10000)], [usage(), usage()], DEFAULT, [68, 75]),
    ("resources requested, pods scheduled with resources", pod(*CPU_AND_MEMORY),
     [make_node("node1", 10000, 20000), make_node("node2", 10000, 20000)],
     [usage(CPU_ONLY), usage(CPU_AND_MEMORY)], DEFAULT, [73, 74]),
    ("resources requested, pods scheduled with resources, differently sized nodes", pod(*CPU_AND_MEMORY),
     [make_node("node1", 10000, 20000), make_node("node2", 10000, 50000)],
     [usage(CPU_ONLY), usage(CPU_AND_MEMORY)], DEFAULT, [73, 70]),
    ("resources requested, pods scheduled with resources, nodes to reach min/max score", pod(*MEMORY_ONLY),
     [make_node("node1", 3000, 5000), make_node("node2", 3000, 5000)], [usage(CPU_ONLY), usage()], DEFAULT, [100, 50]),
    ("requested resources at node capacity", pod(*CPU_ONLY),
     [make_node("node1", 6000, 10000), make_node("node2", 6000, 10000)],
     [usage(CPU_ONLY), usage(CPU_AND_MEMORY)], DEFAULT, [62, 62]),
    ("include scalar resource on a node for balanced resource allocation", pod({"memory": 0, GPU: 1}),
     [make_node("node1", 3500, 40000, {GPU: 8}), make_node("node2", 3500, 40000, {GPU: 8})],
     [usage(CPU_MEMORY_GPU), usage(CPU_AND_MEMORY)], WITH_GPU, [75, 76]),
    ("node without the scalar resource should skip the scalar resource", pod(*CPU_AND_MEMORY),
     [make_node("node1", 3500, 40000, {GPU: 8}), make_node("node2", 3500, 40000)], [usage(), usage()], WITH_GPU, [56, 56]),
]


@pytest.mark.parametrize("name,p,specs,usages,args,want", CASES, ids=[c[0] for c in CASES])
def test_it_scores_as_upstream(name, p, specs, usages, args, want):
    assert run_score(NodeResourcesBalancedAllocation(args), p, specs, usages) == want


def test_it_skips_pods_requesting_only_resources_it_does_not_score():
    # Best effort for the configured resources: PreScore Skip, even with other requests.
    assert NodeResourcesBalancedAllocation().score(
        pod({"ephemeral-storage": 5}), NodeTable([make_node("n", 1000, 1000)]), np.arange(1)) is None


def test_it_reads_plain_requests_not_the_non_zero_defaults():
    # A container without requests counts 0 here (useRequested), not 100m / 200Mi.
    specs = [make_node("n", 1000, 1000)]
    usages = [usage(({},))]
    assert run_score(NodeResourcesBalancedAllocation(), pod({"cpu": 500, "memory": 500}), specs, usages) == [75]


# ---- property: engine == reference ----------------------------------------------------------

NAMES = ["cpu", "memory", "ephemeral-storage", GPU, "hugepages-1Gi", "pods", "foo"]
# Weighted towards cpu and memory, so that most pods are not best effort and most nodes score.
LIKELY = ["cpu", "cpu", "memory", "memory"] + NAMES
reqs = st.dictionaries(st.sampled_from(LIKELY), st.integers(0, 50), max_size=4)


@st.composite
def scenario(draw):
    n = draw(st.integers(1, 6))
    specs, usages = [], []
    for i in range(n):
        alloc = {"cpu": draw(st.integers(0, 120)), "memory": draw(st.integers(0, 120))}
        alloc.update(draw(st.dictionaries(st.sampled_from(NAMES), st.integers(0, 60), max_size=4)))
        specs.append(NodeSpec(f"n{i}", allocatable=alloc))
        usages.append(NodeUsage.of_pods([pod(*cs, name=f"e{i}{j}") for j, cs in
                                         enumerate(draw(st.lists(st.lists(reqs, max_size=2), max_size=3)))]))
    p = pod(*draw(st.lists(reqs, min_size=1, max_size=3)))
    resources = tuple(draw(st.lists(st.builds(ResourceSpec, st.sampled_from(LIKELY), st.integers(1, 100)),
                                    min_size=1, max_size=5)))
    return specs, usages, p, NodeResourcesBalancedAllocationArgs(resources=resources)


@settings(max_examples=300, deadline=None)
@given(scenario())
def test_engine_agrees_with_reference(case):
    specs, usages, p, args = case
    got = run_score(NodeResourcesBalancedAllocation(args), p, specs, usages)
    assert got is None or all(50 <= s <= 100 for s in got)
