"""NodeUnschedulable, table-driven as upstream's node_unschedulable_test.go, checked against the reference."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine.nodes import NodeSpec, NodeTable
from scheduler.engine.plugins.node_unschedulable import ERR_REASON_UNSCHEDULABLE, NodeUnschedulable
from scheduler.engine.pods import PodSpec, Toleration
from scheduler.engine.reference import filters as ref

UNSCHED = "node.kubernetes.io/unschedulable"


def engine_reasons(pod, specs):
    res = NodeUnschedulable().filter(pod, NodeTable(specs))
    out = [[text for text, mask in res.reasons if mask[i]] for i in range(len(specs))]
    assert [not r for r in out] == list(res.passed)
    return out


CASES = [
    ("does not schedule pod to unschedulable node", (), True, [ERR_REASON_UNSCHEDULABLE]),
    ("schedules pod to normal node", (), False, []),
    ("schedules pod tolerating the unschedulable taint to unschedulable node",
     (Toleration(key=UNSCHED, effect="NoSchedule"),), True, []),
    ("an Exists toleration with an empty key tolerates everything", (Toleration(operator="Exists"),), True, []),
    ("a toleration for NoExecute only does not help", (Toleration(key=UNSCHED, operator="Exists", effect="NoExecute"),),
     True, [ERR_REASON_UNSCHEDULABLE]),
    ("a toleration with a value does not match the taint's empty value",
     (Toleration(key=UNSCHED, value="x", effect="NoSchedule"),), True, [ERR_REASON_UNSCHEDULABLE]),
]


@pytest.mark.parametrize("name,tolerations,unschedulable,want", CASES, ids=[c[0] for c in CASES])
def test_it_filters_unschedulable_nodes_as_upstream(name, tolerations, unschedulable, want):
    pod = PodSpec("ns", "p", tolerations=tolerations)
    node = NodeSpec("n1", unschedulable=unschedulable)
    assert engine_reasons(pod, [node]) == [want]
    assert ref.node_unschedulable(pod, node) == want


tolerations = st.lists(st.builds(
    Toleration,
    key=st.sampled_from(["", UNSCHED, "other"]),
    operator=st.sampled_from(["Equal", "Exists", ""]),
    value=st.sampled_from(["", "x"]),
    effect=st.sampled_from(["", "NoSchedule", "NoExecute", "PreferNoSchedule"]),
), max_size=3).map(tuple)


@settings(max_examples=200, deadline=None)
@given(tolerations, st.lists(st.booleans(), min_size=1, max_size=6))
def test_it_agrees_with_the_reference(tols, flags):
    pod = PodSpec("ns", "p", tolerations=tols)
    specs = [NodeSpec(f"n{i}", unschedulable=f) for i, f in enumerate(flags)]
    assert engine_reasons(pod, specs) == [ref.node_unschedulable(pod, s) for s in specs]
