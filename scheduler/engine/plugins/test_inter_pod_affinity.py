"""InterPodAffinity, table-driven from upstream's filtering_test.go (TestRequiredAffinitySingleNode,
TestRequiredAffinityMultipleNodes) and scoring_test.go (TestPreferredAffinity,
TestPreferredAffinityWithHardPodAffinitySymmetricWeight)."""

import itertools

import numpy as np
import pytest

from scheduler.engine.framework import SKIP, CycleState, PluginError, PreFilterRejected
from scheduler.engine.labels import LabelSelector, LabelSelectorRequirement
from scheduler.engine.nodes import NodeSpec, NodeTable
from scheduler.engine.plugins.inter_pod_affinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH as AFF,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH as ANTI,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH as EXISTING,
    PRE_FILTER_STATE_KEY,
    InterPodAffinity,
    InterPodAffinityArgs,
)
from scheduler.engine.pods import PodAffinity, PodAffinityTerm, PodSpec, WeightedPodAffinityTerm

_names = (f"pod-{i}" for i in itertools.count())

# As upstream's scoring_test.go `namespaces`.
NAMESPACES = {"subteam1.team1": {"team": "team1"}, "subteam2.team1": {"team": "team1"},
              "subteam1.team2": {"team": "team2"}, "subteam2.team2": {"team": "team2"}}
TEAM1 = LabelSelector.of(match_expressions=[LabelSelectorRequirement("team", "In", ("team1",))])


def expr(key, op, *values) -> LabelSelectorRequirement:
    return LabelSelectorRequirement(key, op, tuple(values))


def term(topology_key, *exprs, namespaces=(), namespace_selector=None) -> PodAffinityTerm:
    return PodAffinityTerm(topology_key, LabelSelector.of(match_expressions=exprs), tuple(namespaces), namespace_selector)


def weighted(weight, t) -> WeightedPodAffinityTerm:
    return WeightedPodAffinityTerm(weight, t)


def pod(labels=None, on="", ns="", affinity=(), anti=(), pref_affinity=(), pref_anti=(), name=None) -> PodSpec:
    aff = PodAffinity(tuple(affinity), tuple(pref_affinity)) if affinity or pref_affinity else None
    anti_ = PodAffinity(tuple(anti), tuple(pref_anti)) if anti or pref_anti else None
    return PodSpec(ns, name or next(_names), node_name=on, labels=dict(labels or {}), pod_affinity=aff,
                   pod_anti_affinity=anti_)


def cluster(nodes: dict[str, dict], existing) -> NodeTable:
    table = NodeTable([NodeSpec(name, labels=dict(labels)) for name, labels in nodes.items()])
    table.objects.namespace_labels = dict(NAMESPACES)
    for p in existing:
        table.add_pod(table.index[p.node_name], p)
    return table


def run_filter(pl, incoming, table):
    state = CycleState()
    with state.active():
        out = pl.pre_filter(incoming, table)
        if out is not None:
            return out, None
        return None, pl.filter(incoming, table)


def statuses(result, table) -> list:
    out = []
    for i in range(table.n):
        if result.passed[i]:
            out.append(None)
        else:
            [reason] = [t for t, m in result.reasons if m[i]]
            out.append((result.code(reason), reason))
    return out


U, UU = "Unschedulable", "UnschedulableAndUnresolvable"
SERVICE_SCAN = {"service": "securityscan"}
SECURITY_S1 = {"security": "S1"}
NODE1 = {"node1": {"region": "r1", "zone": "z11"}}
EXISTING_SCAN = lambda: pod(SERVICE_SCAN, on="node1")  # noqa: E731

# ---- TestRequiredAffinitySingleNode ---------------------------------------------------------------
# (name, incoming pod, existing pods, want: SKIP, a PreFilter rejection message, or the node's status)
SINGLE_NODE_CASES = [
    ("A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
     pod(), [], SKIP),
    ("satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
     pod(SECURITY_S1, affinity=[term("region", expr("service", "In", "securityscan", "value2"))]), [EXISTING_SCAN()],
     None),
    ("satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod",
     pod(SECURITY_S1, affinity=[term("region", expr("service", "NotIn", "securityscan3", "value3"))]), [EXISTING_SCAN()],
     None),
    ("Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
     pod(SECURITY_S1, affinity=[term("", expr("service", "In", "securityscan", "value2"), namespaces=["DiffNameSpace"])]),
     [pod(SERVICE_SCAN, on="node1", ns="ns")], (UU, AFF)),
    ("Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
     pod(SERVICE_SCAN, affinity=[term("", expr("service", "In", "antivirusscan", "value2"))]), [EXISTING_SCAN()],
     (UU, AFF)),
    ("satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution",
     pod(SECURITY_S1, affinity=[term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                                term("region", expr("service", "In", "securityscan"), expr("service", "NotIn", "WrongValue"))]),
     [EXISTING_SCAN()], None),
    ("The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node because one of the matchExpression item don't match.",
     pod(SECURITY_S1, affinity=[term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                                term("region", expr("service", "In", "securityscan2"), expr("service", "NotIn", "WrongValue"))]),
     [EXISTING_SCAN()], (UU, AFF)),
    ("satisfies the PodAffinity and PodAntiAffinity with the existing pod",
     pod(SECURITY_S1, affinity=[term("region", expr("service", "In", "securityscan", "value2"))],
         anti=[term("node", expr("service", "In", "antivirusscan", "value2"))]), [EXISTING_SCAN()], None),
    ("satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
     pod(SECURITY_S1, affinity=[term("region", expr("service", "In", "securityscan", "value2"))],
         anti=[term("node", expr("service", "In", "antivirusscan", "value2"))]),
     [pod(SERVICE_SCAN, on="node1", anti=[term("node", expr("service", "In", "antivirusscan", "value2"))])], None),
    ("satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
     pod(SECURITY_S1, affinity=[term("region", expr("service", "In", "securityscan", "value2"))],
         anti=[term("zone", expr("service", "In", "securityscan", "value2"))]), [EXISTING_SCAN()], (U, ANTI)),
    ("satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
     pod(SERVICE_SCAN, affinity=[term("region", expr("service", "In", "securityscan", "value2"))],
         anti=[term("node", expr("service", "In", "antivirusscan", "value2"))]),
     [pod(SERVICE_SCAN, on="node1", anti=[term("zone", expr("service", "In", "securityscan", "value2"))])],
     (U, EXISTING)),
    ("pod matches its own Label in PodAffinity and that matches the existing pod Labels",
     pod(SERVICE_SCAN, affinity=[term("region", expr("service", "NotIn", "securityscan", "value2"))]),
     [pod(SERVICE_SCAN, on="node2")], (UU, AFF)),
    ("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
     pod(SERVICE_SCAN), [pod(SERVICE_SCAN, on="node1", anti=[term("zone", expr("service", "In", "securityscan", "value2"))])],
     (U, EXISTING)),
    ("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
     pod(SERVICE_SCAN), [pod(SERVICE_SCAN, on="node1", anti=[term("zone", expr("service", "NotIn", "securityscan", "value2"))])],
     SKIP),
    ("satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
     pod(SERVICE_SCAN, anti=[term("region", expr("service", "Exists")), term("region", expr("security", "Exists"))]),
     [pod(SECURITY_S1, on="node1", anti=[term("zone", expr("security", "Exists"))])], (U, ANTI)),
    ("PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
     pod(SERVICE_SCAN, anti=[term("zone", expr("service", "Exists")), term("zone", expr("security", "Exists"))]),
     [pod(SECURITY_S1, on="node1", anti=[term("zone", expr("security", "Exists"))])], (U, ANTI)),
    ("PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
     pod(SECURITY_S1, anti=[term("zone", expr("security", "Exists"))]),
     [pod(SERVICE_SCAN, on="node1", anti=[term("zone", expr("service", "Exists")), term("zone", expr("security", "Exists"))])],
     (U, EXISTING)),
    ("PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
     pod({"abc": "", "xyz": ""}, anti=[term("zone", expr("abc", "Exists")), term("zone", expr("def", "Exists"))]),
     [pod({"def": "", "xyz": ""}, on="node1", anti=[term("zone", expr("abc", "Exists")), term("zone", expr("def", "Exists"))])],
     (U, ANTI)),
    ("PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",
     pod({"def": "", "xyz": ""}, anti=[term("zone", expr("abc", "Exists")), term("zone", expr("def", "Exists"))]),
     [pod({"abc": "", "xyz": ""}, on="node1", anti=[term("zone", expr("abc", "Exists")), term("zone", expr("def", "Exists"))])],
     (U, ANTI)),
    ("PodAffinity fails PreFilter with an invalid affinity label syntax",
     pod(SERVICE_SCAN, affinity=[term("region", expr("service", "In", "{{.bad-value.}}")),
                                 term("node", expr("service", "In", "antivirusscan", "value2"))]), [],
     "parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: \"{{.bad-value.}}\": a valid label must be "
     "an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
     "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
     "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    ("affinity with NamespaceSelector",
     pod(SECURITY_S1, affinity=[term("region", expr("service", "In", "securityscan", "value2"), namespace_selector=TEAM1)]),
     [pod(SERVICE_SCAN, on="node1", ns="subteam1.team1")], None),
    ("affinity with non-matching NamespaceSelector",
     pod(SECURITY_S1, affinity=[term("region", expr("service", "In", "securityscan", "value2"), namespace_selector=TEAM1)]),
     [pod(SERVICE_SCAN, on="node1", ns="subteam1.team2")], (UU, AFF)),
    ("anti-affinity with matching NamespaceSelector",
     pod(SECURITY_S1, ns="subteam1.team1",
         anti=[term("zone", expr("service", "In", "securityscan", "value2"), namespace_selector=TEAM1)]),
     [pod(SERVICE_SCAN, on="node1", ns="subteam2.team1")], (U, ANTI)),
    ("anti-affinity with matching all NamespaceSelector",
     pod(SECURITY_S1, ns="subteam1.team1",
         anti=[term("zone", expr("service", "In", "securityscan", "value2"), namespace_selector=LabelSelector())]),
     [pod(SERVICE_SCAN, on="node1", ns="subteam2.team1")], (U, ANTI)),
    ("anti-affinity with non-matching NamespaceSelector",
     pod(SECURITY_S1, ns="subteam1.team1",
         anti=[term("zone", expr("service", "In", "securityscan", "value2"), namespace_selector=TEAM1)]),
     [pod(SERVICE_SCAN, on="node1", ns="subteam1.team2")], None),
]


@pytest.mark.parametrize("name,incoming,existing,want", SINGLE_NODE_CASES, ids=[c[0][:90] for c in SINGLE_NODE_CASES])
def test_required_affinity_on_a_single_node_as_upstream(name, incoming, existing, want):
    table = cluster({"node1": {"region": "r1", "zone": "z11"}, **({"node2": {}} if any(
        p.node_name == "node2" for p in existing) else {})}, existing)
    out, result = run_filter(InterPodAffinity(), incoming, table)
    if want is SKIP:
        assert out is SKIP
    elif isinstance(want, str):
        assert out == PreFilterRejected(want)
    else:
        assert out is None
        assert statuses(result, table)[table.index["node1"]] == want


# ---- TestRequiredAffinityMultipleNodes -------------------------------------------------------------
CHINA, CHINA_AZ1, INDIA = {"region": "China"}, {"region": "China", "az": "az1"}, {"region": "India"}
R1Z1 = lambda h: {"region": "r1", "zone": "z1", "hostname": h}  # noqa: E731
R1Z2 = lambda h: {"region": "r1", "zone": "z2", "hostname": h}  # noqa: E731

MULTI_NODE_CASES = [
    ("A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has an existing pod that matches the affinity rules",
     pod(affinity=[term("region", expr("foo", "In", "bar"))]), [pod({"foo": "bar"}, on="node1")],
     {"node1": CHINA, "node2": CHINA_AZ1, "node3": INDIA}, [None, None, (UU, AFF)]),
    ("The first pod of the collection should not be blocked from being scheduled onto any node, even there's no existing pod that matches the rule anywhere.",
     pod({"foo": "bar", "service": "securityscan"}, affinity=[term("zone", expr("foo", "In", "bar")),
                                                              term("zone", expr("service", "In", "securityscan"))]),
     [pod({"foo": "bar"}, on="nodeA")], {"nodeA": {"zone": "az1", "hostname": "h1"}, "nodeB": {"zone": "az2", "hostname": "h2"}},
     [None, None]),
    ("The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
     pod({"foo": "bar", "service": "securityscan"}, affinity=[term("zone", expr("foo", "In", "bar")),
                                                              term("zone", expr("service", "In", "securityscan"))]),
     [pod({"foo": "bar"}, on="nodeA")],
     {"nodeA": {"zoneLabel": "az1", "hostname": "h1"}, "nodeB": {"zoneLabel": "az2", "hostname": "h2"}},
     [(UU, AFF), (UU, AFF)]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
     pod(anti=[term("region", expr("foo", "In", "abc"))]), [pod({"foo": "abc"}, on="nodeA")],
     {"nodeA": {"region": "r1", "hostname": "nodeA"}, "nodeB": {"region": "r1", "hostname": "nodeB"}},
     [(U, ANTI), (U, ANTI)]),
    ("This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
     pod(anti=[term("region", expr("foo", "In", "abc")), term("zone", expr("service", "In", "securityscan"))]),
     [pod({"foo": "abc", "service": "securityscan"}, on="nodeA")],
     {"nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"}, "nodeB": {"region": "r1", "zone": "z2", "hostname": "nodeB"}},
     [(U, ANTI), (U, ANTI)]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
     pod(anti=[term("region", expr("foo", "In", "abc"))]), [pod({"foo": "abc"}, on="nodeA")],
     {"nodeA": CHINA, "nodeB": CHINA_AZ1, "nodeC": INDIA}, [(U, ANTI), (U, ANTI), None]),
    ("... but can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
     pod({"foo": "123"}, ns="NS1", anti=[term("region", expr("foo", "In", "bar"))]),
     [pod({"foo": "bar"}, on="nodeA", ns="NS1"), pod(on="nodeC", ns="NS2", anti=[term("region", expr("foo", "In", "123"))])],
     {"nodeA": CHINA, "nodeB": CHINA_AZ1, "nodeC": INDIA}, [(U, ANTI), (U, ANTI), None]),
    ("Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the term is also checked",
     pod({"foo": ""}), [pod(on="nodeA", anti=[term("invalid-node-label", expr("foo", "Exists"))])],
     {"nodeA": R1Z1("nodeA"), "nodeB": R1Z1("nodeB")}, SKIP),
    ("Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
     pod(on="nodeA", anti=[term("invalid-node-label", expr("foo", "Exists"))]), [pod({"foo": ""}, on="nodeA")],
     {"nodeA": R1Z1("nodeA"), "nodeB": R1Z1("nodeB")}, [None, None]),
    ("Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each existingPod's terms on all nodes",
     pod({"foo": "", "bar": ""}), [pod(on="nodeA", anti=[term("zone", expr("foo", "Exists"))]),
                                   pod(on="nodeA", anti=[term("region", expr("bar", "Exists"))])],
     {"nodeA": R1Z1("nodeA"), "nodeB": R1Z2("nodeB")}, [(U, EXISTING), (U, EXISTING)]),
    ("Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one anti-affinity rule of existingPod",
     pod(anti=[term("zone", expr("foo", "Exists")), term("region", expr("bar", "Exists"))]),
     [pod({"foo": ""}, on="nodeA"), pod({"bar": ""}, on="nodeB")],
     {"nodeA": R1Z1("nodeA"), "nodeB": R1Z2("nodeB")}, [(U, ANTI), (U, ANTI)]),
    ("Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
     pod({"foo": "", "bar": ""}),
     [pod(on="nodeA", anti=[term("invalid-node-label", expr("foo", "Exists")), term("zone", expr("bar", "Exists"))])],
     {"nodeA": R1Z1("nodeA"), "nodeB": R1Z2("nodeB")}, [(U, EXISTING), None]),
    ("Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
     pod(anti=[term("invalid-node-label", expr("foo", "Exists")), term("zone", expr("bar", "Exists"))]),
     [pod({"foo": "", "bar": ""}, on="nodeA")], {"nodeA": R1Z1("nodeA"), "nodeB": R1Z2("nodeB")}, [(U, ANTI), None]),
    ("Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
     pod({"foo": "", "bar": ""}),
     [pod(on="nodeA", anti=[term("region", expr("foo", "Exists")), term("zone", expr("bar", "Exists"))])],
     {"nodeA": R1Z1("nodeA"), "nodeB": R1Z2("nodeB")}, [(U, EXISTING), (U, EXISTING)]),
    ("Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
     pod(anti=[term("region", expr("foo", "Exists")), term("zone", expr("bar", "Exists"))]),
     [pod({"foo": "", "bar": ""}, on="nodeA")], {"nodeA": R1Z1("nodeA"), "nodeB": R1Z2("nodeB")}, [(U, ANTI), (U, ANTI)]),
    ("Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term matches incoming pod, so incoming pod can only be scheduled to nodeC",
     pod({"foo": "", "bar": ""}),
     [pod(on="nodeA", anti=[term("zone", expr("foo", "Exists")), term("zone", expr("labelA", "Exists"))]),
      pod(on="nodeB", anti=[term("zone", expr("bar", "Exists")), term("zone", expr("labelB", "Exists"))])],
     {"nodeA": R1Z1("nodeA"), "nodeB": R1Z2("nodeB"), "nodeC": {"region": "r1", "zone": "z3", "hostname": "nodeC"}},
     [(U, EXISTING), (U, EXISTING), None]),
    ("Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match",
     pod(affinity=[term("region", expr("foo", "Exists")), term("zone", expr("bar", "Exists"))]),
     [pod({"foo": "", "bar": ""}, on="nodeA")], {"nodeA": R1Z1("nodeA"), "nodeB": R1Z1("nodeB")}, [None, None]),
    ("Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match, and the match logic should be satisfied on the same pod",
     pod(affinity=[term("region", expr("foo", "Exists")), term("zone", expr("bar", "Exists"))]),
     [pod({"foo": ""}, on="nodeA"), pod({"bar": ""}, on="nodeB")], {"nodeA": R1Z1("nodeA"), "nodeB": R1Z2("nodeB")},
     [(UU, AFF), (UU, AFF)]),
]


@pytest.mark.parametrize("name,incoming,existing,nodes,want", MULTI_NODE_CASES, ids=[c[0][:90] for c in MULTI_NODE_CASES])
def test_required_affinity_on_several_nodes_as_upstream(name, incoming, existing, nodes, want):
    table = cluster(nodes, existing)
    out, result = run_filter(InterPodAffinity(), incoming, table)
    if want is SKIP:
        assert out is SKIP
        return
    assert out is None
    assert statuses(result, table) == want


def test_pre_filter_state_counts_topology_pairs_as_upstream():
    # As TestPreFilterStateAddRemovePod's starting states (before its add/remove).
    label1, label2, label3 = {"region": "r1", "zone": "z11"}, {"region": "r1", "zone": "z12"}, {"region": "r2", "zone": "z21"}
    anti_foo_bar = [term("region", expr("foo", "In", "bar"))]
    table = cluster({"nodeA": label1, "nodeB": label2, "nodeC": label3},
                    [pod({"foo": "bar"}, on="nodeA"), pod(on="nodeC", anti=anti_foo_bar),
                     pod({"foo": "bar"}, on="nodeB", anti=anti_foo_bar)])
    state = CycleState()
    incoming = pod({"foo": "bar"}, anti=anti_foo_bar)
    with state.active():
        assert InterPodAffinity().pre_filter(incoming, table) is None
    s = state.read(PRE_FILTER_STATE_KEY)
    assert s.existing_anti_affinity.as_dict(table) == {("region", "r1"): 1, ("region", "r2"): 1}
    assert s.anti_affinity.as_dict(table) == {("region", "r1"): 2}
    assert s.affinity.as_dict(table) == {}


def test_existing_pods_affinity_terms_that_do_not_parse_are_ignored():
    bad = PodAffinityTerm("zone", LabelSelector.of(match_expressions=[expr("foo", "In", "{{bad}}")]))
    table = cluster({"n1": {"zone": "z1"}, "n2": {"zone": "z2"}}, [pod({"foo": ""}, on="n1", anti=[bad])])
    assert run_filter(InterPodAffinity(), pod({"foo": "{{bad}}"}), table) == (SKIP, None)


# ---- TestPreferredAffinity -------------------------------------------------------------------------
S1, S2 = {"security": "S1"}, {"security": "S2"}
RG_CHINA, RG_INDIA, AZ1, AZ2 = {"region": "China"}, {"region": "India"}, {"az": "az1"}, {"az": "az2"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
STAY_S1_REGION = dict(pref_affinity=[weighted(5, term("region", expr("security", "In", "S1")))])
STAY_S2_REGION = dict(pref_affinity=[weighted(6, term("region", expr("security", "In", "S2")))])
AFFINITY3 = dict(pref_affinity=[weighted(8, term("region", expr("security", "NotIn", "S1"), expr("security", "In", "S2"))),
                                weighted(2, term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist")))])
HARD_AFFINITY = dict(affinity=[term("region", expr("security", "In", "S1", "value2")),
                               term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist"))])
AWAY_S1_AZ = dict(pref_anti=[weighted(5, term("az", expr("security", "In", "S1")))])
AWAY_S2_AZ = dict(pref_anti=[weighted(5, term("az", expr("security", "In", "S2")))])
STAY_S1_REGION_AWAY_S2_AZ = dict(pref_affinity=[weighted(8, term("region", expr("security", "In", "S1")))],
                                 pref_anti=[weighted(5, term("az", expr("security", "In", "S2")))])
NS_SELECTOR_TERM = term("region", expr("security", "In", "S1"), namespaces=["subteam2.team2"], namespace_selector=TEAM1)
AFFINITY_NS_SELECTOR = dict(pref_affinity=[weighted(5, NS_SELECTOR_TERM)])
ANTI_NS_SELECTOR = dict(pref_anti=[weighted(5, NS_SELECTOR_TERM)])


def nodes(*labels):
    return {f"node{i + 1}": lab for i, lab in enumerate(labels)}


# (name, incoming, existing, nodes, ignorePreferredTermsOfExistingPods, want normalized scores or SKIP)
PREFERRED_CASES = [
    ("all nodes are same priority as Affinity is nil", pod(S1), [], nodes(RG_CHINA, RG_INDIA, AZ1), False, SKIP),
    ("Affinity: pod that matches topology key & pods in nodes will get high score comparing to others",
     pod(S1, **STAY_S1_REGION), [pod(S1, on="node1"), pod(S2, on="node2"), pod(S1, on="node3")],
     nodes(RG_CHINA, RG_INDIA, AZ1), False, [100, 0, 0]),
    ("All the nodes that have the same topology key & label value with one of them has an existing pod that match the affinity rules, have the same score",
     pod(**STAY_S1_REGION), [pod(S1, on="node1")], nodes(RG_CHINA, RG_CHINA_AZ1, RG_INDIA), False, [100, 100, 0]),
    ("Affinity: nodes in one region has more matching pods comparing to other region, so the region which has more matches will get high score",
     pod(S1, **STAY_S2_REGION), [pod(S2, on="node1"), pod(S2, on="node1"), pod(S2, on="node2"), pod(S2, on="node3"),
                                 pod(S2, on="node4"), pod(S2, on="node5")],
     nodes(RG_CHINA, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA), False, [100, 0, 100, 100, 0]),
    ("Affinity: different Label operators and values for pod affinity scheduling preference, including some match failures",
     pod(S1, **AFFINITY3), [pod(S1, on="node1"), pod(S2, on="node2"), pod(S1, on="node3")],
     nodes(RG_CHINA, RG_INDIA, AZ1), False, [20, 100, 0]),
    ("Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
     pod(S2), [pod(S1, on="node1", **STAY_S1_REGION), pod(S2, on="node2", **STAY_S2_REGION)],
     nodes(RG_CHINA, RG_INDIA, AZ1), False, [0, 100, 0]),
    ("Affinity symmetry with namespace selector",
     pod(S1, ns="subteam1.team1"), [pod(S1, on="node1", **AFFINITY_NS_SELECTOR), pod(S2, on="node2", **STAY_S2_REGION)],
     nodes(RG_CHINA, RG_INDIA, AZ1), False, [100, 0, 0]),
    ("AntiAffinity symmetry with namespace selector",
     pod(S1, ns="subteam1.team1"), [pod(S1, on="node1", **ANTI_NS_SELECTOR), pod(S2, on="node2", **STAY_S2_REGION)],
     nodes(RG_CHINA, RG_INDIA, AZ1), False, [0, 100, 100]),
    ("Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
     pod(S1), [pod(S1, on="node1", **HARD_AFFINITY), pod(S2, on="node2", **HARD_AFFINITY)],
     nodes(RG_CHINA, RG_INDIA, AZ1), False, [100, 100, 0]),
    ("Anti Affinity: pod that does not match existing pods in node will get high score",
     pod(S1, **AWAY_S1_AZ), [pod(S1, on="node1"), pod(S2, on="node2")], nodes(AZ1, RG_CHINA), False, [0, 100]),
    ("Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score comparing to others",
     pod(S1, **AWAY_S1_AZ), [pod(S1, on="node1"), pod(S1, on="node2")], nodes(AZ1, RG_CHINA), False, [0, 100]),
    ("Anti Affinity: one node has more matching pods comparing to other node, so the node which has more unmatches will get high score",
     pod(S1, **AWAY_S1_AZ), [pod(S1, on="node1"), pod(S1, on="node1"), pod(S2, on="node2")], nodes(AZ1, RG_INDIA),
     False, [0, 100]),
    ("Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
     pod(S2), [pod(S1, on="node1", **AWAY_S2_AZ), pod(S2, on="node2", **AWAY_S1_AZ)], nodes(AZ1, AZ2), False, [0, 100]),
    ("Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity",
     pod(S1, **STAY_S1_REGION_AWAY_S2_AZ), [pod(S1, on="node1"), pod(S1, on="node2")], nodes(RG_CHINA, AZ1), False,
     [100, 0]),
    ("Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing pods have the same labels",
     pod(S1, **STAY_S1_REGION_AWAY_S2_AZ),
     [pod(S1, on="node1"), pod(S1, on="node1"), pod(S1, on="node2"), pod(S1, on="node3"), pod(S1, on="node3"),
      pod(S1, on="node4"), pod(S1, on="node5")],
     nodes(RG_CHINA_AZ1, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA), False, [100, 0, 100, 100, 0]),
    ("Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity & symmetry",
     pod(S1, **STAY_S1_REGION_AWAY_S2_AZ),
     [pod(S1, on="node1"), pod(S2, on="node2"), pod(on="node3", **STAY_S1_REGION_AWAY_S2_AZ), pod(on="node4", **AWAY_S1_AZ)],
     nodes(RG_CHINA, AZ1, RG_INDIA, AZ2), False, [100, 0, 100, 0]),
    ("Avoid panic when partial nodes in a topology don't have pods with affinity",
     pod(S1), [pod(S1, on="node1"), pod(on="node2", **STAY_S1_REGION_AWAY_S2_AZ)], nodes(RG_CHINA, RG_CHINA), False,
     [0, 0]),
    ("Affinity with pods matching NamespaceSelector",
     pod(S1, ns="subteam1.team1", **AFFINITY_NS_SELECTOR),
     [pod(S1, on="node1", ns="subteam1.team1"), pod(S1, on="node1", ns="subteam1.team1"),
      pod(S1, on="node1", ns="subteam1.team2"), pod(S1, on="node2", ns="subteam2.team1")],
     nodes(RG_CHINA, RG_INDIA), False, [100, 0]),
    ("Affinity with pods matching both NamespaceSelector and Namespaces fields",
     pod(S1, ns="subteam1.team1", **AFFINITY_NS_SELECTOR),
     [pod(S1, on="node1", ns="subteam1.team1"), pod(S1, on="node1", ns="subteam1.team1"),
      pod(S1, on="node1", ns="subteam2.team2"), pod(S1, on="node2", ns="subteam2.team1")],
     nodes(RG_CHINA, RG_INDIA), False, [100, 0]),
    ("Anti-affinity with pods matching NamespaceSelector",
     pod(S1, ns="subteam1.team1", **ANTI_NS_SELECTOR),
     [pod(S1, on="node1", ns="subteam1.team1"), pod(S1, on="node1", ns="subteam1.team1"),
      pod(S1, on="node1", ns="subteam1.team2"), pod(S1, on="node2", ns="subteam2.team1")],
     nodes(RG_CHINA, RG_INDIA), False, [0, 100]),
    ("Ignore preferred terms of existing pods",
     pod(S2), [pod(S1, on="node1", **STAY_S1_REGION_AWAY_S2_AZ), pod(S2, on="node2", **STAY_S2_REGION)],
     nodes(RG_CHINA, RG_INDIA), True, SKIP),
    ("Do not ignore preferred terms of existing pods",
     pod(S2), [pod(S1, on="node1", **STAY_S1_REGION_AWAY_S2_AZ), pod(S2, on="node2", **STAY_S2_REGION)],
     nodes(RG_CHINA, RG_INDIA), False, [0, 100]),
]


def run_score(pl, incoming, table):
    state = CycleState()
    with state.active():
        raw = pl.score(incoming, table, np.arange(table.n))
        if raw is None:
            return SKIP
        return list(pl.normalize(raw))


@pytest.mark.parametrize("name,incoming,existing,node_labels,ignore,want", PREFERRED_CASES,
                         ids=[c[0][:90] for c in PREFERRED_CASES])
def test_preferred_affinity_scores_as_upstream(name, incoming, existing, node_labels, ignore, want):
    table = cluster(node_labels, existing)
    pl = InterPodAffinity(InterPodAffinityArgs(hard_pod_affinity_weight=1, ignore_preferred_terms_of_existing_pods=ignore))
    assert run_score(pl, incoming, table) == want


@pytest.mark.parametrize("bad_side", ["pref_affinity", "pref_anti"])
def test_a_preferred_term_that_does_not_parse_fails_pre_score(bad_side):
    bad = [weighted(8, term("region", expr("security", "In", "{{.bad-value.}}")))]
    table = cluster(nodes(RG_CHINA, RG_CHINA), [])
    with pytest.raises(PluginError, match=r'Invalid value: "\{\{\.bad-value\.\}\}"'):
        InterPodAffinity().score(pod(**{bad_side: bad}), table, np.arange(2))


# ---- TestPreferredAffinityWithHardPodAffinitySymmetricWeight ---------------------------------------
HARD_POD_AFFINITY = dict(affinity=[term("region", expr("service", "In", "S1"), namespaces=["", "subteam2.team2"],
                                        namespace_selector=TEAM1)])
HARD_CASES = [
    ("with default weight", pod({"service": "S1"}), 1, [100, 100, 0]),
    ("with zero weight", pod({"service": "S1"}), 0, SKIP),
    ("with no matching namespace", pod({"service": "S1"}, ns="subteam1.team2"), 1, SKIP),
    ("with matching NamespaceSelector", pod({"service": "S1"}, ns="subteam1.team1"), 1, [100, 100, 0]),
    ("with matching Namespaces", pod({"service": "S1"}, ns="subteam2.team2"), 1, [100, 100, 0]),
]


@pytest.mark.parametrize("name,incoming,weight,want", HARD_CASES, ids=[c[0] for c in HARD_CASES])
def test_existing_pods_required_affinity_scores_at_hard_pod_affinity_weight(name, incoming, weight, want):
    table = cluster(nodes(RG_CHINA, RG_INDIA, AZ1),
                    [pod(on="node1", **HARD_POD_AFFINITY), pod(on="node2", **HARD_POD_AFFINITY)])
    assert run_score(InterPodAffinity(InterPodAffinityArgs(hard_pod_affinity_weight=weight)), incoming, table) == want


def test_normalization_uses_the_actual_minimum_and_maximum():
    # Raw scores 8, 8-5=3, -5: the lowest (negative) maps to 0, the highest to 100, the middle by the ratio.
    pl = InterPodAffinity()
    assert list(pl.normalize(np.array([8, 3, -5]))) == [100, int(100 * (8 / 13)), 0]
    assert list(pl.normalize(np.array([7, 7]))) == [0, 0]


def test_hard_pod_affinity_weight_out_of_range_is_refused():
    with pytest.raises(ValueError, match=r"hardPodAffinityWeight: Invalid value: 101: not in valid range \[0, 100\]"):
        InterPodAffinity(InterPodAffinityArgs(hard_pod_affinity_weight=101))


def test_add_pod_and_remove_pod_update_the_pre_filter_state_for_preemption():
    # As TestPreFilterStateAddRemovePod: adding a pod and removing it again gives the state back.
    label1, label2, label3 = {"region": "r1", "zone": "z11"}, {"region": "r1", "zone": "z12"}, {"region": "r2", "zone": "z21"}
    anti_complex = [term("region", expr("foo", "In", "bar", "buzz")), term("zone", expr("service", "NotIn", "bar", "security", "test"))]
    anti_foo_bar = [term("region", expr("foo", "In", "bar"))]
    table = cluster({"nodeA": label1, "nodeB": label2, "nodeC": label3},
                    [pod({"foo": "bar"}, on="nodeA"), pod(on="nodeC", anti=anti_foo_bar)])
    incoming = pod({"foo": "bar"}, anti=anti_complex)
    state = CycleState()
    with state.active():
        InterPodAffinity().pre_filter(incoming, table)
    s = state.read(PRE_FILTER_STATE_KEY)
    before = (s.existing_anti_affinity.as_dict(table), s.anti_affinity.as_dict(table))
    assert before == ({("region", "r2"): 1}, {("region", "r1"): 1, ("zone", "z11"): 1, ("zone", "z21"): 1})
    added = pod({"foo": "bar"}, on="nodeA", anti=anti_complex)
    s.update_with_pod(added, table.index["nodeA"], table, +1)
    assert s.existing_anti_affinity.as_dict(table) == {("region", "r2"): 1, ("region", "r1"): 1, ("zone", "z11"): 1}
    assert s.anti_affinity.as_dict(table) == {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1}
    s.update_with_pod(added, table.index["nodeA"], table, -1)
    assert (s.existing_anti_affinity.as_dict(table), s.anti_affinity.as_dict(table)) == before
