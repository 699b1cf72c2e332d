"""PodTopologySpread PreFilter and Filter, table-driven from upstream's filtering_test.go
(TestPreFilterState, TestSingleConstraint, TestMultipleConstraints): the per-domain match counts
PreFilter keeps and each node's status code."""

import pytest

from scheduler.engine.framework import SKIP, CycleState, PluginError
from scheduler.engine.field import INT32_MAX
from scheduler.engine.labels import LabelSelector, LabelSelectorRequirement
from scheduler.engine.nodes import NodeSpec, NodeTable
from scheduler.engine.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    LIST_DEFAULTING,
    PRE_FILTER_STATE_KEY,
    PodTopologySpread,
    PodTopologySpreadArgs,
)
from scheduler.engine.pods import (
    DO_NOT_SCHEDULE,
    HONOR,
    IGNORE,
    NO_SCHEDULE,
    SCHEDULE_ANYWAY,
    NodeSelectorTerm,
    PodSpec,
    Requirement,
    Taint,
    Toleration,
    TopologySpreadConstraint,
)

FOO = LabelSelector.of(match_expressions=[LabelSelectorRequirement("foo", "Exists")])
BAR = LabelSelector.of(match_expressions=[LabelSelectorRequirement("bar", "Exists")])
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", NO_SCHEDULE)
S, U, UU = "Success", "Unschedulable", "UnschedulableAndUnresolvable"


def sel(**labels) -> LabelSelector:
    return LabelSelector.of(labels)


def node(name: str, tainted: bool = False, **labels) -> NodeSpec:
    return NodeSpec(name, labels=dict(labels), taints=(UNSCHEDULABLE_TAINT,) if tainted else ())


def zoned(*names_zones) -> list[NodeSpec]:
    """Nodes labelled zone=<zone> and node=<name>, as upstream's st.MakeNode() chains."""
    return [node(n, zone=z, node=n) for n, z in names_zones]


FOUR = (("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2"))


def spread(max_skew, key, when=DO_NOT_SCHEDULE, selector=FOO, min_domains=None, affinity=None, taints=None,
           match_label_keys=()) -> TopologySpreadConstraint:
    return TopologySpreadConstraint(max_skew, key, when, selector, min_domains, affinity, taints, tuple(match_label_keys))


def pod(name="p", on=None, ns="default", spreads=(), node_selector=None, required_terms=None, tolerations=(),
        deleting=False, **labels) -> PodSpec:
    return PodSpec(ns, name, node_name=on or "", labels=dict(labels), topology_spread_constraints=tuple(spreads),
                   node_selector=dict(node_selector or {}), required_terms=required_terms,
                   tolerations=tuple(tolerations), deleting=deleting)


def on(node_name, *names, ns="default", **labels) -> list[PodSpec]:
    return [pod(n, on=node_name, ns=ns, **labels) for n in names]


def node_affinity(key, op, values):
    return (NodeSelectorTerm((Requirement(key, op, tuple(values)),)),)


def cluster(nodes, existing) -> NodeTable:
    table = NodeTable(nodes)
    for p in existing:
        table.add_pod(table.index[p.node_name], p)
    return table


def plugin(defaults=()) -> PodTopologySpread:
    # As upstream's tests: List defaulting with the case's default constraints.
    return PodTopologySpread(PodTopologySpreadArgs(default_constraints=tuple(defaults), defaulting_type=LIST_DEFAULTING))


def pre_filter(pl, incoming, table):
    state = CycleState()
    with state.active():
        out = pl.pre_filter(incoming, table)
    return out, state.read(PRE_FILTER_STATE_KEY)


# ---- TestPreFilterState ------------------------------------------------------------------------
# (name, pod, nodes, existing pods, default constraints, services, want) where want is SKIP or a
# list of (TpValueToMatchNum, global minimum) per constraint.

MANY_A1_Y4 = (on("node-a", "p-a1", "p-a2", foo="") + on("node-b", "p-b1", foo="")
              + on("node-y", "p-y1", "p-y2", "p-y3", "p-y4", foo=""))
INCLUSION_PODS = (on("node-a", "p-a", bar="") + on("node-b", "p-b", "p-c", bar="") + on("node-c", "p-d"))
INCLUSION_NODES = [node("node-a", node="node-a", foo=""), node("node-b", node="node-b", foo=""),
                   node("node-c", node="node-c", bar="")]
TAINT_NODES = [node("node-a", node="node-a"), node("node-b", node="node-b"),
               node("node-c", tainted=True, node="node-c", bar="")]

PRE_FILTER_CASES = [
    ("clean cluster with one spreadConstraint",
     pod(foo="", spreads=[spread(5, "zone", selector=sel(foo="bar"))]), zoned(*FOUR), [], (), {},
     [({"zone1": 0, "zone2": 0}, 0)]),
    ("normal case with one spreadConstraint",
     pod(foo="", spreads=[spread(1, "zone")]), zoned(*FOUR),
     on("node-a", "p-a1", "p-a2", foo="") + on("node-b", "p-b1", foo="") + on("node-y", "p-y1", "p-y2", foo=""),
     (), {}, [({"zone1": 3, "zone2": 2}, 2)]),
    ("normal case with null label selector",
     pod(foo="", spreads=[spread(1, "zone", selector=None)]), zoned(*FOUR),
     on("node-a", "p-a1", "p-a2", foo="") + on("node-b", "p-b1", foo="") + on("node-y", "p-y1", "p-y2", foo=""),
     (), {}, [({"zone1": 0, "zone2": 0}, 0)]),
    ("normal case with one spreadConstraint, on a 3-zone cluster",
     pod(foo="", spreads=[spread(1, "zone")]), zoned(*FOUR, ("node-o", "zone3"), ("node-p", "zone3")),
     on("node-a", "p-a1", "p-a2", foo="") + on("node-b", "p-b1", foo="") + on("node-y", "p-y1", "p-y2", foo=""),
     (), {}, [({"zone1": 3, "zone2": 2, "zone3": 0}, 0)]),
    ("namespace mismatch doesn't count",
     pod(foo="", spreads=[spread(1, "zone")]), zoned(*FOUR),
     on("node-a", "p-a1", foo="") + on("node-a", "p-a2", ns="ns1", foo="") + on("node-b", "p-b1", foo="")
     + on("node-y", "p-y1", ns="ns2", foo="") + on("node-y", "p-y2", foo=""),
     (), {}, [({"zone1": 2, "zone2": 1}, 1)]),
    ("normal case with two spreadConstraints",
     pod(foo="", spreads=[spread(1, "zone"), spread(1, "node")]), zoned(*FOUR), MANY_A1_Y4, (), {},
     [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}, 0)]),
    ("soft spreadConstraints should be bypassed",
     pod(foo="", spreads=[spread(1, "zone", SCHEDULE_ANYWAY), spread(1, "zone"), spread(1, "node", SCHEDULE_ANYWAY),
                          spread(1, "node")]),
     zoned(("node-a", "zone1"), ("node-b", "zone1"), ("node-y", "zone2")), MANY_A1_Y4, (), {},
     [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 2, "node-b": 1, "node-y": 4}, 1)]),
    ("different labelSelectors - simple version",
     pod(foo="", bar="", spreads=[spread(1, "zone", selector=FOO), spread(1, "node", selector=BAR)]),
     zoned(("node-a", "zone1"), ("node-b", "zone1"), ("node-y", "zone2")),
     on("node-a", "p-a", foo="") + on("node-b", "p-b", bar=""), (), {},
     [({"zone1": 1, "zone2": 0}, 0), ({"node-a": 0, "node-b": 1, "node-y": 0}, 0)]),
    ("different labelSelectors - complex pods",
     pod(foo="", bar="", spreads=[spread(1, "zone", selector=FOO), spread(1, "node", selector=BAR)]),
     zoned(("node-a", "zone1"), ("node-b", "zone1"), ("node-y", "zone2")),
     on("node-a", "p-a1", foo="") + on("node-a", "p-a2", foo="", bar="") + on("node-b", "p-b1", foo="")
     + on("node-y", "p-y1", foo="") + on("node-y", "p-y2", foo="", bar="") + on("node-y", "p-y3", foo="")
     + on("node-y", "p-y4", foo="", bar=""), (), {},
     [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 1, "node-b": 0, "node-y": 2}, 0)]),
    ("two spreadConstraints, and with podAffinity",
     pod(foo="", required_terms=node_affinity("node", "NotIn", ["node-x"]),
         spreads=[spread(1, "zone"), spread(1, "node")]), zoned(*FOUR), MANY_A1_Y4, (), {},
     [({"zone1": 3, "zone2": 4}, 3), ({"node-a": 2, "node-b": 1, "node-y": 4}, 1)]),
    ("default constraints and a service",
     pod(foo="bar", baz="kar"), [], [],
     (spread(3, "node", selector=None), spread(2, "node", SCHEDULE_ANYWAY, selector=None),
      spread(5, "rack", selector=None)), {"default": [{"foo": "bar"}]},
     [({}, INT32_MAX), ({}, INT32_MAX)]),
    ("default constraints and a service that doesn't match",
     pod(foo="bar"), [], [], (spread(3, "node", selector=None),), {"default": [{"baz": "kep"}]}, SKIP),
    ("default constraints and a service, but pod has constraints",
     pod(foo="bar", baz="tar", spreads=[spread(1, "zone", selector=sel(baz="tar")),
                                         spread(2, "planet", SCHEDULE_ANYWAY, selector=sel(fot="rok"))]),
     [], [], (spread(2, "node", selector=None),), {"default": [{"foo": "bar"}]}, [({}, INT32_MAX)]),
    ("default soft constraints and a service",
     pod(foo="bar"), [], [], (spread(2, "node", SCHEDULE_ANYWAY, selector=None),), {"default": [{"foo": "bar"}]}, SKIP),
    ("NodeAffinityPolicy honored with labelSelectors",
     pod(foo="", node_selector={"foo": ""}, spreads=[spread(1, "node", selector=BAR)]), INCLUSION_NODES,
     INCLUSION_PODS, (), {}, [({"node-a": 1, "node-b": 2}, 1)]),
    ("NodeAffinityPolicy ignored with labelSelectors",
     pod(foo="", node_selector={"foo": ""}, spreads=[spread(1, "node", selector=BAR, affinity=IGNORE)]),
     INCLUSION_NODES, INCLUSION_PODS, (), {}, [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)]),
    ("NodeAffinityPolicy honored with nodeAffinity",
     pod(foo="", required_terms=node_affinity("foo", "In", [""]), spreads=[spread(1, "node", selector=BAR)]),
     INCLUSION_NODES, INCLUSION_PODS, (), {}, [({"node-a": 1, "node-b": 2}, 1)]),
    ("NodeAffinityPolicy ignored with nodeAffinity",
     pod(foo="", required_terms=node_affinity("foo", "In", [""]),
         spreads=[spread(1, "node", selector=BAR, affinity=IGNORE)]),
     INCLUSION_NODES, INCLUSION_PODS, (), {}, [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)]),
    ("NodeTaintsPolicy ignored",
     pod(foo="", spreads=[spread(1, "node", selector=BAR)]), TAINT_NODES, INCLUSION_PODS, (), {},
     [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)]),
    ("NodeTaintsPolicy honored",
     pod(foo="", spreads=[spread(1, "node", selector=BAR, taints=HONOR)]), TAINT_NODES, INCLUSION_PODS, (), {},
     [({"node-a": 1, "node-b": 2}, 1)]),
    ("NodeTaintsPolicy honored with tolerated taints",
     pod(foo="", tolerations=[Toleration("node.kubernetes.io/unschedulable", "Exists", "", NO_SCHEDULE)],
         spreads=[spread(1, "node", selector=BAR, taints=HONOR)]), TAINT_NODES, INCLUSION_PODS, (), {},
     [({"node-a": 1, "node-b": 2, "node-c": 0}, 0)]),
    ("two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
     pod(foo="", node_selector={"foo": ""}, spreads=[spread(1, "zone"), spread(1, "node", affinity=IGNORE)]),
     [node("node-a", zone="zone1", node="node-a", foo=""), node("node-b", zone="zone1", node="node-b"),
      node("node-x", zone="zone2", node="node-x", foo="")],
     on("node-b", "p-b1", "p-b2", foo="") + on("node-x", "p-x1", foo=""), (), {},
     [({"zone1": 0, "zone2": 1}, 0), ({"node-a": 0, "node-b": 2, "node-x": 1}, 0)]),
    ("two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
     pod(foo="", spreads=[spread(1, "zone", taints=HONOR), spread(1, "node")]),
     [node("node-a", zone="zone1", node="node-a", foo=""), node("node-b", tainted=True, zone="zone1", node="node-b"),
      node("node-x", zone="zone2", node="node-x", foo="")],
     on("node-b", "p-b1", "p-b2", foo="") + on("node-x", "p-x1", foo=""), (), {},
     [({"zone1": 0, "zone2": 1}, 0), ({"node-a": 0, "node-b": 2, "node-x": 1}, 0)]),
    ("two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
     pod(foo="", node_selector={"foo": ""}, spreads=[spread(1, "zone"), spread(1, "node")]),
     [node("node-a", zone="zone1", node="node-a"), node("node-b", tainted=True, zone="zone1", node="node-b", foo=""),
      node("node-x", zone="zone2", node="node-x", foo=""), node("node-y", zone="zone2", node="node-y")],
     on("node-a", "p-a1", "p-a2", foo="") + on("node-x", "p-x1", foo="") + on("node-y", "p-y1", foo=""), (), {},
     [({"zone1": 0, "zone2": 1}, 0), ({"node-b": 0, "node-x": 1}, 0)]),
    ("two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
     pod(foo="", node_selector={"foo": ""}, spreads=[spread(1, "zone", affinity=IGNORE),
                                                     spread(1, "node", taints=HONOR)]),
     [node("node-a", zone="zone1", node="node-a"), node("node-b", tainted=True, zone="zone1", node="node-b", foo=""),
      node("node-x", zone="zone2", node="node-x", foo=""), node("node-y", zone="zone2", node="node-y", foo="")],
     on("node-a", "p-a1", "p-a2", foo="") + on("node-x", "p-x1", "p-x2", foo="") + on("node-y", "p-y1", foo=""),
     (), {}, [({"zone1": 2, "zone2": 3}, 2), ({"node-x": 2, "node-y": 1}, 1)]),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
     pod(foo="", bar="a", spreads=[spread(1, "zone", match_label_keys=["bar"])]), zoned(*FOUR),
     on("node-a", "p-a1", foo="") + on("node-a", "p-a2", foo="", bar="a") + on("node-b", "p-b1", foo="")
     + on("node-y", "p-y1", foo="", bar="a") + on("node-y", "p-y2", bar=""), (), {},
     [({"zone1": 1, "zone2": 1}, 1)]),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
     pod(foo="a", spreads=[spread(1, "zone", selector=LabelSelector(), match_label_keys=["foo"])]), zoned(*FOUR),
     on("node-a", "p-a1", "p-a2", foo="a") + on("node-b", "p-b1", foo="a") + on("node-y", "p-y1", "p-y2", foo="a"),
     (), {}, [({"zone1": 3, "zone2": 2}, 2)]),
    ("key in matchLabelKeys is ignored when LabelSelector is nil",
     pod(foo="", spreads=[spread(1, "zone", selector=None, match_label_keys=["bar"])]), zoned(*FOUR),
     on("node-a", "p-a1", "p-a2", foo="a") + on("node-b", "p-b1", foo="a") + on("node-y", "p-y1", "p-y2", foo="a"),
     (), {}, [({"zone1": 0, "zone2": 0}, 0)]),
    ("key in matchLabelKeys is ignored when it isn't exist in pod.labels",
     pod(foo="", spreads=[spread(1, "zone", match_label_keys=["bar"])]), zoned(*FOUR),
     on("node-a", "p-a1", "p-a2", foo="a") + on("node-b", "p-b1", foo="a") + on("node-y", "p-y1", "p-y2", foo="a"),
     (), {}, [({"zone1": 3, "zone2": 2}, 2)]),
    ("two spreadConstraints with the same topologyKey",
     pod(foo="", bar="", spreads=[spread(1, "zone", selector=FOO), spread(1, "zone", selector=BAR)]), zoned(*FOUR),
     on("node-a", "p-a1", foo="", bar="") + on("node-b", "p-b1", foo="") + on("node-x", "p-x1", bar="")
     + on("node-y", "p-y1", foo="", bar="") + on("node-y", "p-y2", bar=""), (), {},
     [({"zone1": 2, "zone2": 1}, 1), ({"zone1": 1, "zone2": 3}, 1)]),
    ("skip if not specified",
     pod(foo=""), zoned(("node-a", "zone1")), [], (), {}, SKIP),
]


@pytest.mark.parametrize("name,incoming,nodes,existing,defaults,services,want", PRE_FILTER_CASES,
                         ids=[c[0] for c in PRE_FILTER_CASES])
def test_pre_filter_counts_matching_pods_per_eligible_domain_as_upstream(name, incoming, nodes, existing, defaults,
                                                                          services, want):
    table = cluster(nodes, existing)
    table.objects.services = services
    out, state = pre_filter(plugin(defaults), incoming, table)
    if want is SKIP:
        assert out is SKIP and state is None
        return
    assert out is None
    got = [(cc.match_nums(), cc.min_match) for cc in state.constraints]
    assert got == want


# ---- TestSingleConstraint / TestMultipleConstraints ---------------------------------------------
# (name, pod, nodes, existing pods, node -> status code)

PODS_2_1_0_3 = (on("node-a", "p-a1", "p-a2", foo="") + on("node-b", "p-b1", foo="")
                + on("node-y", "p-y1", "p-y2", "p-y3", foo=""))
ABXY_FOO = [node("node-a", node="node-a", foo=""), node("node-b", node="node-b", foo=""),
            node("node-x", node="node-x", foo=""), node("node-y", node="node-y")]
ABXY_TAINTED = [node("node-a", node="node-a", foo=""), node("node-b", node="node-b", foo=""),
                node("node-x", node="node-x", foo=""), node("node-y", tainted=True, node="node-y")]
PODS_1_1_0_1 = on("node-a", "p-b1", foo="") + on("node-b", "p-b2", foo="") + on("node-y", "p-y1", foo="")
ABC = [node("node-a", node="node-a"), node("node-b", node="node-b"), node("node-c", node="node-c")]
PODS_2_2_1 = on("node-a", "p-a1", "p-a2", foo="") + on("node-b", "p-b1", "p-b2", foo="") + on("node-c", "p-c1", foo="")

FILTER_CASES = [
    ("no existing pods", pod(foo="", spreads=[spread(1, "zone")]), zoned(*FOUR), [],
     {"node-a": S, "node-b": S, "node-x": S, "node-y": S}),
    ("no existing pods, incoming pod doesn't match itself", pod(foo="", spreads=[spread(1, "zone", selector=BAR)]),
     zoned(*FOUR), [], {"node-a": S, "node-b": S, "node-x": S, "node-y": S}),
    ("existing pods in a different namespace do not count", pod(foo="", spreads=[spread(1, "zone")]), zoned(*FOUR),
     on("node-a", "p-a1", ns="ns1", foo="") + on("node-a", "p-b1", ns="ns2", foo="") + on("node-x", "p-x1", foo="")
     + on("node-y", "p-y1", foo=""), {"node-a": S, "node-b": S, "node-x": U, "node-y": U}),
    ("existing pods do not match null selector", pod(foo="", spreads=[spread(1, "zone", selector=None)]),
     zoned(*FOUR), on("node-x", "p-x1", foo="") + on("node-y", "p-y1", foo=""),
     {"node-a": S, "node-b": S, "node-x": S, "node-y": S}),
    ("pods spread across zones as 3/3, all nodes fit", pod(foo="", spreads=[spread(1, "zone")]), zoned(*FOUR),
     PODS_2_1_0_3, {"node-a": S, "node-b": S, "node-x": S, "node-y": S}),
    ("pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
     pod(foo="", spreads=[spread(1, "zone")]),
     [node("node-a", zone="zone1", node="node-a"), node("node-b", zon="zone1", node="node-b"),
      node("node-x", zone="zone2", node="node-x"), node("node-y", zone="zone2", node="node-y")],
     on("node-a", "p-a1", foo="") + on("node-b", "p-b1", foo="") + on("node-x", "p-x1", foo="")
     + on("node-y", "p-y1", foo=""), {"node-a": S, "node-b": UU, "node-x": U, "node-y": U}),
    ("pod cannot be scheduled as all nodes don't have label 'rack'", pod(foo="", spreads=[spread(1, "rack")]),
     zoned(("node-a", "zone1"), ("node-x", "zone2")), [], {"node-a": UU, "node-x": UU}),
    ("pods spread across nodes as 2/1/0/3, only node-x fits", pod(foo="", spreads=[spread(1, "node")]),
     zoned(*FOUR), PODS_2_1_0_3, {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ("pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
     pod(foo="", spreads=[spread(2, "node")]), zoned(*FOUR), PODS_2_1_0_3,
     {"node-a": U, "node-b": S, "node-x": S, "node-y": U}),
    ("pods spread across nodes as 2/1/0/3, but pod doesn't match itself", pod(bar="", spreads=[spread(1, "node")]),
     zoned(*FOUR), PODS_2_1_0_3, {"node-a": U, "node-b": S, "node-x": S, "node-y": U}),
    ("incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
     pod(foo="", required_terms=node_affinity("node", "In", ["node-a", "node-y"]), spreads=[spread(1, "node")]),
     zoned(*FOUR), PODS_2_1_0_3, {"node-a": S, "node-b": S, "node-x": S, "node-y": U}),
    ("terminating Pods should be excluded", pod(foo="", spreads=[spread(1, "node")]),
     [node("node-a", node="node-a"), node("node-b", node="node-b")],
     [pod("p-a", on="node-a", deleting=True, foo=""), pod("p-b", on="node-b", foo="")], {"node-a": S, "node-b": U}),
    ("incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
     pod(foo="", required_terms=node_affinity("node", "NotIn", ["node-b"]), spreads=[spread(1, "zone")]),
     zoned(*FOUR), on("node-b", "p-b1", "p-b2", foo="") + on("node-y", "p-y1", foo=""),
     {"node-a": S, "node-b": S, "node-x": U, "node-y": U}),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node fits",
     pod(foo="", spreads=[spread(2, "node", min_domains=4)]), ABC, PODS_2_2_1,
     {"node-a": U, "node-b": U, "node-c": S}),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes fit",
     pod(foo="", spreads=[spread(2, "node", min_domains=2)]), ABC, PODS_2_2_1,
     {"node-a": S, "node-b": S, "node-c": S}),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth nodes fit",
     pod(foo="", spreads=[spread(2, "zone", min_domains=3)]), zoned(*FOUR),
     on("node-a", "p-b1", foo="") + on("node-b", "p-b2", foo="") + on("node-y", "p-y1", foo=""),
     {"node-a": U, "node-b": U, "node-x": S, "node-y": S}),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit",
     pod(foo="", spreads=[spread(2, "zone", min_domains=1)]), zoned(*FOUR),
     on("node-a", "p-b1", foo="") + on("node-b", "p-b2", foo="") + on("node-y", "p-y1", foo=""),
     {"node-a": S, "node-b": S, "node-x": S, "node-y": S}),
    ("NodeAffinityPolicy honored with labelSelectors",
     pod(foo="", node_selector={"foo": ""}, spreads=[spread(1, "node")]), ABXY_FOO, PODS_1_1_0_1,
     {"node-a": U, "node-b": U, "node-x": S, "node-y": S}),
    ("NodeAffinityPolicy ignored with labelSelectors",
     pod(foo="", node_selector={"foo": ""}, spreads=[spread(1, "node", affinity=IGNORE)]), ABXY_FOO, PODS_1_1_0_1,
     {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ("NodeAffinityPolicy honored with nodeAffinity",
     pod(foo="", required_terms=node_affinity("foo", "In", [""]), spreads=[spread(1, "node")]), ABXY_FOO,
     PODS_1_1_0_1, {"node-a": U, "node-b": U, "node-x": S, "node-y": S}),
    ("NodeAffinityPolicy ignored with nodeAffinity",
     pod(foo="", required_terms=node_affinity("foo", "In", [""]), spreads=[spread(1, "node", affinity=IGNORE)]),
     ABXY_FOO, PODS_1_1_0_1, {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ("NodeTaintsPolicy honored", pod(foo="", spreads=[spread(1, "node", taints=HONOR)]), ABXY_TAINTED, PODS_1_1_0_1,
     {"node-a": U, "node-b": U, "node-x": S, "node-y": S}),
    ("NodeTaintsPolicy ignored", pod(foo="", spreads=[spread(1, "node")]), ABXY_TAINTED, PODS_1_1_0_1,
     {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    # TestMultipleConstraints
    ("two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
     pod(foo="", spreads=[spread(1, "zone"), spread(1, "node")]), zoned(*FOUR), PODS_2_1_0_3,
     {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ("two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
     pod(foo="", spreads=[spread(1, "zone"), spread(1, "node")]), zoned(*FOUR),
     PODS_2_1_0_3 + on("node-y", "p-y4", foo=""), {"node-a": U, "node-b": U, "node-x": U, "node-y": U}),
    ("Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
     pod(foo="", bar="", spreads=[spread(1, "zone", selector=FOO), spread(1, "node", selector=BAR)]), zoned(*FOUR),
     on("node-a", "p-a1", foo="") + on("node-y", "p-y1", bar=""), {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ("Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
     pod(foo="", bar="", spreads=[spread(1, "zone", selector=FOO), spread(1, "node", selector=BAR)]), zoned(*FOUR),
     on("node-a", "p-a1", foo="") + on("node-x", "p-x1", bar="") + on("node-y", "p-y1", bar=""),
     {"node-a": U, "node-b": U, "node-x": U, "node-y": U}),
    ("Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
     pod(foo="", bar="", spreads=[spread(1, "zone", selector=FOO), spread(1, "node", selector=BAR)]), zoned(*FOUR),
     on("node-a", "p-a1", foo="") + on("node-a", "p-a2", foo="", bar="") + on("node-y", "p-y1", foo="")
     + on("node-y", "p-y2", foo="", bar="") + on("node-y", "p-y3", foo=""),
     {"node-a": U, "node-b": S, "node-x": U, "node-y": U}),
    ("Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
     pod(bar="", spreads=[spread(1, "zone", selector=FOO), spread(1, "node", selector=BAR)]), zoned(*FOUR),
     on("node-a", "p-a1", foo="") + on("node-x", "p-x1", bar="") + on("node-y", "p-y1", bar=""),
     {"node-a": S, "node-b": S, "node-x": U, "node-y": U}),
    ("two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
     pod(foo="", spreads=[spread(1, "zone"), spread(1, "node")]),
     [node("node-a", zone="zone1", node="node-a"), node("node-b", zone="zone1", node="node-b"),
      node("node-x", zone="zone2"), node("node-y", zone="zone2", node="node-y")],
     on("node-a", "p-a1", foo="") + on("node-y", "p-y3", foo=""), {"node-a": U, "node-b": S, "node-x": UU, "node-y": U}),
    ("two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
     pod(foo="", node_selector={"foo": ""}, spreads=[spread(1, "zone"), spread(1, "node", affinity=IGNORE)]),
     [node("node-a", zone="zone1", node="node-a", foo=""), node("node-b", zone="zone1", node="node-b", foo=""),
      node("node-x", zone="zone2", node="node-x", foo=""), node("node-y", zone="zone2", node="node-y")],
     on("node-a", "p-a1", foo="") + on("node-b", "p-b1", foo="") + on("node-y", "p-y1", foo=""),
     {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ("two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
     pod(foo="", spreads=[spread(1, "zone", taints=HONOR), spread(1, "node")]),
     [node("node-a", zone="zone1", node="node-a", foo=""), node("node-b", zone="zone1", node="node-b", foo=""),
      node("node-x", zone="zone2", node="node-x", foo=""), node("node-y", tainted=True, zone="zone2", node="node-y")],
     on("node-a", "p-a1", foo="") + on("node-b", "p-b1", foo="") + on("node-y", "p-y1", foo=""),
     {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
]


def statuses(result, nodes) -> dict[str, str]:
    out = {}
    for i, n in enumerate(nodes):
        if result.passed[i]:
            out[n.name] = S
        else:
            [reason] = [text for text, mask in result.reasons if mask[i]]
            out[n.name] = result.code(reason)
    return out


@pytest.mark.parametrize("name,incoming,nodes,existing,want", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_filter_gives_each_node_upstreams_status_code(name, incoming, nodes, existing, want):
    table = cluster(nodes, existing)
    pl = plugin()
    state = CycleState()
    with state.active():
        assert pl.pre_filter(incoming, table) is None
        result = pl.filter(incoming, table)
    assert statuses(result, nodes) == want


def test_filter_reasons_are_upstreams_words():
    table = cluster([node("node-a", zone="zone1", node="node-a"), node("node-b", zone="zone1", node="node-b"),
                     node("node-c", node="node-c")], on("node-a", "p1", "p2", foo=""))
    result = plugin().filter(pod(foo="", spreads=[spread(1, "node"), spread(1, "zone")]), table)
    by_node = {n: [t for t, m in result.reasons if m[i]] for i, n in enumerate(table.names)}
    # node-a breaks the skew of the first constraint; node-c lacks the second one's key.
    assert by_node == {"node-a": ["node(s) didn't match pod topology spread constraints"], "node-b": [],
                       "node-c": ["node(s) didn't match pod topology spread constraints (missing required label)"]}
    assert ERR_REASON_CONSTRAINTS_NOT_MATCH == "node(s) didn't match pod topology spread constraints"
    assert ERR_REASON_NODE_LABEL_NOT_MATCH == "node(s) didn't match pod topology spread constraints (missing required label)"


def test_an_empty_selector_counts_no_existing_pod_but_matches_the_incoming_pod():
    # As countPodsMatchSelector (returns 0 for an Empty selector) and Filter's selfMatch (Everything
    # matches): with labelSelector {} every domain counts 0, and the pod itself adds 1, within maxSkew 1.
    table = cluster(zoned(*FOUR), PODS_2_1_0_3)
    incoming = pod(foo="", spreads=[spread(1, "node", selector=LabelSelector())])
    out, state = pre_filter(plugin(), incoming, table)
    assert [cc.match_nums() for cc in state.constraints] == [{"node-a": 0, "node-b": 0, "node-x": 0, "node-y": 0}]
    assert plugin().filter(incoming, table).all_passed


def test_the_filter_recomputes_its_state_when_called_outside_a_cycle():
    table = cluster(zoned(*FOUR), PODS_2_1_0_3)
    result = plugin().filter(pod(foo="", spreads=[spread(1, "node")]), table)
    assert list(result.passed) == [False, False, True, False]


def test_a_pod_without_constraints_and_no_defaults_is_skipped_at_pre_filter():
    # System defaulting: the default constraints are all ScheduleAnyway, so nothing to filter.
    table = cluster(zoned(*FOUR), [])
    assert PodTopologySpread().pre_filter(pod(foo=""), table) is SKIP


def test_a_selector_that_does_not_parse_is_an_error_of_the_cycle():
    bad = LabelSelector.of(match_expressions=[LabelSelectorRequirement("foo", "Matches", ("x",))])
    with pytest.raises(PluginError, match='get constraints from pod: obtaining pod\'s hard topology spread '
                                          'constraints: "Matches" is not a valid label selector operator'):
        plugin().pre_filter(pod(foo="", spreads=[spread(1, "zone", selector=bad)]), cluster(zoned(*FOUR), []))


def test_system_default_constraints_follow_the_service_selecting_the_pod():
    # The system defaults (hostname maxSkew 3, zone maxSkew 5) are ScheduleAnyway: they never filter.
    table = cluster([node("n1", **{"kubernetes.io/hostname": "n1"})], [])
    table.objects.services = {"default": [{"app": "web"}]}
    assert PodTopologySpread().pre_filter(pod(app="web"), table) is SKIP


def test_add_pod_and_remove_pod_update_the_counts_for_preemption():
    # As TestPreFilterStateAddPod "node a and b both impact current min match" and its RemovePod twin.
    table = cluster([node("node-a", zone="zone1", node="node-a"), node("node-b", zone="zone1", node="node-b")], [])
    incoming = pod(foo="", spreads=[spread(1, "node")])
    _, state = pre_filter(plugin(), incoming, table)
    added = pod("p-a1", on="node-a", foo="")
    state.update_with_pod(added, incoming, 0, table, +1)
    assert [(cc.match_nums(), cc.min_match) for cc in state.constraints] == [({"node-a": 1, "node-b": 0}, 0)]
    state.update_with_pod(pod("p-b1", on="node-b", foo=""), incoming, 1, table, +1)
    assert [(cc.match_nums(), cc.min_match) for cc in state.constraints] == [({"node-a": 1, "node-b": 1}, 1)]
    state.update_with_pod(pod("other", on="node-a", ns="ns1", foo=""), incoming, 0, table, +1)
    assert state.constraints[0].match_nums() == {"node-a": 1, "node-b": 1}
    state.update_with_pod(added, incoming, 0, table, -1)
    assert [(cc.match_nums(), cc.min_match) for cc in state.constraints] == [({"node-a": 0, "node-b": 1}, 0)]


def test_the_cycle_state_is_a_snapshot_that_later_pods_and_preemption_updates_do_not_share():
    table = cluster(zoned(*FOUR), PODS_2_1_0_3)
    incoming = pod(foo="", spreads=[spread(1, "zone")])
    _, state = pre_filter(plugin(), incoming, table)
    before = state.constraints[0].match_nums()
    table.add_pod(table.index["node-x"], pod("later", on="node-x", foo=""))
    assert state.constraints[0].match_nums() == before  # the decision still explains its own cycle
    state.update_with_pod(pod("victim", on="node-a", foo=""), incoming, table.index["node-a"], table, -1)
    _, fresh = pre_filter(plugin(), incoming, table)
    assert fresh.constraints[0].match_nums() == {"zone1": 3, "zone2": 4}  # the index was not touched
