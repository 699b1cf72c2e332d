"""The nodes page's rows carry each node's status: NotReady and unreachable nodes (with the taints the node
controller put on them), and lost nodes (deleted, pods still bound until PodGC) with what those pods take."""

from datetime import datetime, timezone

import pytest

from dashboard.live import state
from scheduler.cluster.services import node_delete
from scheduler.controllers.node_lifecycle import node_set_ready
from scheduler.models import Pod
from scheduler.testing.loop import apply, drain, node, pod

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def test_node_rows_carry_the_status_notready_unreachable_and_lost_nodes_with_their_pods():
    apply(node("a"), node("b"), node("c"), node("d"), pod("p", cpu="1"))
    drain()
    bound_to = Pod.objects.get(name="p").node_name
    node_delete(name=bound_to)
    now = datetime.now(timezone.utc)
    others = sorted({"a", "b", "c", "d"} - {bound_to})
    node_set_ready(name=others[0], status="False", now=now)
    node_set_ready(name=others[1], status="Unknown", now=now)
    _, rows = state.node_static()
    assert {r[0]: r[7] for r in rows} == {others[0]: "NotReady", others[1]: "Unreachable", others[2]: "Ready",
                                          bound_to: "Lost"}
    taints = {r[0]: r[5] for r in rows}
    assert "node.kubernetes.io/not-ready:NoExecute" in taints[others[0]]
    assert "node.kubernetes.io/unreachable:NoExecute" in taints[others[1]]
    assert state.node_usage()["usage"][bound_to] == [1000, 1024 ** 3, 1, 0]


def test_a_lost_node_leaves_the_page_once_its_pods_are_gone():
    apply(node("a"), pod("p"))
    drain()
    node_delete(name="a")
    assert [r[0] for r in state.node_static()[1]] == ["a"]
    Pod.objects.all().delete()
    assert state.node_static()[1] == [] and state.node_usage()["usage"] == {}
