"""NodeAffinity, table-driven as upstream's node_affinity_test.go, checked against the reference."""

import numpy as np
import pytest

from scheduler.engine.framework import Algorithm, PreFilterRejected, Profile
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine.nodes import NodeSpec, NodeTable
from scheduler.engine.plugin_args import NodeAffinityArgs
from scheduler.engine.field import parse_int64
from scheduler.engine.plugins.node_affinity import ERR_REASON_ENFORCED, ERR_REASON_POD, NodeAffinity
from scheduler.engine.pods import NodeSelectorTerm, PodSpec, PreferredTerm, Requirement
from scheduler.engine.reference import filters as ref

POD, ENFORCED = [ERR_REASON_POD], [ERR_REASON_ENFORCED]


def R(key, op, *values):
    return Requirement(key, op, tuple(values))


def T(*exprs, fields=()):
    return NodeSelectorTerm(match_expressions=tuple(exprs), match_fields=tuple(fields))


def pod(selector=None, required=None, preferred=()):
    return PodSpec("ns", "p", node_selector=selector or {}, required_terms=required, preferred_terms=preferred)


def engine_reasons(plugin, pod, specs):
    res = plugin.filter(pod, NodeTable(specs))
    out = [[text for text, mask in res.reasons if mask[i]] for i in range(len(specs))]
    assert [not r for r in out] == list(res.passed)
    return out


def engine_scores(plugin, pod, specs):
    table = NodeTable(specs)
    raw = plugin.score(pod, table, np.arange(table.n))
    if raw is None:
        return None
    return list(raw), list(plugin.normalize(raw))


def reference_scores(pod, specs, args):
    if ref.node_affinity_pre_score_skip(pod, args):
        return None
    raw = [ref.node_affinity_score(pod, s, args) for s in specs]
    return raw, ref.default_normalize_score(100, False, raw)


ADDED = NodeAffinityArgs(added_required_terms=(T(R("zone", "In", "foo")),))

FILTER_CASES = [
    ("no selector", pod(), {}, None, []),
    ("missing labels", pod({"foo": "bar"}), {}, None, POD),
    ("same labels", pod({"foo": "bar"}), {"foo": "bar"}, None, []),
    ("node labels are superset", pod({"foo": "bar"}), {"foo": "bar", "baz": "blah"}, None, []),
    ("node labels are subset", pod({"foo": "bar", "baz": "blah"}), {"foo": "bar"}, None, POD),
    ("In operator that matches the existing node", pod(required=(T(R("foo", "In", "bar", "value2")),)),
     {"foo": "bar"}, None, []),
    ("Gt operator that matches the existing node", pod(required=(T(R("kernel-version", "Gt", "0204")),)),
     {"kernel-version": "0206"}, None, []),
    ("NotIn operator that matches the existing node", pod(required=(T(R("mem-type", "NotIn", "DDR", "DDR2")),)),
     {"mem-type": "DDR3"}, None, []),
    ("Exists operator that matches the existing node", pod(required=(T(R("GPU", "Exists")),)),
     {"GPU": "NVIDIA-GRID-K1"}, None, []),
    ("affinity that doesn't match node's labels won't schedule", pod(required=(T(R("foo", "In", "value1", "value2")),)),
     {"foo": "bar"}, None, POD),
    ("nil or empty terms match no objects", pod(required=(NodeSelectorTerm(),)), {"foo": "bar"}, None, POD),
    ("no required terms at all match no node", pod(required=()), {"foo": "bar"}, None, POD),
    ("empty MatchExpressions match no objects", pod(required=(T(),)), {"foo": "bar"}, None, POD),
    ("no Affinity will schedule onto a node", pod(), {"foo": "bar"}, None, []),
    ("multiple matchExpressions ANDed that match", pod(required=(T(R("GPU", "Exists"), R("GPU", "NotIn", "AMD", "INTER")),)),
     {"GPU": "NVIDIA-GRID-K1"}, None, []),
    ("multiple matchExpressions ANDed that don't match", pod(required=(T(R("GPU", "Exists"), R("GPU", "In", "AMD", "INTER")),)),
     {"GPU": "NVIDIA-GRID-K1"}, None, POD),
    ("multiple NodeSelectorTerms ORed", pod(required=(T(R("foo", "In", "bar", "value2")), T(R("diffkey", "In", "wrong", "value2")))),
     {"foo": "bar"}, None, []),
    ("Affinity and NodeSelector both satisfied", pod({"foo": "bar"}, (T(R("foo", "Exists")),)), {"foo": "bar"}, None, []),
    ("Affinity satisfied but NodeSelector not", pod({"foo": "bar"}, (T(R("foo", "Exists")),)), {"foo": "barrrrrr"}, None, POD),
    ("an invalid value in an affinity term won't schedule", pod(required=(T(R("foo", "In", "invalid value: ___@#$%^")),)),
     {"foo": "bar"}, None, POD),
    ("an invalid term does not stop another term from matching",
     pod(required=(T(R("foo", "Exists", "x")), T(R("foo", "In", "bar")))), {"foo": "bar"}, None, []),
    ("NotIn and DoesNotExist match a node lacking the key", pod(required=(T(R("a", "NotIn", "x"), R("b", "DoesNotExist")),)),
     {}, None, []),
    ("Gt needs the node value to parse as an integer", pod(required=(T(R("n", "Gt", "1")),)), {"n": "1_0"}, None, POD),
    ("Lt with an integer node value", pod(required=(T(R("n", "Lt", "10")),)), {"n": "9"}, None, []),
    ("Gt with two values is invalid", pod(required=(T(R("n", "Gt", "1", "2")),)), {"n": "9"}, None, POD),
    ("Gt with a negative bound is not a valid label value", pod(required=(T(R("n", "Gt", "-1")),)), {"n": "9"}, None, POD),
    ("Gt with a node value beyond int64 does not match",
     pod(required=(T(R("n", "Gt", "1")),)), {"n": "99999999999999999999"}, None, POD),
    ("matchFields In matches the node name", pod(required=(T(fields=(R("metadata.name", "In", "node1"),)),)),
     {}, None, []),
    ("matchFields In doesn't match", pod(required=(T(fields=(R("metadata.name", "In", "node2"),)),)), {}, None, POD),
    ("matchFields In with two values is invalid", pod(required=(T(fields=(R("metadata.name", "In", "node1", "node2"),)),)),
     {}, None, POD),
    ("two terms: matchFields doesn't match, matchExpressions does",
     pod(required=(T(fields=(R("metadata.name", "In", "node2"),)), T(R("foo", "In", "bar")))), {"foo": "bar"}, None, []),
    ("one term: matchFields doesn't match, matchExpressions does",
     pod(required=(T(R("foo", "In", "bar"), fields=(R("metadata.name", "In", "node2"),)),)), {"foo": "bar"}, None, POD),
    ("one term: both matchFields and matchExpressions match",
     pod(required=(T(R("foo", "In", "bar"), fields=(R("metadata.name", "In", "node1"),)),)), {"foo": "bar"}, None, []),
    ("two terms: neither matches",
     pod(required=(T(fields=(R("metadata.name", "In", "node2"),)), T(R("foo", "In", "not-match")))), {"foo": "bar"}, None, POD),
    ("matches added affinity and Pod's node affinity", pod(required=(T(R("zone", "In", "foo")),)), {"zone": "foo"}, ADDED, []),
    ("matches added affinity but not Pod's node affinity", pod(required=(T(R("zone", "In", "bar")),)), {"zone": "foo"}, ADDED, POD),
    ("doesn't match added affinity", pod(), {"zone": "bar"}, ADDED, ENFORCED),
    ("added affinity wins when both fail", pod({"x": "y"}), {"zone": "bar"}, ADDED, ENFORCED),
]


@pytest.mark.parametrize("name,p,labels,args,want", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_it_filters_as_upstream(name, p, labels, args, want):
    node = NodeSpec("node1", labels=labels)
    assert engine_reasons(NodeAffinity(args), p, [node]) == [want]
    assert ref.node_affinity_filter(p, node, args) == want


PRE_FILTER_CASES = [
    ("no affinity", pod(), None),
    ("empty required terms", pod(required=()), None),
    ("a term without node name affinity leaves every node", pod(required=(T(R("foo", "Exists")),)), None),
    ("a node name in matchFields", pod(required=(T(fields=(R("metadata.name", "In", "node1"),)),)), {"node1"}),
    ("names in one term intersect", pod(required=(T(fields=(R("metadata.name", "In", "node1", "node2"),
                                                             R("metadata.name", "In", "node2", "node3"))),)), {"node2"}),
    ("names across terms union", pod(required=(T(fields=(R("metadata.name", "In", "node1"),)),
                                               T(fields=(R("metadata.name", "In", "node2"),)))), {"node1", "node2"}),
    ("one term without names means all nodes", pod(required=(T(fields=(R("metadata.name", "In", "node1"),)),
                                                             T(R("foo", "Exists")))), None),
    ("NotIn does not narrow", pod(required=(T(fields=(R("metadata.name", "NotIn", "node1"),)),)), None),
    ("conflicting names give the empty set (upstream: 'pod affinity terms conflict')",
     pod(required=(T(fields=(R("metadata.name", "In", "node1"), R("metadata.name", "In", "node2"))),)), set()),
]


@pytest.mark.parametrize("name,p,want", PRE_FILTER_CASES, ids=[c[0] for c in PRE_FILTER_CASES])
def test_its_pre_filter_narrows_by_node_name_as_upstream(name, p, want):
    table = NodeTable([NodeSpec("node1"), NodeSpec("node2")])
    got = NodeAffinity().pre_filter(p, table)
    if want == set():
        # The whole pod is rejected at PreFilter with upstream's message.
        assert got == PreFilterRejected("pod affinity terms conflict")
    else:
        assert got == want
    assert ref.node_affinity_pre_filter(p) == got


def test_conflicting_node_names_give_upstreams_prefilter_message():
    table = NodeTable([NodeSpec("node1"), NodeSpec("node2")])
    p = pod(required=(T(fields=(R("metadata.name", "In", "node1"), R("metadata.name", "In", "node2"))),))
    decision = Algorithm().schedule(Profile(filters=[NodeAffinity()]), p, table)
    assert decision.fit_error_message() == "0/2 nodes are available: pod affinity terms conflict."


PREF_1 = (PreferredTerm(2, T(R("foo", "In", "bar"))),)
PREF_2 = (
    PreferredTerm(2, T(R("foo", "In", "bar"))),
    PreferredTerm(4, T(R("key", "In", "value"))),
    PreferredTerm(5, T(R("foo", "In", "bar"), R("key", "In", "value"), R("az", "In", "az1"))),
)
NODES_3 = [{"foo": "bar"}, {"foo": "bar", "key": "value", "az": "az1"}, {"key": "value"}]
SCORE_CASES = [
    ("Skip when neither pod nor args prefer anything", pod(), [{"foo": "bar"}, {}], None, None),
    ("no node matches the preferred terms", pod(preferred=PREF_1), [{"x": "y"}, {}], None, [0, 0]),
    ("only the first node matches", pod(preferred=PREF_1), [{"foo": "bar"}, {"key": "value"}], None, [100, 0]),
    ("the node matching most weight wins", pod(preferred=PREF_2), NODES_3, None, [18, 100, 36]),
    ("added preferred terms count too", pod(), [{"foo": "bar"}, {"key": "value"}],
     NodeAffinityArgs(added_preferred_terms=PREF_1), [100, 0]),
    ("pod and added preferred terms add up", pod(preferred=PREF_1), [{"foo": "bar"}, {"key": "value"}],
     NodeAffinityArgs(added_preferred_terms=(PreferredTerm(3, T(R("key", "Exists"))),)), [66, 100]),
    ("weight-0 and empty terms are dropped", pod(preferred=(PreferredTerm(0, T(R("foo", "Exists"))), PreferredTerm(7, T()))),
     [{"foo": "bar"}, {}], None, [0, 0]),
]


@pytest.mark.parametrize("name,p,labels,args,want", SCORE_CASES, ids=[c[0] for c in SCORE_CASES])
def test_it_scores_preferred_terms_as_upstream(name, p, labels, args, want):
    specs = [NodeSpec(f"node{i}", labels=lb) for i, lb in enumerate(labels)]
    got = engine_scores(NodeAffinity(args), p, specs)
    assert (got if got is None else got[1]) == want
    assert got == reference_scores(p, specs, args)


def test_it_rejects_added_affinity_that_does_not_parse():
    with pytest.raises(ValueError):
        NodeAffinity(NodeAffinityArgs(added_required_terms=(T(R("foo", "In")),)))
    with pytest.raises(ValueError):
        NodeAffinity(NodeAffinityArgs(added_preferred_terms=(PreferredTerm(1, T(R("foo", "Bogus"))),)))


@pytest.mark.parametrize("text,want", [("10", 10), ("+7", 7), ("-3", -3), ("1_0", None), (" 1", None), ("", None),
                                       ("9223372036854775807", 2**63 - 1), ("9223372036854775808", None), ("١", None)])
def test_it_parses_integers_as_go_strconv(text, want):
    assert parse_int64(text) == want
    assert ref.go_parse_int(text) == want


# ---- engine vs reference on random clusters ---------------------------------------------------
KEYS = ["a", "b", "example.com/c", "-bad"]
VALUES = ["", "x", "y", "1", "10", "-3", "1_0", "007"]
NAMES = ["n0", "n1", "n2", "zz"]

requirements = st.builds(
    Requirement, st.sampled_from(KEYS), st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Nope"]),
    st.lists(st.sampled_from(VALUES), max_size=2).map(tuple))
field_requirements = st.builds(
    Requirement, st.sampled_from(["metadata.name", "metadata.name", "spec.other"]), st.sampled_from(["In", "NotIn", "Exists"]),
    st.lists(st.sampled_from(NAMES + [""]), max_size=2).map(tuple))
terms = st.builds(NodeSelectorTerm, st.lists(requirements, max_size=2).map(tuple), st.lists(field_requirements, max_size=1).map(tuple))
preferred = st.lists(st.builds(PreferredTerm, st.integers(min_value=0, max_value=100), terms), max_size=3).map(tuple)
pods = st.builds(
    pod,
    st.dictionaries(st.sampled_from(KEYS[:3]), st.sampled_from(VALUES), max_size=2),
    st.one_of(st.none(), st.lists(terms, max_size=3).map(tuple)),
    preferred,
)
labels = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=4)
valid_terms = terms.filter(lambda t: not ref._term_parse_errors(t))
args = st.one_of(st.none(), st.builds(
    NodeAffinityArgs, st.one_of(st.none(), st.lists(valid_terms, max_size=2).map(tuple)),
    st.lists(st.builds(PreferredTerm, st.integers(min_value=1, max_value=100), valid_terms), max_size=2).map(tuple)))


@settings(max_examples=400, deadline=None)
@given(pods, st.lists(labels, min_size=1, max_size=4), args)
def test_it_agrees_with_the_reference(p, node_labels, a):
    specs = [NodeSpec(f"n{i}", labels=lb) for i, lb in enumerate(node_labels)]
    plugin = NodeAffinity(a)
    assert engine_reasons(plugin, p, specs) == [ref.node_affinity_filter(p, s, a) for s in specs]
    assert plugin.pre_filter(p, NodeTable(specs)) == ref.node_affinity_pre_filter(p)
    assert engine_scores(plugin, p, specs) == reference_scores(p, specs, a)
