"""why_pending(): the nearest nodes, what each lacks in concrete terms, and the single change that would fit."""

from __future__ import annotations

import json

import pytest

from .config import default_profile
from .labels import LabelSelector
from .nodes import NodeSpec, NodeTable, NodeUsage
from .pods import (NO_SCHEDULE, Container, HostPort, NodeSelectorTerm, PodSpec, Requirement, Taint,
                   TopologySpreadConstraint)
from .why import quantity, request_quantity, why_pending, why_text

GI = 1 << 30
ALLOC = {"cpu": 4000, "memory": 8 * GI, "pods": 110}


def pod(cpu=500, memory=GI, priority=0, **kw) -> PodSpec:
    return PodSpec("web", "p", priority=priority, containers=(Container("c", requests={"cpu": cpu, "memory": memory},
                                                                        ports=kw.pop("ports", ())),), **kw)


def used(cpu, memory, name="x", priority=0, row_pods=1) -> tuple[NodeUsage, list[PodSpec]]:
    placed = [PodSpec("other", f"{name}-{i}", priority=priority,
                      containers=(Container("c", requests={"cpu": cpu // row_pods, "memory": memory // row_pods}),))
              for i in range(row_pods)]
    return NodeUsage.of_pods(placed), placed


def table(specs: list[NodeSpec], placed: dict[str, tuple[NodeUsage, list[PodSpec]]] | None = None) -> NodeTable:
    placed = placed or {}
    t = NodeTable(specs, [placed.get(s.name, (NodeUsage(), []))[0] for s in specs])
    t.pods.load((t.index[name], p) for name, (_, pods) in placed.items() for p in pods)
    return t


ZONE = "topology.kubernetes.io/zone"

CASES = [
    # (name, nodes, placed pods, the pod, nearest node, a phrase its lack must hold, a phrase some change must hold)
    ("short of cpu and memory, lower-priority pods would do",
     [NodeSpec("big", allocatable=ALLOC)], {"big": used(3500, 7 * GI, priority=0, row_pods=2)},
     pod(cpu=2000, memory=3 * GI, priority=100),
     "big", "needs 1.5 more CPU and 2 GiB: evicting pods would do; 2 pod(s) of lower priority hold 3.5 CPU and 7 GiB",
     "request at most 500m cpu and 1Gi memory"),
    ("short of cpu, evicting nothing would do",
     [NodeSpec("n", allocatable=ALLOC)], {"n": used(3800, GI, priority=50, row_pods=2)},
     pod(cpu=1000, priority=0),
     "n", "needs 0.8 more CPU: evicting nothing would do; no pod of lower priority than 0 runs here",
     "a node like n (same labels and taints) with at least 4 CPU and 8 GiB allocatable"),
    ("bigger than any node",
     [NodeSpec("n", allocatable=ALLOC)], {}, pod(cpu=6000),
     "n", "no eviction can make room", "a node like n (same labels and taints) with at least 6 CPU"),
    ("an untolerated taint",
     [NodeSpec("gpu", taints=(Taint("gpu", "true", NO_SCHEDULE),), allocatable=ALLOC)], {}, pod(),
     "gpu", "taint gpu=true:NoSchedule not tolerated",
     'add the toleration(s) {key: "gpu", operator: "Equal", value: "true", effect: "NoSchedule"}'),
    ("a cordoned node",
     [NodeSpec("c", allocatable=ALLOC, unschedulable=True)], {}, pod(),
     "c", "the node is cordoned", "uncordon node c"),
    ("a nodeSelector label the node lacks",
     [NodeSpec("h", labels={"disk": "hdd"}, allocatable=ALLOC)], {}, pod(node_selector={"disk": "ssd"}),
     "h", "nodeSelector disk=ssd: the node has disk=hdd", "drop nodeSelector disk=ssd"),
    ("an unmatched required node affinity term",
     [NodeSpec("z", labels={ZONE: "c"}, allocatable=ALLOC)], {},
     pod(required_terms=(NodeSelectorTerm(match_expressions=(Requirement(ZONE, "In", ("a", "b")),)),)),
     "z", f"required node affinity term 1 unmatched: {ZONE} In (a, b), the node has {ZONE}=c", f"label node z {ZONE}=a"),
    ("a host port in use",
     [NodeSpec("p", allocatable=ALLOC)],
     {"p": (NodeUsage(ports=(HostPort(8080),)), [])}, pod(ports=(HostPort(8080),)),
     "p", "host port(s) TCP/8080 already in use", "drop the hostPort(s) 8080"),
    ("the zone label missing for the spread constraint",
     [NodeSpec("nz", allocatable=ALLOC)], {},
     pod(labels={"app": "web"}, topology_spread_constraints=(
         TopologySpreadConstraint(1, ZONE, label_selector=LabelSelector(match_labels=(("app", "web"),))),)),
     "nz", "zone label missing for the spread constraint", "set whenUnsatisfiable: ScheduleAnyway"),
]


@pytest.mark.parametrize("name,specs,placed,the_pod,node,lack,change", CASES, ids=[c[0] for c in CASES])
def test_it_names_what_the_nearest_node_lacks_and_a_single_change(name, specs, placed, the_pod, node, lack, change):
    answer = why_pending(default_profile().build(), the_pod, table(specs, placed))

    assert json.loads(json.dumps(answer)) == answer
    assert answer["fits"] == []
    assert answer["nearest"][0]["node"] == node
    details = " | ".join(lk["detail"] for lk in answer["nearest"][0]["lacks"])
    assert lack in details
    if change is not None:
        assert any(change in c["change"] for c in answer["changes"]), answer["changes"]
    assert why_text(answer)


def test_nearest_nodes_are_those_failing_the_fewest_filters():
    specs = [
        NodeSpec("two", taints=(Taint("a", "", NO_SCHEDULE),), unschedulable=True, allocatable=ALLOC),
        NodeSpec("one-far", allocatable={"cpu": 1000, "memory": 8 * GI, "pods": 110}),
        NodeSpec("one-near", allocatable={"cpu": 1900, "memory": 8 * GI, "pods": 110}),
    ]
    answer = why_pending(default_profile().build(), pod(cpu=2000), table(specs))

    assert [(e["node"], e["failing"]) for e in answer["nearest"]] == [("one-near", 1), ("one-far", 1), ("two", 2)]
    assert answer["failing_per_plugin"] == {"NodeUnschedulable": 1, "TaintToleration": 1, "NodeResourcesFit": 2}


def test_a_pod_change_is_offered_only_when_filtering_again_finds_a_node():
    # Tolerating n1's taint leaves n1 short of cpu, so no toleration is offered; the smaller request is,
    # and it is checked to fit n2.
    specs = [NodeSpec("n1", taints=(Taint("t", "", NO_SCHEDULE),), allocatable={"cpu": 100, "memory": GI, "pods": 10}),
             NodeSpec("n2", allocatable={"cpu": 1500, "memory": 8 * GI, "pods": 110})]
    answer = why_pending(default_profile().build(), pod(cpu=2000), table(specs))

    kinds = {c["kind"] for c in answer["changes"]}
    assert "toleration" not in kinds
    smaller = next(c for c in answer["changes"] if c["kind"] == "request")
    assert smaller["fits"] == ["n2"] and "1500m cpu" in smaller["change"]


def test_a_pod_that_fits_now_says_so_and_a_prefilter_rejection_stops_the_answer():
    nodes = table([NodeSpec("ok", allocatable=ALLOC)])
    assert why_pending(default_profile().build(), pod(), nodes)["fits"] == ["ok"]

    conflict = pod(required_terms=(NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("x",)),
                                                                  Requirement("metadata.name", "In", ("y",)))),))
    answer = why_pending(default_profile().build(), conflict, nodes)
    assert answer["stopped"] == "NodeAffinity: pod affinity terms conflict"
    assert answer["nearest"] == [] and answer["changes"] == []
    assert "Rejected before any node was looked at" in why_text(answer)


@pytest.mark.parametrize("resource,amount,text,written", [
    ("cpu", 1500, "1.5 CPU", "1500m"), ("cpu", 2000, "2 CPU", "2"),
    ("memory", 2 * GI, "2 GiB", "2Gi"), ("memory", 1536 << 20, "1.5 GiB", "1536Mi"),
    ("example.com/gpu", 2, "2 example.com/gpu", "2"),
])
def test_quantities_read_as_a_person_writes_them(resource, amount, text, written):
    assert quantity(resource, amount) == text
    assert request_quantity(resource, amount) == written


def test_a_node_of_the_size_needed_is_offered_even_when_smaller_requests_would_fill_the_list():
    """Ten nodes of ten sizes: ten smaller requests would each fit some; the list keeps room for a node change."""
    nodes = table([NodeSpec(f"n{i}", allocatable={"cpu": 1000 * (i + 1), "memory": 64 * GI, "pods": 110}) for i in range(10)])
    answer = why_pending(default_profile().build(), pod(cpu=64000), nodes)
    kinds = [c["kind"] for c in answer["changes"]]
    assert len(kinds) == 6 and kinds.count("node") == 2 and kinds[:4] == ["request"] * 4
    assert answer["changes"][4]["change"].startswith("a node like n9 (same labels and taints) with at least 64 CPU")
