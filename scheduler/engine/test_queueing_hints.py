"""QueueingHints: which waiting pods an event moves, and each plugin's hint per event (upstream's
isSchedulableAfter* tests as the model: True is Queue, False QueueSkip)."""

import pytest

from scheduler.engine import queueing_hints as qh
from scheduler.engine.labels import LabelSelector, LabelSelectorRequirement
from scheduler.engine.nodes import NodeSpec
from scheduler.engine.pods import (DO_NOT_SCHEDULE, NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE, Container, HostPort,
                                   NodeSelectorTerm, PodAffinity, PodAffinityTerm, PodSpec, Requirement, Taint,
                                   Toleration, TopologySpreadConstraint)
from scheduler.engine.queueing_hints import (NodeChange, PodChange, PodDelete, assigned, keys_to_move, node_added,
                                             node_update_events, rejected_by)

AFFINITY_FAIL = "0/2 nodes are available: 2 node(s) didn't match pod affinity rules."
SPREAD_FAIL = "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints."
FIT_FAIL = "0/2 nodes are available: 2 Insufficient cpu."
NODE_AFFINITY_FAIL = "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
TAINT_FAIL = "0/1 nodes are available: 1 node(s) had untolerated taint(s)."
MIXED_FAIL = ("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector. "
              "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.")
CACHE = LabelSelector(match_labels=(("app", "cache"),))

WANTS_CACHE = PodSpec(namespace="default", name="front", uid="f", pod_affinity=PodAffinity(
    required=(PodAffinityTerm("zone", CACHE),)))
SPREADS_CACHE = PodSpec(namespace="default", name="spread", uid="s", labels={"app": "cache"},
                        topology_spread_constraints=(TopologySpreadConstraint(1, "zone", DO_NOT_SCHEDULE, CACHE),))
NO_OWN_CONSTRAINTS = PodSpec(namespace="default", name="defaulted", uid="d")

BOUND_CACHE = PodChange(assigned("default", "cache", "c", "n1", {"app": "cache"}))
BOUND_WEB = PodChange(assigned("default", "web", "w", "n1", {"app": "web"}))
RELABELLED_CACHE = PodChange(assigned("default", "db", "b", "n1", {"app": "cache"}),
                             assigned("default", "db", "b", "n1", {"app": "db"}))


def node(name="n1", labels=None, taints=(), cpu=4000, memory=8 << 30, pods=110, unschedulable=False, **scalar):
    return NodeSpec(name=name, labels=dict(labels or {}), taints=tuple(taints), unschedulable=unschedulable,
                    allocatable={"cpu": cpu, "memory": memory, "pods": pods, **scalar})


def pod(name="waiting", **kw):
    requests = kw.pop("requests", {})
    ports = kw.pop("ports", ())
    return PodSpec(namespace=kw.pop("namespace", "default"), name=name, uid=kw.pop("uid", name),
                   containers=(Container("c", requests=requests, ports=ports),), **kw)


def add(new):
    return NodeChange("NodeAdd", new)


def update(event, old, new):
    return NodeChange(event, new, old)


ALLOC, LABEL, TAINT = qh.EVENT_NODE_UPDATE_ALLOCATABLE, qh.EVENT_NODE_UPDATE_LABEL, qh.EVENT_NODE_UPDATE_TAINT

# ---- which pods move, under which event --------------------------------------------------------------

MOVE_CASES = [
    # (id, waiting (key, message, spec), changes, expected)
    ("affinity_pod_moves_on_matching_add", ("default/front", AFFINITY_FAIL, WANTS_CACHE), [BOUND_CACHE],
     {"AssignedPodAdd": ["default/front"]}),
    ("affinity_pod_stays_on_unrelated_add", ("default/front", AFFINITY_FAIL, WANTS_CACHE), [BOUND_WEB], {}),
    ("same_pod_rejected_by_fit_only_stays", ("default/front", FIT_FAIL, WANTS_CACHE), [BOUND_CACHE], {}),
    ("affinity_pod_moves_on_relabel", ("default/front", AFFINITY_FAIL, WANTS_CACHE), [BOUND_WEB, RELABELLED_CACHE],
     {"AssignedPodUpdate": ["default/front"]}),
    ("spread_pod_moves_on_matching_add", ("default/spread", SPREAD_FAIL, SPREADS_CACHE), [BOUND_CACHE],
     {"AssignedPodAdd": ["default/spread"]}),
    ("spread_pod_stays_on_unrelated_add", ("default/spread", SPREAD_FAIL, SPREADS_CACHE), [BOUND_WEB], {}),
    ("default_constraints_move_without_asking", ("default/defaulted", SPREAD_FAIL, NO_OWN_CONSTRAINTS), [BOUND_WEB],
     {"AssignedPodAdd": ["default/defaulted"]}),
    # Node events and deletions.
    ("fit_pod_moves_on_assigned_delete", ("default/big", FIT_FAIL, pod("big", requests={"cpu": 3000})),
     [PodDelete(assigned("default", "old", "o", "n1", {}))], {"AssignedPodDelete": ["default/big"]}),
    ("fit_pod_stays_on_unassigned_delete", ("default/big", FIT_FAIL, pod("big", requests={"cpu": 3000})),
     [PodDelete(assigned("default", "old", "o", "", {}))], {}),
    ("node_affinity_pod_stays_on_assigned_delete", ("default/w", NODE_AFFINITY_FAIL, pod(node_selector={"disk": "ssd"})),
     [PodDelete(assigned("default", "old", "o", "n1", {}))], {}),
    ("node_affinity_pod_moves_on_matching_node_add", ("default/w", NODE_AFFINITY_FAIL, pod(node_selector={"disk": "ssd"})),
     [add(node(labels={"disk": "ssd"}))], {"NodeAdd": ["default/w"]}),
    ("node_affinity_pod_stays_on_node_add_still_not_matching",
     ("default/w", NODE_AFFINITY_FAIL, pod(node_selector={"disk": "ssd"})), [add(node(labels={"disk": "hdd"}))], {}),
    ("node_affinity_pod_stays_on_taint_update", ("default/w", NODE_AFFINITY_FAIL, pod(node_selector={"disk": "ssd"})),
     [update(TAINT, node(labels={"disk": "hdd"}, taints=[Taint("x")]), node(labels={"disk": "ssd"}))], {}),
    ("node_affinity_pod_moves_on_label_update", ("default/w", NODE_AFFINITY_FAIL, pod(node_selector={"disk": "ssd"})),
     node_update_events(node(labels={"disk": "hdd"}), node(labels={"disk": "ssd"})), {LABEL: ["default/w"]}),
    ("any_rejector_queueing_moves", ("default/w", MIXED_FAIL, pod(node_selector={"disk": "ssd"}, requests={"cpu": 100})),
     [PodDelete(assigned("default", "old", "o", "n1", {}))], {"AssignedPodDelete": ["default/w"]}),
    ("unknown_rejector_moves_on_any_event", ("default/w", "0/0 nodes are available", pod()),
     [update(TAINT, node(), node(taints=[Taint("x")]))], {TAINT: ["default/w"]}),
    ("first_event_that_moves_names_it", ("default/w", TAINT_FAIL, pod()),
     [update(LABEL, node(taints=[Taint("x")]), node(labels={"a": "b"}, taints=[Taint("x")])),
      update(TAINT, node(labels={"a": "b"}, taints=[Taint("x")]), node(labels={"a": "b"}))], {TAINT: ["default/w"]}),
    ("node_name_pod_moves_on_any_node_add", ("default/w", "0/1 nodes are available: 1 node(s) didn't match the "
                                             "requested node name.", pod(node_name="n9")), [add(node())],
     {"NodeAdd": ["default/w"]}),
    ("unknown_node_queues_the_registering_plugins", ("default/big", FIT_FAIL, pod("big", requests={"cpu": 3000})),
     [qh.UnknownObject("NodeAdd")], {"NodeAdd": ["default/big"]}),
    ("unknown_node_update_of_an_unregistered_kind", ("default/w", NODE_AFFINITY_FAIL, pod(node_selector={"disk": "ssd"})),
     [qh.UnknownObject(ALLOC)], {}),
    ("node_name_pod_stays_on_node_update", ("default/w", "0/1 nodes are available: 1 node(s) didn't match the "
                                            "requested node name.", pod(node_name="n9")),
     [update(LABEL, node(), node(labels={"a": "b"}))], {}),
]


@pytest.mark.parametrize("waiting,changes,expected", [c[1:] for c in MOVE_CASES], ids=[c[0] for c in MOVE_CASES])
def test_keys_to_move_asks_the_rejecting_plugins_hints(waiting, changes, expected):
    key, message, spec = waiting
    assert keys_to_move([(key, message)], {key: spec}, changes) == expected


def test_a_waiting_pod_whose_row_is_gone_is_not_moved():
    assert keys_to_move([("default/front", AFFINITY_FAIL)], {}, [BOUND_CACHE]) == {}


def test_a_pod_whose_rejecting_plugin_has_no_hint_moves_without_its_spec():
    # NodePorts registers NodeAdd with no hint function: Queue, nothing to read.
    message = "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
    assert keys_to_move([("default/p", message)], {}, [add(node())]) == {"NodeAdd": ["default/p"]}


REJECTED_CASES = [
    (FIT_FAIL, {"NodeResourcesFit"}),
    ("0/1 nodes are available: 1 Too many pods.", {"NodeResourcesFit"}),
    (MIXED_FAIL, {"NodeResourcesFit", "NodeAffinity"}),
    (TAINT_FAIL, {"TaintToleration"}),
    ("0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}.", {"TaintToleration"}),
    ("0/1 nodes are available: 1 node(s) were unschedulable.", {"NodeUnschedulable"}),
    ("0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints (missing required label).",
     {"PodTopologySpread"}),
    ("0/2 nodes are available: 2 node(s) didn't satisfy existing pods anti-affinity rules.", {"InterPodAffinity"}),
    ("0/0 nodes are available", None),
    ("", None),
]


@pytest.mark.parametrize("message,plugins", REJECTED_CASES)
def test_the_rejecting_plugins_are_read_from_the_failure_message(message, plugins):
    assert rejected_by(message) == (None if plugins is None else frozenset(plugins))


UPDATE_EVENT_CASES = [
    # (id, old, new, labels in order)
    ("uncordoned", node(unschedulable=True), node(), [TAINT]),
    ("cordoned", node(), node(unschedulable=True), []),
    ("allocatable", node(cpu=1000), node(cpu=2000), [ALLOC]),
    ("labels_and_taints", node(), node(labels={"a": "b"}, taints=[Taint("x")]), [LABEL, TAINT]),
    ("uncordoned_and_taints_one_event", node(unschedulable=True), node(taints=[Taint("x")]), [TAINT]),
    ("images_only", node(), NodeSpec(name="n1", allocatable=node().allocatable, images=()), []),
]


@pytest.mark.parametrize("old,new,labels", [c[1:] for c in UPDATE_EVENT_CASES], ids=[c[0] for c in UPDATE_EVENT_CASES])
def test_a_node_update_splits_as_node_scheduling_properties_change(old, new, labels):
    assert [e.event for e in node_update_events(old, new)] == labels
    assert [e.event for e in node_added(new)] == ["NodeAdd"]


# ---- NodeResourcesFit ----------------------------------------------------------------------------

CPU_POD = pod(requests={"cpu": 2000})
GPU_POD = pod(requests={"cpu": 100, "example.com/gpu": 1})
FIT_NODE_CASES = [
    # (id, pod, change, queue)
    ("add_fits", CPU_POD, add(node(cpu=4000)), True),
    ("add_too_small", CPU_POD, add(node(cpu=1000)), False),
    ("add_no_pods_allowed", CPU_POD, add(node(pods=0)), False),
    ("update_cpu_grew_and_fits", CPU_POD, update(ALLOC, node(cpu=1000), node(cpu=3000)), True),
    ("update_cpu_grew_not_enough", CPU_POD, update(ALLOC, node(cpu=1000), node(cpu=1500)), False),
    ("update_fits_but_only_memory_grew", CPU_POD, update(ALLOC, node(memory=1 << 30), node(memory=2 << 30)), False),
    ("update_more_pods_allowed", CPU_POD, update(ALLOC, node(pods=10), node(pods=20)), True),
    ("update_scalar_grew", GPU_POD, update(ALLOC, node(**{"example.com/gpu": 0}), node(**{"example.com/gpu": 2})), True),
    ("update_unrequested_scalar_grew", CPU_POD, update(ALLOC, node(**{"example.com/gpu": 0}),
                                                       node(**{"example.com/gpu": 2})), False),
    ("update_old_unknown_fits", CPU_POD, NodeChange(ALLOC, node(cpu=3000)), True),
]


@pytest.mark.parametrize("waiting,change,queue", [c[1:] for c in FIT_NODE_CASES], ids=[c[0] for c in FIT_NODE_CASES])
def test_node_resources_fit_hint_after_node_change(waiting, change, queue):
    assert qh.fit_after_node_change(waiting, change) is queue


FIT_DELETE_CASES = [
    ("assigned_pod_deleted", assigned("default", "o", "o", "n1", {}), True),
    ("unassigned_pod_deleted", assigned("default", "o", "o", "", {}), False),
    ("nominated_pod_deleted", PodSpec(namespace="default", name="o", nominated_node_name="n1"), True),
    ("unknown_pod_deleted", None, True),
]


@pytest.mark.parametrize("deleted,queue", [c[1:] for c in FIT_DELETE_CASES], ids=[c[0] for c in FIT_DELETE_CASES])
def test_node_resources_fit_hint_after_pod_delete(deleted, queue):
    assert qh.fit_after_pod_delete(CPU_POD, PodDelete(deleted)) is queue


# ---- NodeAffinity ----------------------------------------------------------------------------------

SELECTOR = pod(node_selector={"disk": "ssd"})
REQUIRED = pod(required_terms=(NodeSelectorTerm(match_expressions=(Requirement("zone", "In", ("a", "b")),)),))
NODE_AFFINITY_CASES = [
    ("add_matching_selector", SELECTOR, add(node(labels={"disk": "ssd"})), True),
    ("add_not_matching_selector", SELECTOR, add(node(labels={"disk": "hdd"})), False),
    ("add_matching_required_terms", REQUIRED, add(node(labels={"zone": "b"})), True),
    ("add_not_matching_required_terms", REQUIRED, add(node(labels={"zone": "c"})), False),
    ("update_now_matching", SELECTOR, update(LABEL, node(), node(labels={"disk": "ssd"})), True),
    ("update_was_matching", SELECTOR, update(LABEL, node(labels={"disk": "ssd"}),
                                             node(labels={"disk": "ssd", "x": "y"})), False),
    ("update_still_not_matching", SELECTOR, update(LABEL, node(), node(labels={"disk": "hdd"})), False),
    ("update_stops_matching", SELECTOR, update(LABEL, node(labels={"disk": "ssd"}), node()), False),
    ("no_affinity_add", pod(), add(node()), True),
]


@pytest.mark.parametrize("waiting,change,queue", [c[1:] for c in NODE_AFFINITY_CASES],
                         ids=[c[0] for c in NODE_AFFINITY_CASES])
def test_node_affinity_hint_after_node_change(waiting, change, queue):
    assert qh.node_affinity_after_node_change(waiting, change) is queue


# ---- TaintToleration ---------------------------------------------------------------------------

GPU_TAINT = Taint("dedicated", "gpu", NO_SCHEDULE)
TOLERATES_GPU = pod(tolerations=(Toleration("dedicated", "Equal", "gpu", NO_SCHEDULE),))
TAINT_CASES = [
    ("add_untolerated", pod(), add(node(taints=[GPU_TAINT])), False),
    ("add_tolerated", TOLERATES_GPU, add(node(taints=[GPU_TAINT])), True),
    ("add_untainted", pod(), add(node()), True),
    ("add_prefer_no_schedule_only", pod(), add(node(taints=[Taint("soft", "", PREFER_NO_SCHEDULE)])), True),
    ("add_no_execute_untolerated", TOLERATES_GPU, add(node(taints=[Taint("evict", "", NO_EXECUTE)])), False),
    ("update_taint_removed", pod(), update(TAINT, node(taints=[GPU_TAINT]), node()), True),
    ("update_taint_changed_to_tolerated", TOLERATES_GPU,
     update(TAINT, node(taints=[Taint("dedicated", "db", NO_SCHEDULE)]), node(taints=[GPU_TAINT])), True),
    ("update_was_tolerated", pod(), update(TAINT, node(), node(taints=[Taint("soft", "", PREFER_NO_SCHEDULE)])), False),
    ("update_still_untolerated", pod(), update(TAINT, node(taints=[GPU_TAINT]),
                                               node(taints=[GPU_TAINT, Taint("x")])), False),
]


@pytest.mark.parametrize("waiting,change,queue", [c[1:] for c in TAINT_CASES], ids=[c[0] for c in TAINT_CASES])
def test_taint_toleration_hint_after_node_change(waiting, change, queue):
    assert qh.taint_toleration_after_node_change(waiting, change) is queue


# ---- NodeUnschedulable -----------------------------------------------------------------------------

UNSCHEDULABLE_CASES = [
    ("add_schedulable", add(node()), True),
    ("add_unschedulable", add(node(unschedulable=True)), False),
    ("update_uncordoned", update(TAINT, node(unschedulable=True), node()), True),
    ("update_cordoned", update(TAINT, node(), node(unschedulable=True)), False),
    ("update_still_schedulable", update(TAINT, node(), node(taints=[Taint("x")])), False),
    ("update_still_unschedulable", update(TAINT, node(unschedulable=True), node(unschedulable=True, taints=[Taint("x")])),
     False),
]


@pytest.mark.parametrize("change,queue", [c[1:] for c in UNSCHEDULABLE_CASES], ids=[c[0] for c in UNSCHEDULABLE_CASES])
def test_node_unschedulable_hint_after_node_change(change, queue):
    assert qh.node_unschedulable_after_node_change(pod(), change) is queue


# ---- NodePorts -------------------------------------------------------------------------------------

WANTS_8080 = pod(ports=(HostPort(8080),))


def holder(ports, node_name="n1"):
    return PodSpec(namespace="default", name="holder", uid="h", node_name=node_name,
                   containers=(Container("c", ports=tuple(ports)),))


PORTS_CASES = [
    ("deleted_held_the_port", holder([HostPort(8080)]), True),
    ("deleted_held_another_port", holder([HostPort(9090)]), False),
    ("deleted_held_no_port", holder([]), False),
    ("deleted_was_unassigned", holder([HostPort(8080)], node_name=""), False),
    ("deleted_other_protocol", holder([HostPort(8080, "UDP")]), False),
    ("deleted_on_a_specific_ip_conflicts_with_all", holder([HostPort(8080, "TCP", "10.0.0.1")]), True),
    ("deleted_unknown", None, True),
]


@pytest.mark.parametrize("deleted,queue", [c[1:] for c in PORTS_CASES], ids=[c[0] for c in PORTS_CASES])
def test_node_ports_hint_after_pod_delete(deleted, queue):
    assert qh.node_ports_after_pod_delete(WANTS_8080, PodDelete(deleted)) is queue


# ---- PodTopologySpread -----------------------------------------------------------------------------

SPREAD = pod(labels={"app": "web"}, topology_spread_constraints=(
    TopologySpreadConstraint(1, "zone", DO_NOT_SCHEDULE, LabelSelector(match_labels=(("app", "web"),))),
    TopologySpreadConstraint(1, "host", DO_NOT_SCHEDULE, LabelSelector(match_labels=(("app", "web"),)))))
BOTH = {"zone": "a", "host": "h1"}
SPREAD_NODE_CASES = [
    ("add_with_every_key", SPREAD, add(node(labels=BOTH)), True),
    ("add_missing_a_key", SPREAD, add(node(labels={"zone": "a"})), False),
    ("update_gained_the_keys", SPREAD, update(LABEL, node(labels={"zone": "a"}), node(labels=BOTH)), True),
    ("update_lost_a_key", SPREAD, update(LABEL, node(labels=BOTH), node(labels={"zone": "a"})), True),
    ("update_topology_value_changed", SPREAD, update(LABEL, node(labels=BOTH), node(labels={**BOTH, "zone": "b"})), True),
    ("update_unrelated_label", SPREAD, update(LABEL, node(labels=BOTH), node(labels={**BOTH, "x": "y"})), False),
    ("update_taints_changed", SPREAD, update(TAINT, node(labels=BOTH), node(labels=BOTH, taints=[Taint("x")])), True),
    ("update_taints_changed_without_keys", SPREAD, update(TAINT, node(), node(taints=[Taint("x")])), False),
    ("default_constraints", NO_OWN_CONSTRAINTS, add(node()), True),
]


@pytest.mark.parametrize("waiting,change,queue", [c[1:] for c in SPREAD_NODE_CASES], ids=[c[0] for c in SPREAD_NODE_CASES])
def test_pod_topology_spread_hint_after_node_change(waiting, change, queue):
    assert qh.spread_after_node_change(waiting, change) is queue


SPREAD_DELETE_CASES = [
    ("matching_deleted", assigned("default", "o", "o", "n1", {"app": "web"}), True),
    ("not_matching_deleted", assigned("default", "o", "o", "n1", {"app": "db"}), False),
    ("other_namespace_deleted", assigned("other", "o", "o", "n1", {"app": "web"}), False),
]


@pytest.mark.parametrize("deleted,queue", [c[1:] for c in SPREAD_DELETE_CASES], ids=[c[0] for c in SPREAD_DELETE_CASES])
def test_pod_topology_spread_hint_after_pod_delete(deleted, queue):
    assert qh.spread_after_pod_change(SPREAD, PodDelete(deleted)) is queue


# ---- InterPodAffinity ------------------------------------------------------------------------------

ANTI = pod(pod_anti_affinity=PodAffinity(required=(PodAffinityTerm("host", CACHE),)))
AFFINITY_NODE_CASES = [
    ("add_with_affinity_key", WANTS_CACHE, add(node(labels={"zone": "a"})), True),
    ("add_without_affinity_key", WANTS_CACHE, add(node(labels={"host": "h"})), False),
    ("add_with_anti_affinity_key", ANTI, add(node(labels={"host": "h"})), True),
    ("update_with_key", WANTS_CACHE, update(LABEL, node(), node(labels={"zone": "a"})), True),
    ("no_terms", pod(), add(node(labels={"zone": "a"})), False),
]


@pytest.mark.parametrize("waiting,change,queue", [c[1:] for c in AFFINITY_NODE_CASES],
                         ids=[c[0] for c in AFFINITY_NODE_CASES])
def test_inter_pod_affinity_hint_after_node_change(waiting, change, queue):
    assert qh.affinity_after_node_change(waiting, change) is queue


AFFINITY_DELETE_CASES = [
    ("anti_affinity_match_deleted", ANTI, assigned("default", "o", "o", "n1", {"app": "cache"}), True),
    ("anti_affinity_other_deleted", ANTI, assigned("default", "o", "o", "n1", {"app": "web"}), False),
    ("affinity_match_deleted", WANTS_CACHE, assigned("default", "o", "o", "n1", {"app": "cache"}), False),
]


@pytest.mark.parametrize("waiting,deleted,queue", [c[1:] for c in AFFINITY_DELETE_CASES],
                         ids=[c[0] for c in AFFINITY_DELETE_CASES])
def test_inter_pod_affinity_hint_after_pod_delete(waiting, deleted, queue):
    assert qh.affinity_after_pod_change(waiting, PodDelete(deleted)) is queue


def test_a_hint_that_fails_queues():
    def spreading(operator):
        return pod(labels={"app": "web"}, topology_spread_constraints=(TopologySpreadConstraint(
            1, "zone", DO_NOT_SCHEDULE, LabelSelector(match_expressions=(LabelSelectorRequirement("app", operator),))),))

    no_zone = add(node(labels={"x": "y"}))
    assert qh.queues(spreading("Exists"), frozenset({"PodTopologySpread"}), no_zone) is False
    assert qh.queues(spreading("Bogus"), frozenset({"PodTopologySpread"}), no_zone) is True  # as upstream on an error


def test_pods_alike_are_asked_once_and_pods_unlike_apart():
    ssd = [(f"default/ssd-{i}", NODE_AFFINITY_FAIL) for i in range(3)]
    hdd = [(f"default/hdd-{i}", NODE_AFFINITY_FAIL) for i in range(3)]
    specs = {k: pod(k.split("/")[1], node_selector={"disk": k.split("/")[1][:3]}) for k, _ in ssd + hdd}
    moved = keys_to_move(ssd + hdd, specs, [add(node(labels={"disk": "ssd"}))])
    assert moved == {"NodeAdd": [k for k, _ in ssd]}


def test_node_changes_of_one_label_are_asked_together_and_any_node_may_help():
    hdd, ssd, small = node("a", labels={"disk": "hdd"}), node("b", labels={"disk": "ssd"}), node("c", cpu=100)
    batched = qh.node_batches([add(hdd), add(ssd), add(small)])
    assert len(batched) == 1 and isinstance(batched[0], qh.NodeBatch) and batched[0].event == "NodeAdd"
    assert qh.node_affinity_after_node_change(SELECTOR, batched[0]) is True
    assert qh.node_affinity_after_node_change(SELECTOR, qh.node_batches([add(hdd), add(small)])[0]) is False
    assert qh.fit_after_node_change(CPU_POD, batched[0]) is True  # a and b hold 2 cpus
    assert qh.fit_after_node_change(CPU_POD, qh.NodeChange("NodeAdd", small).batch) is False
    # Mixed adds and updates in one batch: each row judged as what it is.
    mixed = qh.NodeBatch(LABEL, (update(LABEL, node("a", labels={"disk": "ssd"}), node("a", labels={"disk": "ssd", "x": "1"})),
                                 update(LABEL, node("b"), node("b", labels={"disk": "hdd"}))))
    assert qh.node_affinity_after_node_change(SELECTOR, mixed) is False  # a matched before, b does not match


def test_node_batches_keep_the_order_of_labels_and_split_on_other_events_and_repeated_nodes():
    deleted = PodDelete(None)
    changes = [add(node("a")), add(node("b")), deleted, add(node("c")), add(node("c")),
               update(LABEL, node("d"), node("d", labels={"x": "y"}))]
    batched = qh.node_batches(changes)
    assert [(b.event, len(b.changes)) if isinstance(b, qh.NodeBatch) else b.event for b in batched] == [
        ("NodeAdd", 2), "AssignedPodDelete", "NodeAdd", "NodeAdd", LABEL]


# ---- the waiting pod's own update (PriorityQueue.Update with SchedulerQueueingHints) -------------------

GPU_TOLERATION = Toleration(key="dedicated", operator="Equal", value="gpu", effect=NO_SCHEDULE)
CORDON_TOLERATION = Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect=NO_SCHEDULE)
UNSCHEDULABLE_FAIL = "0/1 nodes are available: 1 node(s) were unschedulable."
LABEL_EVT, SCALE_EVT, GATES_EVT, TOLERATION_EVT, OTHER_EVT = (
    qh.EVENT_POD_UPDATE_LABEL, qh.EVENT_POD_UPDATE_SCALE_DOWN, qh.EVENT_POD_UPDATE_GATES_ELIMINATED,
    qh.EVENT_POD_UPDATE_TOLERATION, "UnschedulablePodUpdate")

POD_UPDATE_EVENT_CASES = [
    # (id, old, new, labels in PodSchedulingPropertiesChange's order)
    ("labels", pod(labels={"a": "1"}), pod(labels={"a": "2"}), [LABEL_EVT]),
    ("request_lowered", pod(requests={"cpu": 2000}), pod(requests={"cpu": 1000}), [SCALE_EVT]),
    ("request_removed", pod(requests={"cpu": 2000, "memory": 1 << 30}), pod(requests={"cpu": 2000}), [SCALE_EVT]),
    ("request_raised_is_no_scale_down", pod(requests={"cpu": 1000}), pod(requests={"cpu": 2000}), [OTHER_EVT]),
    ("last_gate_removed", pod(scheduling_gates=("a", "b")), pod(), [GATES_EVT]),
    ("one_of_two_gates_removed", pod(scheduling_gates=("a", "b")), pod(scheduling_gates=("a",)), [OTHER_EVT]),
    ("toleration_added", pod(), pod(tolerations=(GPU_TOLERATION,)), [TOLERATION_EVT]),
    ("several_in_order", pod(labels={"a": "1"}, requests={"cpu": 2000}),
     pod(labels={"a": "2"}, requests={"cpu": 1000}, tolerations=(GPU_TOLERATION,)), [LABEL_EVT, SCALE_EVT, TOLERATION_EVT]),
    ("nothing_of_these", pod(node_selector={"a": "1"}), pod(node_selector={"a": "2"}), [OTHER_EVT]),
]


@pytest.mark.parametrize("old,new,labels", [c[1:] for c in POD_UPDATE_EVENT_CASES], ids=[c[0] for c in POD_UPDATE_EVENT_CASES])
def test_a_pods_own_update_splits_as_pod_scheduling_properties_change(old, new, labels):
    assert [c.event for c in qh.pod_update_events(old, new)] == labels


OWN_UPDATE_CASES = [
    # (id, message, old, new, the label that moves it (None: it stays), the labels asked before that skipped)
    ("taint_rejected_stays_on_label_change", TAINT_FAIL, pod(labels={"a": "1"}), pod(labels={"a": "2"}), None,
     [LABEL_EVT]),
    ("taint_rejected_moves_on_new_toleration", TAINT_FAIL, pod(), pod(tolerations=(GPU_TOLERATION,)), TOLERATION_EVT, []),
    ("taint_rejected_moves_on_generic_update", TAINT_FAIL, pod(node_selector={"a": "1"}), pod(node_selector={"a": "2"}),
     OTHER_EVT, []),
    ("fit_rejected_moves_on_scale_down", FIT_FAIL, pod(requests={"cpu": 3000}), pod(requests={"cpu": 1000}), SCALE_EVT, []),
    ("fit_rejected_stays_on_label_change", FIT_FAIL, pod(labels={"a": "1"}), pod(labels={"a": "2"}), None, [LABEL_EVT]),
    ("fit_rejected_moves_on_generic_update", FIT_FAIL, pod(requests={"cpu": 1000}), pod(requests={"cpu": 3000}),
     OTHER_EVT, []),
    ("fit_rejected_label_then_scale_down", FIT_FAIL, pod(labels={"a": "1"}, requests={"cpu": 3000}),
     pod(labels={"a": "2"}, requests={"cpu": 1000}), SCALE_EVT, [LABEL_EVT]),
    ("node_affinity_rejected_stays_on_any_update", NODE_AFFINITY_FAIL, pod(node_selector={"a": "1"}),
     pod(node_selector={"a": "2"}), None, [OTHER_EVT]),
    ("unschedulable_moves_on_cordon_toleration", UNSCHEDULABLE_FAIL, pod(), pod(tolerations=(CORDON_TOLERATION,)),
     TOLERATION_EVT, []),
    ("unschedulable_stays_on_other_toleration", UNSCHEDULABLE_FAIL, pod(), pod(tolerations=(GPU_TOLERATION,)), None,
     [TOLERATION_EVT]),
    ("spread_moves_when_its_labels_leave_its_selector", SPREAD_FAIL, SPREADS_CACHE,
     PodSpec(namespace="default", name="spread", uid="s", labels={"app": "db"},
             topology_spread_constraints=SPREADS_CACHE.topology_spread_constraints), LABEL_EVT, []),
    ("spread_stays_on_a_label_its_selector_ignores", SPREAD_FAIL, SPREADS_CACHE,
     PodSpec(namespace="default", name="spread", uid="s", labels={"app": "cache", "tier": "x"},
             topology_spread_constraints=SPREADS_CACHE.topology_spread_constraints), None, [LABEL_EVT]),
    ("spread_honouring_taints_moves_on_toleration", SPREAD_FAIL,
     PodSpec(namespace="default", name="h", uid="h", labels={"app": "cache"}, topology_spread_constraints=(
         TopologySpreadConstraint(1, "zone", DO_NOT_SCHEDULE, CACHE, node_taints_policy="Honor"),)),
     PodSpec(namespace="default", name="h", uid="h", labels={"app": "cache"}, tolerations=(GPU_TOLERATION,),
             topology_spread_constraints=(TopologySpreadConstraint(1, "zone", DO_NOT_SCHEDULE, CACHE,
                                                                   node_taints_policy="Honor"),)), TOLERATION_EVT, []),
    ("spread_ignoring_taints_stays_on_toleration", SPREAD_FAIL, SPREADS_CACHE,
     PodSpec(namespace="default", name="spread", uid="s", labels={"app": "cache"}, tolerations=(GPU_TOLERATION,),
             topology_spread_constraints=SPREADS_CACHE.topology_spread_constraints), None, [TOLERATION_EVT]),
    ("affinity_rejected_stays_on_its_own_relabel", AFFINITY_FAIL, WANTS_CACHE,
     PodSpec(namespace="default", name="front", uid="f", labels={"app": "cache"}, pod_affinity=WANTS_CACHE.pod_affinity),
     None, [LABEL_EVT]),
    ("unknown_rejector_moves_on_any_update", "0/0 nodes are available", pod(labels={"a": "1"}), pod(labels={"a": "2"}),
     LABEL_EVT, []),
]


@pytest.mark.parametrize("message,old,new,moved_by,skipped", [c[1:] for c in OWN_UPDATE_CASES],
                         ids=[c[0] for c in OWN_UPDATE_CASES])
def test_a_waiting_pods_own_update_moves_it_only_as_its_hints_say(message, old, new, moved_by, skipped):
    assert qh.own_update_moves(rejected_by(message), qh.pod_update_events(old, new)) == (moved_by, skipped)


def test_the_own_update_hints_read_the_updated_pod_only():
    # The same events for another pod (another uid) are not its own update: every hint skips.
    other = pod("other")
    update_ = qh.PodUpdate(TOLERATION_EVT, pod(tolerations=(CORDON_TOLERATION,)), pod())
    for hint in (qh.fit_after_pod_update, qh.taint_toleration_after_pod_update, qh.node_unschedulable_after_pod_update):
        assert hint(other, update_) is False
        assert hint(update_.new, update_) is True


SPREAD_NODE_DELETE_CASES = [
    # (id, waiting, deleted node, Queue)
    ("deleted_node_with_the_topology_key", SPREADS_CACHE, node(labels={"zone": "a"}), True),
    ("deleted_node_without_it", SPREADS_CACHE, node(labels={"rack": "r1"}), False),
    ("default_constraints_queue", NO_OWN_CONSTRAINTS, node(), True),
]


@pytest.mark.parametrize("waiting,deleted,queue", [c[1:] for c in SPREAD_NODE_DELETE_CASES],
                         ids=[c[0] for c in SPREAD_NODE_DELETE_CASES])
def test_pod_topology_spread_hint_after_node_delete(waiting, deleted, queue):
    assert qh.spread_after_node_delete(waiting, qh.NodeDeleted(deleted)) is queue


def test_a_node_deletion_moves_only_the_pods_pod_topology_spread_rejected():
    deleted = [qh.NodeDeleted(node(labels={"zone": "a"}))]
    assert keys_to_move([("default/spread", SPREAD_FAIL)], {"default/spread": SPREADS_CACHE}, deleted) == {
        "NodeDelete": ["default/spread"]}
    assert keys_to_move([("default/big", FIT_FAIL)], {"default/big": pod("big", requests={"cpu": 3000})}, deleted) == {}
