"""NodeResourcesFit: tables from kube-scheduler's fit_test.go, least_allocated_test.go,
most_allocated_test.go and requested_to_capacity_ratio_test.go (same inputs, same expected
numbers), each also checked against the per-node reference; then a hypothesis property."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine.nodes import NodeSpec, NodeTable, NodeUsage
from scheduler.engine.plugin_args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from scheduler.engine.plugins.node_resources_fit import NodeResourcesFit, broken_linear
from scheduler.engine.pods import Container, PodSpec
from scheduler.engine.reference import resources as ref

EXT_A, EXT_B = "example.com/aaa", "example.com/bbb"
K8S_IO_A, K8S_IO_B = "kubernetes.io/something", "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"
EXT = "abc.com/xyz"  # extendedRes in least/most_allocated_test.go
MI = 1024 * 1024


def cores(n: int) -> int:
    """st.MakeNode().Capacity({"cpu": "4000"}) is 4000 cores: millicores here."""
    return n * 1000


def pod(*reqs: dict, init: tuple[dict, ...] = (), overhead: dict | None = None, name: str = "p") -> PodSpec:
    return PodSpec(
        namespace="default", name=name,
        containers=tuple(Container(name=f"c{i}", requests=dict(r)) for i, r in enumerate(reqs)),
        init_containers=tuple(Container(name=f"i{i}", requests=dict(r)) for i, r in enumerate(init)),
        overhead=dict(overhead or {}),
    )


def run_filter(plugin: NodeResourcesFit, p: PodSpec, specs: list[NodeSpec], usages: list[NodeUsage]) -> list[list[str]]:
    table = NodeTable(specs, usages)
    result = plugin.filter(p, table)
    per_node = [[text for text, mask in result.reasons if mask[i]] for i in range(table.n)]
    assert [not r for r in per_node] == list(result.passed)
    # The engine agrees with the reference, reasons and order.
    assert per_node == [ref.fit_filter(p, s, u, plugin.args) for s, u in zip(specs, usages)]
    return per_node


def run_score(plugin: NodeResourcesFit, p: PodSpec, specs: list[NodeSpec], usages: list[NodeUsage]) -> list[int]:
    table = NodeTable(specs, usages)
    got = plugin.score(p, table, np.arange(table.n))
    assert got.dtype == np.int64
    assert list(got) == [ref.fit_score(p, s, u, plugin.args) for s, u in zip(specs, usages)]
    return [int(x) for x in got]


# ---- Filter: TestEnoughRequests / TestNotEnoughRequests / TestStorageRequests ------------------

def _fit_node() -> NodeSpec:
    # makeAllocatableResources(10, 20, 32, 5, 20, 5)
    return NodeSpec("n", allocatable={"cpu": 10, "memory": 20, "pods": 32, EXT_A: 5, "ephemeral-storage": 20, HUGE_A: 5})


ENOUGH_REQUESTS = [
    ("no resources requested always fits", PodSpec("d", "p"), [{"cpu": 10, "memory": 20}], {}, []),
    ("too many resources fails", pod({"cpu": 1, "memory": 1}), [{"cpu": 10, "memory": 20}], {},
     ["Insufficient cpu", "Insufficient memory"]),
    ("too many resources fails due to init container cpu",
     pod({"cpu": 1, "memory": 1}, init=({"cpu": 3, "memory": 1},)), [{"cpu": 8, "memory": 19}], {}, ["Insufficient cpu"]),
    ("too many resources fails due to highest init container cpu",
     pod({"cpu": 1, "memory": 1}, init=({"cpu": 3, "memory": 1}, {"cpu": 2, "memory": 1})), [{"cpu": 8, "memory": 19}], {},
     ["Insufficient cpu"]),
    ("too many resources fails due to init container memory",
     pod({"cpu": 1, "memory": 1}, init=({"cpu": 1, "memory": 3},)), [{"cpu": 9, "memory": 19}], {}, ["Insufficient memory"]),
    ("init container fits because it's the max, not sum",
     pod({"cpu": 1, "memory": 1}, init=({"cpu": 1, "memory": 1},)), [{"cpu": 9, "memory": 19}], {}, []),
    ("both resources fit", pod({"cpu": 1, "memory": 1}), [{"cpu": 5, "memory": 5}], {}, []),
    ("one resource memory fits", pod({"cpu": 2, "memory": 1}), [{"cpu": 9, "memory": 5}], {}, ["Insufficient cpu"]),
    ("one resource cpu fits", pod({"cpu": 1, "memory": 2}), [{"cpu": 5, "memory": 19}], {}, ["Insufficient memory"]),
    ("equal edge case", pod({"cpu": 5, "memory": 1}), [{"cpu": 5, "memory": 19}], {}, []),
    ("equal edge case for init container", pod({"cpu": 4, "memory": 1}, init=({"cpu": 5, "memory": 1},)),
     [{"cpu": 5, "memory": 19}], {}, []),
    ("extended resource fits", pod({EXT_A: 1}), [{}], {}, []),
    ("extended resource fits for init container", pod({}, init=({EXT_A: 1},)), [{}], {}, []),
    ("extended resource capacity enforced", pod({"cpu": 1, "memory": 1, EXT_A: 10}), [{"cpu": 0, "memory": 0, EXT_A: 0}], {},
     [f"Insufficient {EXT_A}"]),
    ("extended resource allocatable enforced", pod({"cpu": 1, "memory": 1, EXT_A: 1}), [{EXT_A: 5}], {},
     [f"Insufficient {EXT_A}"]),
    ("extended resource allocatable enforced for multiple containers",
     pod({"cpu": 1, "memory": 1, EXT_A: 3}, {"cpu": 1, "memory": 1, EXT_A: 3}), [{EXT_A: 2}], {}, [f"Insufficient {EXT_A}"]),
    ("extended resource allocatable admits multiple init containers",
     pod({}, init=({"cpu": 1, "memory": 1, EXT_A: 3}, {"cpu": 1, "memory": 1, EXT_A: 3})), [{EXT_A: 2}], {}, []),
    ("extended resource allocatable enforced for multiple init containers",
     pod({}, init=({"cpu": 1, "memory": 1, EXT_A: 6}, {"cpu": 1, "memory": 1, EXT_A: 3})), [{EXT_A: 2}], {},
     [f"Insufficient {EXT_A}"]),
    ("extended resource allocatable enforced for unknown resource", pod({"cpu": 1, "memory": 1, EXT_B: 1}), [{}], {},
     [f"Insufficient {EXT_B}"]),
    ("kubernetes.io resource capacity enforced", pod({"cpu": 1, "memory": 1, K8S_IO_A: 10}), [{}], {},
     [f"Insufficient {K8S_IO_A}"]),
    ("kubernetes.io resource capacity enforced for init container", pod({}, init=({"cpu": 1, "memory": 1, K8S_IO_B: 10},)),
     [{}], {}, [f"Insufficient {K8S_IO_B}"]),
    ("hugepages resource capacity enforced", pod({"cpu": 1, "memory": 1, HUGE_A: 10}), [{HUGE_A: 0}], {},
     [f"Insufficient {HUGE_A}"]),
    ("hugepages resource allocatable enforced for multiple containers",
     pod({"cpu": 1, "memory": 1, HUGE_A: 3}, {"cpu": 1, "memory": 1, HUGE_A: 3}), [{HUGE_A: 2}], {}, [f"Insufficient {HUGE_A}"]),
    ("skip checking ignored extended resource", pod({"cpu": 1, "memory": 1, EXT_B: 1}), [{}],
     {"ignored_resources": ("example.com/bbb",)}, []),
    ("resources + pod overhead fits", pod({"cpu": 1, "memory": 1}, overhead={"cpu": 3, "memory": 13}),
     [{"cpu": 5, "memory": 5}], {}, []),
    ("requests + overhead does not fit for memory", pod({"cpu": 1, "memory": 1}, overhead={"cpu": 1, "memory": 15}),
     [{"cpu": 5, "memory": 5}], {}, ["Insufficient memory"]),
    ("skip checking ignored extended resource via resource groups",
     pod({"cpu": 1, "memory": 1, EXT_B: 1, K8S_IO_A: 1}), [{}], {"ignored_resource_groups": ("example.com",)},
     [f"Insufficient {K8S_IO_A}"]),
    ("skip checking extended resource request with quantity zero", pod({"cpu": 1, "memory": 1, EXT_A: 0}), [{EXT_A: 6}], {}, []),
    ("skip checking resource request with quantity zero", pod({EXT_A: 1}), [{"cpu": 20, "memory": 30, EXT_A: 1}], {}, []),
    # TestStorageRequests
    ("storage: empty storage requested, and pod fits", pod({"cpu": 1, "memory": 1}), [{"cpu": 2, "memory": 10}], {}, []),
    ("storage: ephemeral request exceeds allocatable", pod({"ephemeral-storage": 25}), [{"cpu": 2, "memory": 2}], {},
     ["Insufficient ephemeral-storage"]),
    ("storage: ephemeral local storage is sufficient", pod({"ephemeral-storage": 5}),
     [{"cpu": 2, "memory": 2, "ephemeral-storage": 10}], {}, []),
    ("storage: pod fits", pod({"ephemeral-storage": 10}), [{"cpu": 2, "memory": 2}], {}, []),
]


@pytest.mark.parametrize("name,p,existing,args,want", ENOUGH_REQUESTS, ids=[c[0] for c in ENOUGH_REQUESTS])
def test_it_filters_as_fits_request(name, p, existing, args, want):
    plugin = NodeResourcesFit(NodeResourcesFitArgs(**args))
    usage = NodeUsage.of_pods([pod(r, name=f"e{i}") for i, r in enumerate(existing)])
    assert run_filter(plugin, p, [_fit_node()], [usage]) == [want]


@pytest.mark.parametrize("p", [
    PodSpec("d", "p"),
    pod({"cpu": 1, "memory": 1}),
    pod({"cpu": 5, "memory": 1}, init=({"cpu": 5, "memory": 1},)),
])
def test_it_reports_too_many_pods_even_when_resources_fit(p):
    # TestNotEnoughRequests: allocatable (10, 20, 1 pod), one pod already there.
    spec = NodeSpec("n", allocatable={"cpu": 10, "memory": 20, "pods": 1})
    usage = NodeUsage.of_pods([pod({"cpu": 5, "memory": 5}, name="e")])
    assert run_filter(NodeResourcesFit(), p, [spec], [usage]) == [["Too many pods"]]


def test_it_keeps_every_reason_in_upstream_order():
    spec = NodeSpec("n", allocatable={"cpu": 1, "memory": 1, "pods": 0, "ephemeral-storage": 1})
    p = pod({"cpu": 2, "memory": 2, "ephemeral-storage": 2, EXT_B: 1, HUGE_A: 1})
    assert run_filter(NodeResourcesFit(), p, [spec], [NodeUsage()]) == [[
        "Too many pods", "Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage",
        f"Insufficient {EXT_B}", f"Insufficient {HUGE_A}",
    ]]


# ---- Score: least_allocated_test.go / most_allocated_test.go ------------------------------------

DEFAULT = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
EXTENDED_SET = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1), ResourceSpec(EXT, 1))
TWO_CONTAINERS = ({"cpu": cores(1000), "memory": 2000}, {"cpu": cores(2000), "memory": 3000})


def _n(name, cpu_cores=None, mem=None, extra=None):
    alloc = {}
    if cpu_cores is not None:
        alloc["cpu"] = cores(cpu_cores)
    if mem is not None:
        alloc["memory"] = mem
    alloc.update(extra or {})
    return NodeSpec(name, allocatable=alloc)


def _on(*reqs):
    """Existing pods on a node: one container each."""
    return NodeUsage.of_pods([pod(r, name=f"e{i}") if r is not None else PodSpec("d", f"e{i}") for i, r in enumerate(reqs)])


E4, E10 = {EXT: 4}, {EXT: 10}
SCORE_CASES = [
    # (strategy, name, pod, nodes, usages, resources, expected)
    (LEAST_ALLOCATED, "nothing scheduled, nothing requested", PodSpec("d", "p"),
     [_n("node1", 4000, 10000), _n("node2", 4000, 10000)], [_on(), _on()], DEFAULT, [100, 100]),
    (LEAST_ALLOCATED, "nothing scheduled, resources requested, differently sized nodes", pod(*TWO_CONTAINERS),
     [_n("node1", 4000, 10000), _n("node2", 6000, 10000)], [_on(), _on()], DEFAULT, [37, 50]),
    (LEAST_ALLOCATED, "no resources requested, pods scheduled", PodSpec("d", "p"),
     [_n("node1", 4000, 10000), _n("node2", 4000, 10000)], [_on(None, None), _on(None, None)], DEFAULT, [100, 100]),
    (LEAST_ALLOCATED, "no resources requested, pods scheduled with resources", PodSpec("d", "p"),
     [_n("node1", 10000, 20000), _n("node2", 10000, 20000)],
     [_on({"cpu": cores(3000), "memory": 0}, {"cpu": cores(3000), "memory": 0}),
      _on({"cpu": cores(3000), "memory": 0}, {"cpu": cores(3000), "memory": 5000})], DEFAULT, [70, 57]),
    (LEAST_ALLOCATED, "resources requested, pods scheduled with resources", pod(*TWO_CONTAINERS),
     [_n("node1", 10000, 20000), _n("node2", 10000, 20000)],
     [_on({"cpu": cores(3000), "memory": 0}), _on({"cpu": cores(3000), "memory": 5000})], DEFAULT, [57, 45]),
    (LEAST_ALLOCATED, "resources requested, pods scheduled with resources, differently sized nodes", pod(*TWO_CONTAINERS),
     [_n("node1", 10000, 20000), _n("node2", 10000, 50000)],
     [_on({"cpu": cores(3000), "memory": 0}), _on({"cpu": cores(3000), "memory": 5000})], DEFAULT, [57, 60]),
    (LEAST_ALLOCATED, "requested resources exceed node capacity", pod({"cpu": cores(3000), "memory": 0}),
     [_n("node1", 4000, 10000), _n("node2", 4000, 10000)],
     [_on({"cpu": cores(3000), "memory": 0}), _on({"cpu": cores(3000), "memory": 5000})], DEFAULT, [50, 25]),
    (LEAST_ALLOCATED, "zero node resources, pods scheduled with resources", PodSpec("d", "p"),
     [_n("node1"), _n("node2")],
     [_on({"cpu": cores(3000), "memory": 0}), _on({"cpu": cores(3000), "memory": 5000})], DEFAULT, [0, 0]),
    (LEAST_ALLOCATED, "different weight on CPU and memory", pod(*TWO_CONTAINERS),
     [_n("node1", 4000, 10000), _n("node2", 6000, 10000)], [_on(), _on()],
     (ResourceSpec("memory", 2), ResourceSpec("cpu", 1)), [41, 50]),
    (LEAST_ALLOCATED, "bypass extended resource if the pod does not request", pod(*TWO_CONTAINERS),
     [_n("node1", 6000, 10000), _n("node2", 6000, 10000, E4)], [_on(), _on()], EXTENDED_SET, [50, 50]),
    (LEAST_ALLOCATED, "honor extended resource if the pod requests", pod({"cpu": cores(3000), "memory": 5000, EXT: 2}),
     [_n("node1", 6000, 10000, E4), _n("node2", 6000, 10000, E10)], [_on(), _on()], EXTENDED_SET, [50, 60]),
    (LEAST_ALLOCATED, "if the node doesn't have a resource", pod({"cpu": cores(3000), "memory": 4000}),
     [_n("node1", 6000, 10000), _n("node2", 6000, 10000, E4)], [_on(), _on()],
     (ResourceSpec(EXT, 2), ResourceSpec("cpu", 1), ResourceSpec("memory", 1)), [55, 55]),
    (MOST_ALLOCATED, "nothing scheduled, nothing requested", PodSpec("d", "p"),
     [_n("node1", 4000, 10000), _n("node2", 4000, 10000)], [_on(), _on()], DEFAULT, [0, 0]),
    (MOST_ALLOCATED, "nothing scheduled, resources requested, differently sized nodes", pod(*TWO_CONTAINERS),
     [_n("node1", 4000, 10000), _n("node2", 6000, 10000)], [_on(), _on()], DEFAULT, [62, 50]),
    (MOST_ALLOCATED, "no resources requested, pods scheduled with resources", PodSpec("d", "p"),
     [_n("node1", 10000, 20000), _n("node2", 10000, 20000)],
     [_on({"cpu": cores(3000), "memory": 0}, {"cpu": cores(3000), "memory": 0}),
      _on({"cpu": cores(3000), "memory": 0}, {"cpu": cores(3000), "memory": 5000})], DEFAULT, [30, 42]),
    (MOST_ALLOCATED, "resources requested, pods scheduled with resources", pod(*TWO_CONTAINERS),
     [_n("node1", 10000, 20000), _n("node2", 10000, 20000)],
     [_on({"cpu": cores(3000), "memory": 0}), _on({"cpu": cores(3000), "memory": 5000})], DEFAULT, [42, 55]),
    (MOST_ALLOCATED, "resources requested equal node capacity",
     pod({"cpu": cores(2000), "memory": 4000}, {"cpu": cores(3000), "memory": 5000}),
     [_n("node1", 5000, 10000), _n("node2", 10000, 9000)], [_on(), _on()], DEFAULT, [95, 75]),
    (MOST_ALLOCATED, "different weight on CPU and memory", pod(*TWO_CONTAINERS),
     [_n("node1", 4000, 10000), _n("node2", 6000, 10000)], [_on(), _on()],
     (ResourceSpec("memory", 2), ResourceSpec("cpu", 1)), [58, 50]),
    (MOST_ALLOCATED, "no resources requested, pods scheduled, nonzero request for resource", pod({}),
     [NodeSpec("node1", allocatable={"cpu": 250, "memory": 1000 * MI}),
      NodeSpec("node2", allocatable={"cpu": 250, "memory": 1000 * MI})],
     [_on({}, {}), _on()], DEFAULT, [80, 30]),
    (MOST_ALLOCATED, "bypass extended resource if the pod does not request", pod(*TWO_CONTAINERS),
     [_n("node1", 6000, 10000), _n("node2", 6000, 10000, E4)], [_on(), _on()], EXTENDED_SET, [50, 50]),
    (MOST_ALLOCATED, "honor extended resource if the pod request", pod({"cpu": cores(3000), "memory": 5000, EXT: 2}),
     [_n("node1", 6000, 10000, E4), _n("node2", 6000, 10000, E10)], [_on(), _on()], EXTENDED_SET, [50, 40]),
    (MOST_ALLOCATED, "if the node doesn't have a resource", pod({"cpu": cores(3000), "memory": 4000}),
     [_n("node1", 6000, 10000), _n("node2", 6000, 10000, E4)], [_on(), _on()],
     (ResourceSpec(EXT, 2), ResourceSpec("cpu", 1), ResourceSpec("memory", 1)), [45, 45]),
]


@pytest.mark.parametrize("strategy,name,p,specs,usages,resources,want", SCORE_CASES,
                         ids=[f"{c[0]}: {c[1]}" for c in SCORE_CASES])
def test_it_scores_as_upstream_strategies(strategy, name, p, specs, usages, resources, want):
    plugin = NodeResourcesFit(NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(type=strategy, resources=resources)))
    assert run_score(plugin, p, specs, usages) == want


# ---- Score: requested_to_capacity_ratio_test.go ------------------------------------------------

def _shape(*points):
    return tuple(UtilizationShapePoint(u, s) for u, s in points)


def _rtcr(resources, shape):
    return NodeResourcesFit(NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(
        type=REQUESTED_TO_CAPACITY_RATIO, resources=resources, shape=shape)))


LEAST_SHAPE = _shape((0, 10), (100, 0))
RTCR_CASES = [
    ("nothing scheduled, nothing requested", PodSpec("d", "p"),
     [_n("node1", 4000, 10000), _n("node2", 4000, 10000)], [_on(None, None), _on()], [100, 100]),
    ("nothing scheduled, resources requested, differently sized nodes", pod(*TWO_CONTAINERS),
     [_n("node1", 4000, 10000), _n("node2", 6000, 10000)], [_on(None, None), _on()], [38, 50]),
    ("no resources requested, pods scheduled with resources", PodSpec("d", "p"),
     [_n("node1", 4000, 10000), _n("node2", 6000, 10000)],
     [_on({"cpu": cores(3000), "memory": 5000}), _on({"cpu": cores(3000), "memory": 5000})], [38, 50]),
]


@pytest.mark.parametrize("name,p,specs,usages,want", RTCR_CASES, ids=[c[0] for c in RTCR_CASES])
def test_it_scores_requested_to_capacity_ratio(name, p, specs, usages, want):
    assert run_score(_rtcr(DEFAULT, LEAST_SHAPE), p, specs, usages) == want


def _bin_node(name, ext):
    # makeNode(name, 4000 milli, 10000Mi, ext)
    return NodeSpec(name, allocatable={"cpu": 4000, "memory": 10000 * MI, "pods": 110, **ext})


FOO, BAR = "intel.com/foo", "intel.com/bar"
BIN_SINGLE = [
    ("nothing scheduled, nothing requested", PodSpec("d", "p"), [_on(), _on()], [0, 0]),
    ("resources requested, pods scheduled with less resources", pod({FOO: 2}), [_on(None), _on()], [2, 5]),
    ("resources requested, on node with existing pod running", pod({FOO: 2}), [_on(), _on({FOO: 2})], [2, 10]),
    ("resources requested, pods scheduled with more resources", pod({FOO: 4}), [_on(None), _on()], [5, 10]),
]


@pytest.mark.parametrize("name,p,usages,want", BIN_SINGLE, ids=[c[0] for c in BIN_SINGLE])
def test_it_bin_packs_a_single_extended_resource(name, p, usages, want):
    specs = [_bin_node("node1", {FOO: 8}), _bin_node("node2", {FOO: 4})]
    assert run_score(_rtcr((ResourceSpec(FOO, 1),), _shape((0, 0), (100, 1))), p, specs, usages) == want


BIN_MULTI = [
    ("nothing scheduled, nothing requested", PodSpec("d", "p"), [_on(None), _on()], [0, 0]),
    ("resources requested, pods scheduled with less resources", pod({FOO: 2, BAR: 2}), [_on(None), _on()], [4, 3]),
    ("resources requested, on node with existing pod running", pod({FOO: 2, BAR: 2}),
     [_on(), _on({FOO: 4, BAR: 2})], [4, 7]),
    ("resources requested, pods scheduled with more resources", pod({FOO: 4, BAR: 2}), [_on(None), _on()], [5, 5]),
]


@pytest.mark.parametrize("name,p,usages,want", BIN_MULTI, ids=[c[0] for c in BIN_MULTI])
def test_it_bin_packs_several_extended_resources(name, p, usages, want):
    specs = [_bin_node("node1", {FOO: 8, BAR: 4}), _bin_node("node2", {FOO: 4, BAR: 8})]
    plugin = _rtcr((ResourceSpec(FOO, 3), ResourceSpec(BAR, 5)), _shape((0, 0), (100, 1)))
    assert run_score(plugin, p, specs, usages) == want


# TestBrokenLinearFunction
BROKEN_LINEAR = [
    (((10, 1), (90, 9)), [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9), (99, 9),
                          (100, 9), (110, 9)]),
    (((0, 2), (40, 10), (100, 0)), [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)]),
    (((0, 2), (40, 2), (100, 2)), [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
]


@pytest.mark.parametrize("shape,assertions", BROKEN_LINEAR)
def test_broken_linear_function_matches_upstream(shape, assertions):
    ps = np.array([p for p, _ in assertions], dtype=np.int64)
    assert list(broken_linear(shape, ps)) == [want for _, want in assertions]
    assert [ref.broken_linear_function(shape, int(p)) for p in ps] == [want for _, want in assertions]


def test_broken_linear_truncates_negative_slopes_toward_zero():
    # (0 - 10) * 5 / 100 is -0.5: Go truncates to 0 (so 10), Python's // would give 9.
    assert int(broken_linear(((0, 10), (100, 0)), np.array([5]))[0]) == 10
    assert ref.broken_linear_function(((0, 10), (100, 0)), 5) == 10


def test_it_rounds_half_away_from_zero_like_go():
    # (25 + 50) / 2 = 37.5 must round to 38, and 2.5 to 3 (Python's round would give 2).
    plugin = _rtcr((ResourceSpec(FOO, 1), ResourceSpec(BAR, 1)), _shape((0, 0), (100, 1)))
    specs = [_bin_node("n", {FOO: 10, BAR: 100})]  # foo 20% -> 2, bar 30% -> 3
    assert run_score(plugin, pod({FOO: 2, BAR: 30}), specs, [_on()]) == [3]


@pytest.mark.parametrize("kwargs", [
    {"resources": ()},
    {"resources": (ResourceSpec("cpu", 0),)},
    {"resources": (ResourceSpec("cpu", 101),)},
    {"type": "Bogus"},
    {"type": REQUESTED_TO_CAPACITY_RATIO},
])
def test_it_refuses_invalid_args(kwargs):
    with pytest.raises(ValueError):
        NodeResourcesFit(NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(**kwargs)))


# ---- property: engine == reference ----------------------------------------------------------

RESOURCE_NAMES = ["cpu", "memory", "ephemeral-storage", "example.com/gpu", "hugepages-2Mi", "kubernetes.io/foo",
                  "other.io/bar"]
small = st.integers(min_value=0, max_value=12)
requests = st.dictionaries(st.sampled_from(RESOURCE_NAMES), small, max_size=4)


@st.composite
def clusters(draw):
    n = draw(st.integers(min_value=1, max_value=6))
    specs, usages = [], []
    for i in range(n):
        alloc = draw(st.dictionaries(st.sampled_from(RESOURCE_NAMES + ["pods"]), st.integers(0, 40), max_size=7))
        specs.append(NodeSpec(f"n{i}", allocatable=alloc))
        pods = [PodSpec("d", f"e{i}-{j}", containers=tuple(Container(f"c{k}", requests=r) for k, r in enumerate(cs)))
                for j, cs in enumerate(draw(st.lists(st.lists(requests, max_size=2), max_size=3)))]
        usages.append(NodeUsage.of_pods(pods))
    return specs, usages


@st.composite
def pods(draw):
    return PodSpec(
        "d", "p",
        containers=tuple(Container(f"c{i}", requests=r) for i, r in enumerate(draw(st.lists(requests, max_size=3)))),
        init_containers=tuple(
            Container(f"i{i}", requests=r, restart_policy=draw(st.sampled_from([None, "Always"])))
            for i, r in enumerate(draw(st.lists(requests, max_size=2)))
        ),
        overhead=draw(st.dictionaries(st.sampled_from(["cpu", "memory"]), small, max_size=2)),
    )


resource_specs = st.lists(
    st.builds(ResourceSpec, st.sampled_from(RESOURCE_NAMES + ["pods"]), st.integers(1, 100)), min_size=1, max_size=4
)
shapes = st.lists(st.tuples(st.integers(0, 100), st.integers(0, 10)), min_size=1, max_size=4).map(
    lambda pts: tuple(UtilizationShapePoint(u, s) for u, s in sorted(dict(pts).items()))
)


@st.composite
def fit_args(draw):
    kind = draw(st.sampled_from([LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO]))
    return NodeResourcesFitArgs(
        ignored_resources=tuple(draw(st.lists(st.sampled_from(["example.com/gpu", "other.io/bar"]), max_size=1))),
        ignored_resource_groups=tuple(draw(st.lists(st.sampled_from(["example.com", "other.io"]), max_size=1))),
        scoring_strategy=ScoringStrategy(type=kind, resources=tuple(draw(resource_specs)), shape=draw(shapes)),
    )


@settings(max_examples=300, deadline=None)
@given(clusters(), pods(), fit_args())
def test_engine_agrees_with_reference(cluster, p, args):
    specs, usages = cluster
    plugin = NodeResourcesFit(args)
    run_filter(plugin, p, specs, usages)
    got = run_score(plugin, p, specs, usages)
    assert all(0 <= s <= 100 for s in got)
