"""Node lifecycle and taint eviction on the real stack: a failed node is tainted as upstream's node controller
does, its pods go when their tolerationSeconds run out (the 300 s the admission adds, a shorter one, never
without seconds), and recovery lifts the taints and cancels what was waiting."""

from datetime import datetime, timedelta, timezone

import pytest

from scheduler.controllers import node_lifecycle, taint_eviction
from scheduler.controllers.node_lifecycle import node_set_ready
from scheduler.models import Event, Node, Pod
from scheduler.testing.cli import cli
from scheduler.testing.loop import apply, node, pod

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]

# After any binding a test makes (a pod's clock starts at the later of the taint and its binding).
T0 = datetime(2030, 1, 1, 12, 0, 0, tzinfo=timezone.utc)


def taints(name):
    return Node.objects.get(name=name).manifest["spec"].get("taints", [])


@pytest.mark.parametrize("status, want", [
    ("False", [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
               {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": "2030-01-01T12:00:00Z"}]),
    ("Unknown", [{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
                 {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2030-01-01T12:00:00Z"}]),
    ("True", []),
])
def test_the_ready_condition_becomes_upstreams_taints(status, want):
    apply(node("a", spec={"taints": [{"key": "team", "value": "x", "effect": "NoSchedule"}]}))
    node_set_ready(name="a", status=status, now=T0)
    assert taints("a") == [{"key": "team", "value": "x", "effect": "NoSchedule"}] + want


def test_recovery_lifts_the_taints_and_a_swap_keeps_one_no_execute_taint():
    apply(node("a"))
    node_set_ready(name="a", status="False", now=T0)
    node_set_ready(name="a", status="Unknown", now=T0 + timedelta(seconds=5))
    assert [(t["key"], t["effect"]) for t in taints("a")] == [
        ("node.kubernetes.io/unreachable", "NoSchedule"), ("node.kubernetes.io/unreachable", "NoExecute")]
    node_set_ready(name="a", status="True", now=T0 + timedelta(seconds=10))
    assert taints("a") == []
    assert Node.objects.get(name="a").manifest["status"]["conditions"][-1]["reason"] == "KubeletReady"


def test_the_admission_adds_the_default_tolerations_only_when_the_pod_has_none_for_that_taint():
    apply(pod("plain"), pod("own", tolerations=[{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                                 "effect": "NoExecute", "tolerationSeconds": 10}]),
          pod("all", tolerations=[{"operator": "Exists"}]))
    tol = {p.name: p.manifest["spec"].get("tolerations") for p in Pod.objects.all()}
    default = {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    assert tol["plain"] == [{"key": "node.kubernetes.io/not-ready", **default},
                            {"key": "node.kubernetes.io/unreachable", **default}]
    assert tol["own"] == [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                           "tolerationSeconds": 10}, {"key": "node.kubernetes.io/unreachable", **default}]
    assert tol["all"] == [{"operator": "Exists"}]


def test_pods_are_evicted_when_their_toleration_runs_out_the_shorter_first_and_never_without_seconds():
    short = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}]
    forever = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}]
    apply(node("a"), pod("default", nodeName="a"), pod("short", nodeName="a", tolerations=short),
          pod("forever", nodeName="a", tolerations=forever))
    Pod.objects.update(bound_at=T0 - timedelta(hours=1))
    node_set_ready(name="a", status="False", now=T0)
    assert taint_eviction.run(now=T0 + timedelta(seconds=29))["evicted"] == []
    assert taint_eviction.run(now=T0 + timedelta(seconds=30))["evicted"] == ["default/short"]
    assert taint_eviction.run(now=T0 + timedelta(seconds=300))["evicted"] == ["default/default"]
    assert taint_eviction.run(now=T0 + timedelta(days=1))["evicted"] == []
    assert sorted(Pod.objects.values_list("name", flat=True)) == ["forever"]
    e = Event.objects.get(involved_name="short")
    assert (e.type, e.reason, e.message, e.reporting_controller) == (
        "Normal", "TaintManagerEviction", "Marking for deletion Pod default/short", "taint-eviction-controller")


def test_a_pod_that_does_not_tolerate_every_no_execute_taint_goes_at_once():
    apply(node("a", spec={"taints": [{"key": "dedicated", "effect": "NoExecute"}]}),
          pod("p", nodeName="a"), pod("q", nodeName="a", tolerations=[{"key": "dedicated", "operator": "Exists"}]))
    node_set_ready(name="a", status="Unknown", now=T0)
    assert taint_eviction.run(now=T0) == {"evicted": ["default/p"], "waiting": {"default/q": 300.0}, "cancelled": []}


def test_recovery_before_the_deadline_cancels_the_eviction_with_upstreams_event():
    apply(node("a"), pod("p", nodeName="a"))
    node_set_ready(name="a", status="False", now=T0)
    assert taint_eviction.run(now=T0 + timedelta(seconds=10))["waiting"] == {"default/p": 290.0}
    node_set_ready(name="a", status="True", now=T0 + timedelta(seconds=20))
    assert taint_eviction.run(now=T0 + timedelta(seconds=400)) == {"evicted": [], "waiting": {},
                                                                  "cancelled": ["default/p"]}
    assert Event.objects.get(involved_name="p").message == "Cancelling deletion of Pod default/p"


def test_node_fail_and_recover_print_as_kubectl_and_name_a_missing_node():
    apply(node("a"))
    r = cli("node", "fail", "a")
    assert (r.code, r.out) == (0, "node/a NotReady\n")
    assert cli("node", "fail", "a", "--unreachable").out == "node/a unreachable\n"
    assert cli("node", "recover", "a").out == "node/a Ready\n"
    r = cli("node", "fail", "nope")
    assert (r.code, r.err) == (1, 'Error from server (NotFound): nodes "nope" not found\n')
    assert node_lifecycle.monitor() == []


def node_events(name):
    return [(e.reason, e.message, e.reporting_controller)
            for e in Event.objects.filter(involved_kind="Node", involved_name=name).order_by("id")]


def test_the_kubelet_and_the_node_controller_record_the_status_changes_as_upstream():
    apply(node("a"), node("b"), pod("web", nodeName="b"))
    node_set_ready(name="a", status="False", now=T0)  # the kubelet posts NotReady
    node_set_ready(name="a", status="True", now=T0 + timedelta(seconds=5))  # and Ready again
    assert node_events("a") == [("NodeNotReady", "Node a status is now: NodeNotReady", "kubelet"),
                                ("NodeReady", "Node a status is now: NodeReady", "kubelet")]
    node_set_ready(name="b", status="Unknown", now=T0)  # the kubelet went silent: the node controller's call
    assert node_events("b") == [("NodeNotReady", "Node b status is now: NodeNotReady", "node-controller")]
    # MarkPodsNotReady: the pod's Ready condition False, and the pod's event.
    web = Pod.objects.get(name="web")
    ready = [c for c in web.manifest["status"]["conditions"] if c["type"] == "Ready"]
    assert [c["status"] for c in ready] == ["False"]
    e = Event.objects.get(involved_kind="Pod", involved_name="web")
    assert (e.type, e.reason, e.message, e.reporting_controller) == (
        "Warning", "NodeNotReady", "Node is not ready", "node-controller")
    node_set_ready(name="b", status="True", now=T0 + timedelta(seconds=9))
    web = Pod.objects.get(name="web")
    assert [c["status"] for c in web.manifest["status"]["conditions"] if c["type"] == "Ready"] == ["True"]


def test_a_node_already_not_ready_when_its_kubelet_goes_silent_gets_no_controller_event_nor_pod_marks():
    # As upstream (kubernetes#109998): the controller only acts on a Ready -> not Ready transition it sees.
    apply(node("a"), pod("web", nodeName="a"))
    node_set_ready(name="a", status="False", now=T0)
    node_set_ready(name="a", status="Unknown", now=T0 + timedelta(seconds=40))
    assert [r for r, _, who in node_events("a")] == ["NodeNotReady"]
    assert not Event.objects.filter(involved_kind="Pod").exists()


def test_a_monitor_pass_registers_new_nodes_and_notices_removed_ones():
    from scheduler.cluster.services import node_delete

    apply(node("a"), node("b"))
    node_lifecycle.monitor(now=T0)
    node_lifecycle.monitor(now=T0 + timedelta(seconds=5))  # known by now: nothing new
    node_delete(name="b")
    node_lifecycle.monitor(now=T0 + timedelta(seconds=10))
    assert node_events("a") == [("RegisteredNode", "Node a event: Registered Node a in Controller", "node-controller")]
    assert node_events("b") == [("RegisteredNode", "Node b event: Registered Node b in Controller", "node-controller"),
                                ("RemovingNode", "Node b event: Removing Node b from Controller", "node-controller")]


def test_a_monitor_pass_over_an_unchanged_node_set_reads_neither_the_names_nor_the_known_set(monkeypatch):
    from scheduler.cluster.services import node_delete
    from scheduler.controllers import memory

    apply(node("a"), node("b"))
    node_lifecycle.monitor(now=T0)
    recalled = []
    recall = memory.recall
    monkeypatch.setattr(memory, "recall", lambda controller: recalled.append(controller) or recall(controller))
    node_lifecycle.monitor(now=T0 + timedelta(seconds=5))
    assert node_lifecycle._KNOWN not in recalled
    node_delete(name="b")
    apply(node("c"))  # as many nodes as before: the newest id and the names' hashes still move
    node_lifecycle.monitor(now=T0 + timedelta(seconds=10))
    assert node_lifecycle._KNOWN in recalled
    assert [r for r, _, _ in node_events("b")] == ["RegisteredNode", "RemovingNode"]
    assert [r for r, _, _ in node_events("c")] == ["RegisteredNode"]
    assert [r for r, _, _ in node_events("a")] == ["RegisteredNode"]


def _conditions(*conditions):
    return {"conditions": list(conditions)}


HEALTHY = [{"type": "Ready", "status": "True"}, {"type": "MemoryPressure", "status": "False"},
           {"type": "DiskPressure", "status": "False"}, {"type": "PIDPressure", "status": "False"},
           {"type": "NetworkUnavailable", "status": "False"}, {"type": "Custom", "status": "True"}]


@pytest.mark.parametrize("status, looked_at", [
    (_conditions(*HEALTHY), False),
    ({"conditions": []}, False),
    ({"conditions": None}, False),
    ({"phase": "Running"}, False),
    (_conditions({"type": "Ready", "status": "False"}), True),
    (_conditions({"type": "Ready", "status": "Unknown"}), True),
    (_conditions({"type": "Ready"}), True),  # no status: Unknown
    (_conditions({"type": "Ready", "status": ""}), True),
    (_conditions({"type": "Ready", "status": True}), True),  # not a string: desired_taints judges
    (_conditions(*HEALTHY, {"type": "Ready", "status": "False"}), True),  # a second Ready condition
    (_conditions({"type": "MemoryPressure", "status": "True"}), True),
    (_conditions({"type": "DiskPressure", "status": "True"}), True),
    (_conditions({"type": "PIDPressure", "status": "True"}), True),
    (_conditions({"type": "NetworkUnavailable", "status": "True"}), True),
    (_conditions({"type": "MemoryPressure"}), True),  # no status: desired_taints judges
    (_conditions({"type": "MemoryPressure", "status": 1}), True),
    (_conditions("Ready", 7, None, {"status": "False"}), False),  # not conditions at all: nothing to taint
    ({"conditions": {"type": "Ready", "status": "False"}}, True),  # not a list: desired_taints judges
], ids=lambda v: None if isinstance(v, bool) else repr(v)[:60])
def test_the_query_leaves_out_only_nodes_whose_conditions_want_no_taint(status, looked_at):
    """Every node the query leaves out is one desired_taints gives no taint; what it cannot judge it keeps."""
    manifest = node("n")
    manifest["status"].update(status)
    Node.objects.create(name="n", manifest=manifest)
    assert Node.objects.filter(node_lifecycle.may_need_taints()).exists() is looked_at
    if not looked_at:
        assert node_lifecycle.desired_taints(manifest, T0) == []


def test_a_pass_decodes_only_the_nodes_that_may_need_taints_and_every_node_left_out_wants_the_taints_it_has():
    apply(node("plain"), node("empty-taints", spec={"taints": []}), node("cordoned", spec={"unschedulable": True}),
          node("uncordoned", spec={"unschedulable": False, "taints": [{"key": "node.kubernetes.io/unschedulable",
                                                                        "effect": "NoSchedule"}]}),
          node("team", spec={"taints": [{"key": "team", "value": "x", "effect": "NoSchedule"}]}))
    node_set_ready(name="plain", status="True", now=T0)  # posts a healthy Ready condition: still left out
    apply(node("quiet"))
    looked_at = set(Node.objects.filter(node_lifecycle.may_need_taints()).values_list("name", flat=True))
    assert looked_at == {"empty-taints", "cordoned", "uncordoned", "team"}
    for name, manifest in Node.objects.exclude(name__in=looked_at).values_list("name", "manifest"):
        assert node_lifecycle.desired_taints(manifest, T0) == taints(name) == [], name
    assert sorted(node_lifecycle.monitor(now=T0)) == ["cordoned", "uncordoned"]
    assert taints("cordoned") == [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    assert taints("uncordoned") == []


def test_a_whole_pass_judges_again_only_the_nodes_written_since_the_last_one_began(monkeypatch):
    """What a node wants is its manifest's alone: a node nobody wrote since the last whole pass is not decoded."""
    from scheduler.queue import queues

    apply(node("a", spec={"unschedulable": True}), node("b", spec={"taints": [{"key": "team", "effect": "NoSchedule"}]}),
          node("c"))
    judged = []
    desired = node_lifecycle.desired_taints
    monkeypatch.setattr(node_lifecycle, "desired_taints", lambda m, now: judged.append(m["metadata"]["name"]) or desired(m, now))
    assert node_lifecycle.monitor(now=T0) == ["a"]  # cordoned: tainted
    assert sorted(set(judged)) == ["a", "b"]
    judged.clear()
    assert node_lifecycle.monitor(now=T0 + timedelta(seconds=5)) == []
    assert set(judged) == {"a"}  # written by the pass before (its taint), judged once more; b untouched since
    judged.clear()
    node_lifecycle.monitor(now=T0 + timedelta(seconds=10))
    assert judged == []
    apply(node("b"))  # b's taint removed by its owner: judged again, wants nothing
    manifest = Node.objects.get(name="c").manifest
    manifest["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    Node.objects.filter(name="c").update(manifest=manifest)  # c not ready (as its kubelet posts it): judged, tainted
    assert node_lifecycle.monitor(now=T0 + timedelta(seconds=15)) == ["c"]
    assert set(judged) == {"c"} and taints("b") == []
    judged.clear()
    node_lifecycle.monitor(names=["a"], now=T0 + timedelta(seconds=20))  # a pass over named nodes judges them
    assert set(judged) == {"a"}
    judged.clear()
    queues.get_redis().flushdb()  # the controller's memory lost: every node that may need a taint, judged again
    node_lifecycle.monitor(now=T0 + timedelta(seconds=25))
    assert set(judged) == {"a", "c"}
