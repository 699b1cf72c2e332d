"""NodeName, table-driven as upstream's node_name_test.go, checked against the reference."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine.framework import Algorithm, Profile
from scheduler.engine.nodes import NodeSpec, NodeTable
from scheduler.engine.plugins.node_name import ERR_REASON, NodeName
from scheduler.engine.plugins.node_unschedulable import NodeUnschedulable
from scheduler.engine.pods import PodSpec
from scheduler.engine.reference import filters as ref


def engine_reasons(pod, specs):
    res = NodeName().filter(pod, NodeTable(specs))
    out = [[text for text, mask in res.reasons if mask[i]] for i in range(len(specs))]
    assert [not r for r in out] == list(res.passed)
    return out


CASES = [
    ("no host specified", "", []),
    ("host matches", "foo", []),
    ("host doesn't match", "bar", [ERR_REASON]),
]


@pytest.mark.parametrize("name,node_name,want", CASES, ids=[c[0] for c in CASES])
def test_it_filters_by_requested_node_name(name, node_name, want):
    pod = PodSpec("ns", "p", node_name=node_name)
    node = NodeSpec("foo")
    assert engine_reasons(pod, [node]) == [want]
    assert ref.node_name(pod, node) == want


def test_it_has_no_pre_filter_as_upstream_master():
    # Upstream's NodeName implements Filter only, so it never narrows the nodes at PreFilter.
    assert not hasattr(NodeName(), "pre_filter")


def test_a_pod_pinned_to_a_node_reports_the_other_nodes_under_the_node_name_reason():
    pod = PodSpec("ns", "p", node_name="foo")
    table = NodeTable([NodeSpec("foo", unschedulable=True), NodeSpec("bar"), NodeSpec("baz")])
    decision = Algorithm(0).schedule(Profile(filters=[NodeUnschedulable(), NodeName()]), pod, table)
    assert decision.fit_error_message() == (
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match the requested node name.")


def test_its_reason_is_unschedulable_and_unresolvable():
    res = NodeName().filter(PodSpec("ns", "p", node_name="foo"), NodeTable([NodeSpec("foo"), NodeSpec("bar")]))
    assert res.code(ERR_REASON) == "UnschedulableAndUnresolvable"


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["", "n0", "n1", "n9"]), st.integers(min_value=1, max_value=5))
def test_it_agrees_with_the_reference(node_name, count):
    pod = PodSpec("ns", "p", node_name=node_name)
    specs = [NodeSpec(f"n{i}") for i in range(count)]
    assert engine_reasons(pod, specs) == [ref.node_name(pod, s) for s in specs]
