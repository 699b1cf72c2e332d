"""PodTopologySpread PreScore, Score and NormalizeScore, table-driven from upstream's scoring_test.go
(TestPreScoreSkip, TestPreScoreStateEmptyNodes, TestPodTopologySpreadScore)."""

import math

import numpy as np
import pytest

from scheduler.engine.framework import CycleState
from scheduler.engine.labels import LabelSelector, LabelSelectorRequirement
from scheduler.engine.nodes import NodeSpec, NodeTable
from scheduler.engine.plugins.pod_topology_spread import (
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
    LIST_DEFAULTING,
    PRE_SCORE_STATE_KEY,
    PodTopologySpread,
    PodTopologySpreadArgs,
    go_round,
    topology_normalizing_weight,
)
from scheduler.engine.pods import (
    DO_NOT_SCHEDULE,
    HONOR,
    IGNORE,
    NO_SCHEDULE,
    SCHEDULE_ANYWAY,
    NodeSelectorTerm,
    OwnerReference,
    PodSpec,
    Requirement,
    Taint,
    TopologySpreadConstraint,
)

FOO = LabelSelector.of(match_expressions=[LabelSelectorRequirement("foo", "Exists")])
BAR = LabelSelector.of(match_expressions=[LabelSelectorRequirement("bar", "Exists")])
HOST = LABEL_HOSTNAME
TAINT = Taint("node.kubernetes.io/unschedulable", "", NO_SCHEDULE)
RS1 = (OwnerReference("apps/v1", "ReplicaSet", "rs1", controller=True),)
RS2 = (OwnerReference("apps/v1", "ReplicaSet", "rs2", controller=True),)


def node(name, tainted=False, **labels):
    return NodeSpec(name, labels={k.replace("__", "/"): v for k, v in labels.items()},
                    taints=(TAINT,) if tainted else ())


def hosts(*names, **extra):
    return [NodeSpec(n, labels={HOST: n, **extra}) for n in names]


def spread(max_skew, key, selector=FOO, when=SCHEDULE_ANYWAY, min_domains=None, affinity=None, taints=None,
           match_label_keys=()):
    return TopologySpreadConstraint(max_skew, key, when, selector, min_domains, affinity, taints, tuple(match_label_keys))


def pod(name="p", on=None, ns="default", spreads=(), node_selector=None, required_terms=None, owners=(),
        deleting=False, **labels):
    return PodSpec(ns, name, node_name=on or "", labels=dict(labels), topology_spread_constraints=tuple(spreads),
                   node_selector=dict(node_selector or {}), required_terms=required_terms,
                   owner_references=tuple(owners), deleting=deleting)


def on(node_name, *names, ns="default", **labels):
    return [pod(n, on=node_name, ns=ns, **labels) for n in names]


def cluster(nodes, existing):
    table = NodeTable(nodes)
    for p in existing:
        table.add_pod(table.index[p.node_name], p)
    return table


def run_score(pl, incoming, table, candidates):
    rows = np.asarray([table.index[n] for n in candidates], dtype=np.int64)
    state = CycleState()
    with state.active():
        raw = pl.score(incoming, table, rows)
        if raw is None:
            return None, None
        return state.read(PRE_SCORE_STATE_KEY), pl.normalize(raw)


# ---- TestPreScoreSkip / TestPreScoreStateEmptyNodes ---------------------------------------------

def test_pre_score_skips_a_pod_without_soft_constraints():
    pl = PodTopologySpread(PodTopologySpreadArgs(defaulting_type=LIST_DEFAULTING))
    table = cluster(hosts("node-a", "node-b"), [])
    assert run_score(pl, pod(), table, ["node-a", "node-b"]) == (None, None)


def test_pre_score_skips_default_constraints_when_the_pods_replicaset_does_not_exist():
    pl = PodTopologySpread(PodTopologySpreadArgs((spread(2, "planet", selector=None),), LIST_DEFAULTING))
    table = cluster([node("node-a", planet="mars"), node("node-b", planet="mars")], [])
    table.objects.replica_sets = {("default", "rs1"): LabelSelector.of(match_expressions=[
        LabelSelectorRequirement("tar", "Exists")])}
    assert run_score(pl, pod(foo="bar", baz="sup", owners=RS2), table, ["node-a", "node-b"]) == (None, None)


def counts_of(state, table):
    """TopologyValueToPodCounts as upstream's test states it (hostname constraints: {})."""
    out = []
    for c, cnt, reg in zip(state.constraints, state.counts, state.registered):
        if c.topology_key == HOST:
            out.append({})
            continue
        values = list(table.label(c.topology_key).vocab) + [""]
        out.append({values[slot]: int(cnt[slot]) for slot in np.flatnonzero(reg)})
    return out


PRE_SCORE_CASES = [
    ("normal case", PodTopologySpreadArgs(defaulting_type=LIST_DEFAULTING),
     pod(foo="", spreads=[spread(1, "zone"), spread(1, HOST)]),
     [node("node-a", zone="zone1", **{"kubernetes.io/hostname": "node-a"}),
      node("node-b", zone="zone1", **{"kubernetes.io/hostname": "node-b"}),
      node("node-x", zone="zone2", **{"kubernetes.io/hostname": "node-x"})], {},
     [], [{"zone1": 0, "zone2": 0}, {}], [2, 3]),
    ("null selector", PodTopologySpreadArgs(defaulting_type=LIST_DEFAULTING),
     pod(foo="", spreads=[spread(1, "zone", selector=None)]),
     [node("node-a", zone="zone1"), node("node-b", zone="zone1"), node("node-x", zone="zone2")], {},
     [], [{"zone1": 0, "zone2": 0}], [2]),
    ("node-x doesn't have label zone", PodTopologySpreadArgs(defaulting_type=LIST_DEFAULTING),
     pod(foo="", spreads=[spread(1, "zone"), spread(1, HOST, selector=BAR)]),
     [node("node-a", zone="zone1", **{"kubernetes.io/hostname": "node-a"}),
      node("node-b", zone="zone1", **{"kubernetes.io/hostname": "node-b"}),
      node("node-x", **{"kubernetes.io/hostname": "node-x"})], {},
     ["node-x"], [{"zone1": 0}, {}], [1, 2]),
    ("system default constraints and a replicaset", PodTopologySpreadArgs(),
     pod(foo="tar", baz="sup", owners=RS1),
     [node("node-a", **{"kubernetes.io/hostname": "node-a", LABEL_TOPOLOGY_ZONE: "mars"}),
      node("node-b", **{"kubernetes.io/hostname": "node-b", LABEL_TOPOLOGY_ZONE: "mars"}),
      # Nodes with no zone are not excluded: they are a zone of their own ("").
      node("node-c", **{"kubernetes.io/hostname": "node-c"}), node("node-d", **{"kubernetes.io/hostname": "node-d"})],
     {("default", "rs1"): FOO}, [], [{}, {"mars": 0, "": 0}], [4, 2]),
    ("default constraints and a replicaset",
     PodTopologySpreadArgs((spread(1, HOST, selector=None), spread(2, "rack", selector=None, when=DO_NOT_SCHEDULE),
                            spread(2, "planet", selector=None)), LIST_DEFAULTING),
     pod(foo="tar", baz="sup", owners=RS1),
     [node("node-a", rack="rack1", planet="mars", **{"kubernetes.io/hostname": "node-a"})],
     {("default", "rs1"): FOO}, [], [{}, {"mars": 0}], [1, 1]),
    ("default constraints and a replicaset, but pod has constraints",
     PodTopologySpreadArgs((spread(2, "galaxy", selector=None),), LIST_DEFAULTING),
     pod(foo="bar", baz="sup", owners=RS1, spreads=[spread(1, "zone", selector=BAR, when=DO_NOT_SCHEDULE),
                                                    spread(2, "planet", selector=LabelSelector.of({"baz": "sup"}))]),
     [node("node-a", planet="mars", galaxy="andromeda")], {("default", "rs1"): FOO}, [], [{"mars": 0}], [1]),
    ("NodeAffinityPolicy honored with labelSelectors", PodTopologySpreadArgs(defaulting_type=LIST_DEFAULTING),
     pod(foo="", node_selector={"foo": ""}, spreads=[spread(1, "zone", selector=BAR)]),
     [node("node-a", zone="zone1", foo=""), node("node-b", zone="zone1", foo=""), node("node-x", zone="zone2")], {},
     [], [{"zone1": 0, "zone2": 0}], [2]),
    ("NodeTaintsPolicy honored", PodTopologySpreadArgs(defaulting_type=LIST_DEFAULTING),
     pod(foo="", spreads=[spread(1, "zone", selector=BAR, taints=HONOR)]),
     [node("node-a", zone="zone1", foo=""), node("node-b", zone="zone1", foo=""),
      node("node-x", tainted=True, zone="zone2")], {}, [], [{"zone1": 0, "zone2": 0}], [2]),
]


@pytest.mark.parametrize("name,args,incoming,nodes,replica_sets,ignored,want_counts,want_sizes", PRE_SCORE_CASES,
                         ids=[c[0] for c in PRE_SCORE_CASES])
def test_pre_score_state_as_upstream(name, args, incoming, nodes, replica_sets, ignored, want_counts, want_sizes):
    table = cluster(nodes, [])
    table.objects.replica_sets = replica_sets
    state, _ = run_score(PodTopologySpread(args), incoming, table, [n.name for n in nodes])
    assert [table.names[r] for r, i in zip(range(len(nodes)), state.ignored) if i] == ignored
    assert counts_of(state, table) == want_counts
    assert state.weights == [topology_normalizing_weight(s) for s in want_sizes]


# ---- TestPodTopologySpreadScore ------------------------------------------------------------------
# (name, pod, existing pods, candidate nodes, failed nodes, services, want normalized scores)

P_2_1_0_3 = on("node-a", "p-a1", "p-a2", foo="") + on("node-b", "p-b1", foo="") + on("node-d", "p-d1", "p-d2", "p-d3", foo="")
P_4_3_2_1 = (on("node-a", "p-a1", "p-a2", "p-a3", "p-a4", foo="") + on("node-b", "p-b1", "p-b2", "p-b3", foo="")
             + on("node-c", "p-c1", "p-c2", foo="") + on("node-d", "p-d1", foo=""))
P_4_2_1_3 = (on("node-a", "p-a1", "p-a2", "p-a3", "p-a4", foo="") + on("node-b", "p-b1", "p-b2", foo="")
             + on("node-x", "p-x1", foo="") + on("node-y", "p-y1", "p-y2", "p-y3", foo=""))
ZONED = lambda *nz: [NodeSpec(n, labels={"zone": z, HOST: n}) for n, z in nz]  # noqa: E731
NODE_ABC_FOO = [node("node-a", node="node-a", foo=""), node("node-b", node="node-b", foo=""), node("node-c", node="node-c")]
P_2_1_1 = on("node-a", "p-a1", "p-a2", foo="") + on("node-b", "p-b1", foo="") + on("node-c", "p-c1", foo="")
MLK_NODES = ZONED(("node-a", "zone1"), ("node-b", "zone1"), ("node-c", "zone2"), ("node-d", "zone2"))

SCORE_CASES = [
    ("one constraint on node, no existing pods", pod(foo="", spreads=[spread(1, HOST)]), [],
     hosts("node-a", "node-b"), [], {}, [100, 100]),
    ("one constraint on node, only one node is candidate", pod(foo="", spreads=[spread(1, HOST)]),
     on("node-a", "p-a1", "p-a2", foo="") + on("node-b", "p-b1", foo=""), hosts("node-a"), hosts("node-b"), {}, [100]),
    ("one constraint on node, all nodes have the same number of matching pods", pod(foo="", spreads=[spread(1, HOST)]),
     on("node-a", "p-a1", foo="") + on("node-b", "p-b1", foo=""), hosts("node-a", "node-b"), [], {}, [100, 100]),
    ("one constraint on node, all 4 nodes are candidates", pod(foo="", spreads=[spread(1, HOST)]), P_2_1_0_3,
     hosts("node-a", "node-b", "node-c", "node-d"), [], {}, [20, 60, 100, 0]),
    ("one constraint on node, null selector", pod(foo="", spreads=[spread(1, HOST, selector=None)]), P_2_1_0_3,
     hosts("node-a", "node-b", "node-c", "node-d"), [], {}, [100, 100, 100, 100]),
    ("one constraint on node, all 4 nodes are candidates, maxSkew=2", pod(foo="", spreads=[spread(2, HOST)]),
     P_2_1_0_3, hosts("node-a", "node-b", "node-c", "node-d"), [], {}, [33, 66, 100, 16]),
    ("one constraint on node, all 4 nodes are candidates, maxSkew=3", pod(foo="", spreads=[spread(3, HOST)]),
     P_4_3_2_1, hosts("node-a", "node-b", "node-c", "node-d"), [], {}, [44, 66, 77, 100]),
    ("system defaulting, nodes don't have zone, pods match service", pod(foo=""), P_4_3_2_1,
     hosts("node-a", "node-b", "node-c", "node-d"), [], {"default": [{"foo": ""}]}, [44, 66, 77, 100]),
    ("one constraint on node, 3 out of 4 nodes are candidates", pod(foo="", spreads=[spread(1, HOST)]), P_4_2_1_3,
     hosts("node-a", "node-b", "node-x"), hosts("node-y"), {}, [33, 83, 100]),
    ("one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
     pod(foo="", spreads=[spread(1, HOST)]), P_4_2_1_3,
     [NodeSpec("node-a", labels={HOST: "node-a"}), NodeSpec("node-b", labels={"n": "node-b"}),
      NodeSpec("node-x", labels={HOST: "node-x"})], hosts("node-y"), {}, [16, 0, 100]),
    ("one constraint on zone, 3 out of 4 nodes are candidates", pod(foo="", spreads=[spread(1, "zone")]), P_4_2_1_3,
     ZONED(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2")), ZONED(("node-y", "zone2")), {},
     [75, 75, 100]),
    ("two Constraints on zone and node, 2 out of 4 nodes are candidates",
     pod(foo="", spreads=[spread(1, "zone"), spread(1, HOST)]),
     on("node-a", "p-a1", "p-a2", foo="") + on("node-b", "p-b1", foo="") + on("node-x", "p-x1", "p-x2", foo="")
     + on("node-y", "p-y1", "p-y2", "p-y3", "p-y4", foo=""),
     ZONED(("node-a", "zone1"), ("node-x", "zone2")), ZONED(("node-b", "zone1"), ("node-y", "zone2")), {}, [100, 63]),
    ("two Constraints on zone, 2 out of 4 nodes are candidates",
     pod(foo="", bar="", spreads=[spread(1, "zone", selector=FOO), spread(1, "zone", selector=BAR)]),
     on("node-a", "p-a1", foo="", bar="") + on("node-a", "p-a2", foo="") + on("node-b", "p-b1", foo="", bar="")
     + on("node-y", "p-y1", foo="") + on("node-y", "p-y2", foo="", bar="") + on("node-y", "p-y3", foo=""),
     [node("node-a", zone="zone1"), node("node-x", zone="zone2")],
     [node("node-b", zone="zone1"), node("node-y", zone="zone2")], {}, [85, 100]),
    ("two Constraints on zone and node, with different labelSelectors",
     pod(foo="", bar="", spreads=[spread(1, "zone", selector=FOO), spread(1, HOST, selector=BAR)]),
     on("node-a", "p-a1", foo="") + on("node-b", "p-b1", foo="", bar="") + on("node-y", "p-y1", foo="")
     + on("node-y", "p-y2", bar=""),
     ZONED(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2")), [], {},
     [60, 20, 100, 60]),
    ("two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
     pod(foo="", bar="", spreads=[spread(1, "zone", selector=FOO), spread(1, HOST, selector=BAR)]),
     on("node-b", "p-b1", bar="") + on("node-x", "p-x1", foo="") + on("node-y", "p-y1", foo="", bar=""),
     ZONED(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2")), [], {},
     [100, 60, 40, 0]),
    ("two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
     pod(foo="", bar="", spreads=[spread(1, "zone", selector=FOO), spread(1, HOST, selector=BAR)]),
     on("node-a", "p-a1", foo="") + on("node-b", "p-b1", foo="", bar="") + on("node-y", "p-y1", foo="")
     + on("node-y", "p-y2", bar=""),
     ZONED(("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2")), ZONED(("node-y", "zone2")), {},
     [50, 25, 100]),
    ("existing pods in a different namespace do not count", pod(foo="", spreads=[spread(1, HOST)]),
     on("node-a", "p-a1", ns="ns1", foo="") + on("node-a", "p-a2", foo="") + on("node-b", "p-b1", "p-b2", foo=""),
     hosts("node-a", "node-b"), [], {}, [100, 33]),
    ("terminating Pods should be excluded", pod(foo="", spreads=[spread(1, HOST)]),
     [pod("p-a", on="node-a", deleting=True, foo=""), pod("p-b", on="node-b", foo="")],
     hosts("node-a", "node-b"), [], {}, [100, 0]),
    ("minDomains has no effect when ScheduleAnyway", pod(foo="", spreads=[spread(2, "node", min_domains=10)]),
     on("node-a", "p-a1", "p-a2", foo="") + on("node-b", "p-b1", "p-b2", foo="") + on("node-c", "p-c1", foo=""),
     [node("node-a", node="node-a"), node("node-b", node="node-b"), node("node-c", node="node-c")], [], {},
     [75, 75, 100]),
    ("NodeAffinityPolicy honoed with labelSelectors",
     pod(foo="", node_selector={"foo": ""}, spreads=[spread(1, "node")]), P_2_1_1, NODE_ABC_FOO, [], {}, [0, 33, 100]),
    ("NodeAffinityPolicy ignored with labelSelectors",
     pod(foo="", node_selector={"foo": ""}, spreads=[spread(1, "node", affinity=IGNORE)]), P_2_1_1, NODE_ABC_FOO, [],
     {}, [66, 100, 100]),
    ("NodeAffinityPolicy honoed with nodeAffinity",
     pod(foo="", required_terms=(NodeSelectorTerm((Requirement("foo", "In", ("",)),)),), spreads=[spread(1, "node")]),
     P_2_1_1, NODE_ABC_FOO, [], {}, [0, 33, 100]),
    ("NodeAffinityPolicy ignored with nodeAffinity",
     pod(foo="", required_terms=(NodeSelectorTerm((Requirement("foo", "In", ("",)),)),),
         spreads=[spread(1, "node", affinity=IGNORE)]), P_2_1_1, NODE_ABC_FOO, [], {}, [66, 100, 100]),
    ("NodeTaintsPolicy honored", pod(foo="", spreads=[spread(1, "node", taints=HONOR)]), P_2_1_1,
     [node("node-a", node="node-a"), node("node-b", node="node-b"), node("node-c", tainted=True, node="node-c")], [],
     {}, [0, 33, 100]),
    ("NodeTaintsPolicy ignored", pod(foo="", spreads=[spread(1, "node")]), P_2_1_1,
     [node("node-a", node="node-a"), node("node-b", node="node-b"), node("node-c", tainted=True, node="node-c")], [],
     {}, [66, 100, 100]),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
     pod(foo="", bar="", spreads=[spread(1, "zone", selector=LabelSelector(), match_label_keys=["foo"]),
                                  spread(1, HOST, selector=LabelSelector(), match_label_keys=["bar"])]),
     on("node-a", "p-a1", foo="") + on("node-b", "p-b1", foo="", bar="") + on("node-c", "p-y1", foo="")
     + on("node-c", "p-y2", bar=""), MLK_NODES, [], {}, [60, 20, 60, 100]),
    ("matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
     pod(foo="", bar="", baz="", spreads=[spread(1, "zone", selector=FOO),
                                          spread(1, HOST, selector=BAR, match_label_keys=["baz"])]),
     on("node-a", "p-a1", foo="") + on("node-b", "p-b1", foo="", bar="", baz="") + on("node-c", "p-c1", foo="")
     + on("node-c", "p-c2", bar="") + on("node-c", "p-d3", bar="", baz=""), MLK_NODES, [], {}, [60, 20, 60, 100]),
]


@pytest.mark.parametrize("name,incoming,existing,nodes,failed,services,want", SCORE_CASES,
                         ids=[c[0] for c in SCORE_CASES])
def test_scores_normalize_as_upstream(name, incoming, existing, nodes, failed, services, want):
    table = cluster(nodes + failed, existing)
    table.objects.services = services
    # As upstream's TestPodTopologySpreadScore: system defaulting.
    _, normalized = run_score(PodTopologySpread(), incoming, table, [n.name for n in nodes])
    assert list(normalized) == want


def test_ignored_nodes_score_zero_raw_and_normalized():
    table = cluster(hosts("node-a") + [NodeSpec("node-b", labels={"n": "node-b"})], on("node-a", "p1", foo=""))
    rows = np.arange(2)
    state = CycleState()
    pl = PodTopologySpread()
    with state.active():
        raw = pl.score(pod(foo="", spreads=[spread(1, HOST)]), table, rows)
        normalized = pl.normalize(raw)
    assert list(state.read(PRE_SCORE_STATE_KEY).ignored) == [False, True]
    assert list(raw) == [math.floor(1 * math.log(1 + 2) + 0.5), 0] and list(normalized) == [100, 0]


def test_scores_round_halves_away_from_zero_as_go():
    assert list(go_round(np.array([0.5, 1.5, 2.5, 2.4999999999999996, 0.49999999999999994]))) == [1, 2, 3, 2, 0]
