"""TaintToleration, table-driven as upstream's taint_toleration_test.go, checked against the reference."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine.nodes import NodeSpec, NodeTable
from scheduler.engine.plugins.taint_toleration import ERR_REASON_UNTOLERATED, TaintToleration
from scheduler.engine.pods import PodSpec, Taint, Toleration
from scheduler.engine.reference import filters as ref

NS, PNS, NE = "NoSchedule", "PreferNoSchedule", "NoExecute"


def engine_reasons(pod, specs):
    res = TaintToleration().filter(pod, NodeTable(specs))
    out = [[text for text, mask in res.reasons if mask[i]] for i in range(len(specs))]
    assert [not r for r in out] == list(res.passed)
    return out


def engine_scores(pod, specs):
    plugin, table = TaintToleration(), NodeTable(specs)
    raw = plugin.score(pod, table, np.arange(table.n))
    return list(raw), list(plugin.normalize(raw))


def reference_scores(pod, specs):
    raw = [ref.taint_toleration_score(pod, s) for s in specs]
    return raw, ref.default_normalize_score(100, True, raw)


FILTER_CASES = [
    ("a pod having no tolerations can't be scheduled onto a node with nonempty taints",
     (), (Taint("dedicated", "user1", NS),), [ERR_REASON_UNTOLERATED]),
    ("a pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
     (Toleration("dedicated", value="user1", effect=NS),), (Taint("dedicated", "user1", NS),), []),
    ("a pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
     (Toleration("dedicated", "Equal", "user2", NS),), (Taint("dedicated", "user1", NS),), [ERR_REASON_UNTOLERATED]),
    ("a toleration with operator Exists tolerates the taint",
     (Toleration("foo", "Exists", effect=NS),), (Taint("foo", "bar", NS),), []),
    ("multiple tolerations tolerate all of multiple taints",
     (Toleration("dedicated", "Equal", "user2", NS), Toleration("foo", "Exists", effect=NS)),
     (Taint("dedicated", "user2", NS), Taint("foo", "bar", NS)), []),
    ("key and value match but a non-empty effect doesn't",
     (Toleration("foo", "Equal", "bar", PNS),), (Taint("foo", "bar", NS),), [ERR_REASON_UNTOLERATED]),
    ("an empty toleration effect matches the NoSchedule taint",
     (Toleration("foo", "Equal", "bar"),), (Taint("foo", "bar", NS),), []),
    ("an untolerated PreferNoSchedule taint does not filter",
     (Toleration("dedicated", "Equal", "user2", NS),), (Taint("dedicated", "user1", PNS),), []),
    ("no toleration and a PreferNoSchedule taint", (), (Taint("dedicated", "user1", PNS),), []),
    ("NoExecute taints filter too", (), (Taint("k", "v", NE),), [ERR_REASON_UNTOLERATED]),
    ("an empty key with Exists tolerates every taint", (Toleration(operator="Exists"),),
     (Taint("a", "1", NS), Taint("b", "2", NE)), []),
    ("Gt tolerations need the alpha comparison gate, off by default",
     (Toleration("node.kubernetes.io/sla", "Gt", "750", NS),), (Taint("node.kubernetes.io/sla", "950", NS),),
     [ERR_REASON_UNTOLERATED]),
]


@pytest.mark.parametrize("name,tols,taints,want", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_it_filters_untolerated_taints_as_upstream(name, tols, taints, want):
    pod = PodSpec("ns", "p", tolerations=tols)
    node = NodeSpec("nodeA", taints=taints)
    assert engine_reasons(pod, [node]) == [want]
    assert ref.taint_toleration_filter(pod, node) == want


SCORE_CASES = [
    ("a node whose taints are tolerated scores higher than one with intolerable taints",
     (Toleration("foo", "Equal", "bar", PNS),),
     [(Taint("foo", "bar", PNS),), (Taint("foo", "blah", PNS),)], [100, 0]),
    ("nodes whose taints are all tolerated score the same however many they have",
     (Toleration("cpu-type", "Equal", "arm64", PNS), Toleration("disk-type", "Equal", "ssd", PNS)),
     [(), (Taint("cpu-type", "arm64", PNS),), (Taint("cpu-type", "arm64", PNS), Taint("disk-type", "ssd", PNS))],
     [100, 100, 100]),
    ("the more intolerable taints a node has, the lower its score",
     (Toleration("foo", "Equal", "bar", PNS),),
     [(), (Taint("cpu-type", "arm64", PNS),), (Taint("cpu-type", "arm64", PNS), Taint("disk-type", "ssd", PNS))],
     [100, 50, 0]),
    ("only PreferNoSchedule taints and tolerations count",
     (Toleration("cpu-type", "Equal", "arm64", NS), Toleration("disk-type", "Equal", "ssd", NS)),
     [(), (Taint("cpu-type", "arm64", NS),), (Taint("cpu-type", "arm64", PNS), Taint("disk-type", "ssd", PNS))],
     [100, 100, 0]),
    ("no taints and no tolerations: the untainted node wins", (),
     [(), (Taint("cpu-type", "arm64", PNS),)], [100, 0]),
]


@pytest.mark.parametrize("name,tols,node_taints,want", SCORE_CASES, ids=[c[0] for c in SCORE_CASES])
def test_it_scores_intolerable_prefer_no_schedule_taints_as_upstream(name, tols, node_taints, want):
    pod = PodSpec("ns", "p", tolerations=tols)
    specs = [NodeSpec(f"node{i}", taints=t) for i, t in enumerate(node_taints)]
    raw, normalized = engine_scores(pod, specs)
    assert normalized == want
    assert (raw, normalized) == reference_scores(pod, specs)


def test_it_scores_only_the_requested_rows():
    pod = PodSpec("ns", "p")
    specs = [NodeSpec("a", taints=(Taint("x", "", PNS),)), NodeSpec("b"), NodeSpec("c", taints=(Taint("y", "", PNS),))]
    raw = TaintToleration().score(pod, NodeTable(specs), np.array([2, 1]))
    assert list(raw) == [1, 0]


taints = st.builds(Taint, key=st.sampled_from(["a", "b", "node.kubernetes.io/unschedulable"]),
                   value=st.sampled_from(["", "1", "x"]), effect=st.sampled_from([NS, PNS, NE]))
tolerations = st.builds(
    Toleration, key=st.sampled_from(["", "a", "b"]), operator=st.sampled_from(["Equal", "Exists", "", "Gt"]),
    value=st.sampled_from(["", "1", "x"]), effect=st.sampled_from(["", NS, PNS, NE]))


@settings(max_examples=300, deadline=None)
@given(st.lists(tolerations, max_size=3).map(tuple),
       st.lists(st.lists(taints, max_size=4, unique_by=lambda t: (t.key, t.effect)).map(tuple), min_size=1, max_size=6))
def test_it_agrees_with_the_reference(tols, node_taints):
    pod = PodSpec("ns", "p", tolerations=tols)
    specs = [NodeSpec(f"n{i}", taints=t) for i, t in enumerate(node_taints)]
    assert engine_reasons(pod, specs) == [ref.taint_toleration_filter(pod, s) for s in specs]
    assert engine_scores(pod, specs) == reference_scores(pod, specs)
