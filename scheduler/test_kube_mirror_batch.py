"""A watch batch of pod events applied set-based (scheduler/kube/pod_batch.py) leaves exactly what the same
events applied one at a time leave: rows, node counters, the audit's bindings, cluster events and the queue,
whichever way each pod goes (the replay, or the per-pod path for what only it does). And it costs a fixed
number of statements per batch, whatever the number of pods."""

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduler.kube.mirror import PodStore
from scheduler.models import RESULT_BIND_FAILED, Attempt, Binding, ClusterEvent, Event, Node, Pod
from scheduler.queue import queues
from scheduler.state.reservations import reserve, row_usage
from scheduler.testing.loop import apply, node
from scheduler.versions.profiles import scheduler_names

pytestmark = pytest.mark.django_db(transaction=True)


def kpod(p, name, cpu="500m", node_name=None, uid=None, labels=None, scheduler="default-scheduler", ports=None,
         **extra):
    """A pod as the API's watch sends it, in namespace `p` (each way of applying has its own)."""
    container = {"name": "c", "image": "app:1", "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}
    if ports:
        container["ports"] = [{"containerPort": port, "hostPort": port} for port in ports]
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": p, "uid": f"{p}-{uid or name}", "resourceVersion": "1",
                        "creationTimestamp": "2026-12-01T00:00:00Z", "labels": labels or {}},
           "spec": {"schedulerName": scheduler, "containers": [container]},
           "status": {"phase": "Pending"}}
    if node_name:
        obj["spec"]["nodeName"] = f"{p}-{node_name}"
        obj["status"]["conditions"] = [{"type": "PodScheduled", "status": "True",
                                        "lastTransitionTime": "2026-12-01T00:00:01Z"}]
    obj["metadata"].update(extra.pop("meta", {}))
    return obj


def assume(store, p, name, node_name, *, binding=True, attempt_result="scheduled"):
    """Our pod, reserved on a node by a worker and (binding) handed to the binder, with its attempt."""
    store.apply("ADDED", kpod(p, name))
    row = Pod.objects.get(namespace=p, name=name)
    assert reserve(pod_id=row.pk, usage=row_usage(row), node_name=f"{p}-{node_name}")
    if binding:
        Pod.objects.filter(pk=row.pk).update(binding_at=timezone.now())
    Attempt.objects.create(pod=row, namespace=p, pod_name=name, pod_uid=row.uid, number=1, result=attempt_result,
                           started_at=timezone.now() - timedelta(seconds=1), node_name=f"{p}-{node_name}")


def bad(p, name, node_name=None):
    obj = kpod(p, name, node_name=node_name)
    obj["metadata"]["labels"] = {"x": "y" * 100}  # refused by the parser
    return obj


def changed(obj, **fields):
    """The watched object with spec (and status) fields changed, as a later event of it."""
    obj["metadata"]["resourceVersion"] = "2"
    for key, value in fields.items():
        part, name = key.split("__")
        obj[part][name] = value
    return obj


AFFINITY = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}


# Each scenario: (setup(store, p), events(p)); events of one pod keep their order, pods interleave.
SCENARIOS = {
    # What the replay reads of a stored manifest (its labels, gates, affinity, start time): a change moves the
    # node's generation, no change does not.
    "bound pods already mirrored: nothing the index holds changes, an affinity, a start time": (
        lambda store, p: store.apply_many([("ADDED", changed(kpod(p, "a", node_name="n1", labels={"app": "web"}),
                                                             spec__affinity=AFFINITY)),
                                           ("ADDED", kpod(p, "b", node_name="n2")),
                                           ("ADDED", kpod(p, "c", node_name="n2"))]),
        lambda p: [("MODIFIED", changed(kpod(p, "a", node_name="n1", labels={"app": "web"}), spec__affinity=AFFINITY,
                                        status__phase="Running")),
                   ("MODIFIED", changed(kpod(p, "b", node_name="n2"), spec__affinity=AFFINITY)),
                   ("MODIFIED", changed(kpod(p, "c", node_name="n2"), status__startTime="2026-12-01T00:00:09Z"))]),
    "a gated pod's gate removed, another's kept": (
        lambda store, p: store.apply_many([("ADDED", changed(kpod(p, "a"), spec__schedulingGates=[{"name": "g"}])),
                                           ("ADDED", changed(kpod(p, "b"), spec__schedulingGates=[{"name": "g"}]))]),
        lambda p: [("MODIFIED", kpod(p, "a")),
                   ("MODIFIED", changed(kpod(p, "b", labels={"x": "1"}), spec__schedulingGates=[{"name": "g"}]))]),
    "new pending pods, one bound by another scheduler, one deleted": (
        None,
        lambda p: [("ADDED", kpod(p, "a")), ("ADDED", kpod(p, "b")), ("ADDED", kpod(p, "c")),
                   ("MODIFIED", kpod(p, "b", node_name="n1")), ("DELETED", kpod(p, "c"))]),
    "pods that arrive bound, then one's labels change and one is deleted": (
        None,
        lambda p: [("ADDED", kpod(p, "a", node_name="n1")), ("ADDED", kpod(p, "b", node_name="n2", cpu="2")),
                   ("MODIFIED", kpod(p, "a", node_name="n1", labels={"app": "web"})),
                   ("DELETED", kpod(p, "b", node_name="n2", cpu="2"))]),
    "bound pods already mirrored: labels change, one deleted": (
        lambda store, p: store.apply_many([("ADDED", kpod(p, "a", node_name="n1")),
                                           ("ADDED", kpod(p, "b", node_name="n1"))]),
        lambda p: [("MODIFIED", kpod(p, "a", node_name="n1", labels={"tier": "db"})),
                   ("DELETED", kpod(p, "b", node_name="n1"))]),
    "our bindings seen by the watch (one the binder had given up on)": (
        lambda store, p: (assume(store, p, "a", "n1"), assume(store, p, "b", "n2", attempt_result=RESULT_BIND_FAILED),
                          assume(store, p, "c", "n1", binding=False)),
        lambda p: [("MODIFIED", kpod(p, "a", node_name="n1")), ("MODIFIED", kpod(p, "b", node_name="n2")),
                   ("MODIFIED", kpod(p, "c", node_name="n1"))]),
    "assumed on one node, bound to another": (
        lambda store, p: assume(store, p, "a", "n1"),
        lambda p: [("MODIFIED", kpod(p, "a", node_name="n2")), ("ADDED", kpod(p, "z"))]),
    "an assumed pod deleted": (
        lambda store, p: assume(store, p, "a", "n1"),
        lambda p: [("DELETED", kpod(p, "a")), ("ADDED", kpod(p, "z"))]),
    "a new pod under a mirrored name (new uid), with and without its DELETED": (
        lambda store, p: store.apply_many([("ADDED", kpod(p, "a", node_name="n1")), ("ADDED", kpod(p, "b"))]),
        lambda p: [("ADDED", kpod(p, "a", uid="a2")), ("DELETED", kpod(p, "b")),
                   ("ADDED", kpod(p, "b", uid="b2", node_name="n2")), ("ADDED", kpod(p, "z"))]),
    "created and deleted in one batch, a delete of an unknown pod and of another uid": (
        lambda store, p: store.apply("ADDED", kpod(p, "kept", node_name="n1")),
        lambda p: [("ADDED", kpod(p, "a")), ("DELETED", kpod(p, "a")), ("DELETED", kpod(p, "ghost")),
                   ("DELETED", kpod(p, "kept", uid="other", node_name="n1")), ("ADDED", kpod(p, "a", uid="a2"))]),
    "host ports and a pod the parser refuses go the per-pod way beside the rest": (
        None,
        lambda p: [("ADDED", kpod(p, "ports", node_name="n1", ports=[8080])), ("ADDED", kpod(p, "a")),
                   ("ADDED", bad(p, "odd", node_name="n2")), ("ADDED", kpod(p, "b", node_name="n2")),
                   ("MODIFIED", kpod(p, "ports", node_name="n1", ports=[8080], labels={"x": "1"})),
                   ("DELETED", kpod(p, "ports", node_name="n1", ports=[8080]))]),
    "another scheduler's pending pod is mirrored, not queued; a deleting one leaves the queue": (
        lambda store, p: store.apply("ADDED", kpod(p, "going")),
        lambda p: [("ADDED", kpod(p, "theirs", scheduler="other")),
                   ("MODIFIED", kpod(p, "going", meta={"deletionTimestamp": "2026-12-01T00:00:05Z"}))]),
}


def snapshot(p):
    """What the mirror left for namespace p, its prefix stripped (so the two ways compare)."""
    def strip(value):
        return value.replace(f"{p}-", "") if isinstance(value, str) else value

    pods = {strip(r.name): (strip(r.uid), strip(r.node_name), strip(r.assumed_node), r.binding_at is None,
                            r.assumed_at is None, r.bound_at is not None, r.queued_at is not None, r.phase, r.req_cpu,
                            r.deleting, r.scheduled_status, (r.manifest.get("metadata") or {}).get("labels"),
                            r.ungated_at is not None)
            for r in Pod.objects.filter(namespace=p)}
    nodes = {strip(n.name): (n.req_cpu, n.req_memory, n.req_pods, n.nonzero_cpu, n.nonzero_memory, n.used_ports)
             for n in Node.objects.filter(name__startswith=f"{p}-")}
    bindings = sorted((b.pod_name, strip(b.node_name), b.attempt_id is not None)
                      for b in Binding.objects.filter(namespace=p))
    attempts = sorted((a.pod_name, a.result) for a in Attempt.objects.filter(namespace=p))
    cluster_events = sorted((e.kind, e.object_name.replace(f"{p}/", "")) for e in ClusterEvent.objects.filter(object_name__startswith=f"{p}/"))
    events = sorted((e.reason, e.involved_name) for e in Event.objects.filter(involved_namespace=p))
    queue = queues.get_queue()
    names = set(pods) | {"a", "b", "c", "z", "going", "theirs", "odd", "ports", "kept", "ghost"}
    queued = sorted(n for n in names if queue.get(f"{p}/{n}") is not None)
    return {"pods": pods, "nodes": nodes, "bindings": bindings, "attempts": attempts,
            "cluster_events": cluster_events, "events": events, "queued": queued}


def _run(store, p, scenario, batch: bool):
    setup, events = SCENARIOS[scenario]
    apply(node(f"{p}-n1", cpu="8", memory="16Gi"), node(f"{p}-n2", cpu="8", memory="16Gi"))
    if setup:
        setup(store, p)
    generations = dict(Node.objects.filter(name__startswith=f"{p}-").values_list("name", "generation"))
    if batch:
        store.apply_many(events(p))
    else:
        ours = scheduler_names()
        for event_type, obj in events(p):
            with transaction.atomic():
                store._apply(event_type, obj, ours)
    moved = {n.replace(f"{p}-", "") for n, g in Node.objects.filter(name__startswith=f"{p}-").values_list("name", "generation")
             if g != generations[n]}
    return snapshot(p), moved


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_watch_batch_leaves_what_its_events_one_at_a_time_leave(scenario):
    store = PodStore(queue=queues.get_queue())
    one_by_one, moved_one_by_one = _run(store, "one", scenario, batch=False)
    batched, moved_batched = _run(store, "set", scenario, batch=True)
    assert batched == one_by_one
    # Workers read a node's pods again when its generation moves: it moves for the same nodes (once per
    # batch rather than once per pod).
    assert moved_batched == moved_one_by_one


def test_a_watch_batch_costs_the_same_statements_for_ten_pods_as_for_two_hundred():
    store = PodStore(queue=queues.get_queue())

    def statements(p, n):
        with CaptureQueriesContext(connection) as added:
            store.apply_many([("ADDED", kpod(p, f"pod-{i}")) for i in range(n)] +
                             [("ADDED", kpod(p, f"bound-{i}", node_name="n1")) for i in range(n)])
        with CaptureQueriesContext(connection) as bound:
            store.apply_many([("MODIFIED", kpod(p, f"pod-{i}", node_name="n1")) for i in range(n)])
        with CaptureQueriesContext(connection) as deleted:
            store.apply_many([("DELETED", kpod(p, f"bound-{i}", node_name="n1")) for i in range(n)])
        return len(added), len(bound), len(deleted)

    apply(node("few-n1", cpu="1000", memory="1000Gi", pods="1000"), node("many-n1", cpu="1000", memory="1000Gi",
                                                                         pods="1000"))
    few, many = statements("few", 10), statements("many", 200)
    assert few == many
    assert max(many) <= 12
    assert Pod.objects.filter(namespace="many", node_name="many-n1").count() == 200
    assert Node.objects.get(name="many-n1").req_pods == 200


def test_our_bindings_seen_in_one_batch_are_recorded_with_their_attempts_in_the_events_order():
    store = PodStore(queue=queues.get_queue())
    apply(node("order-n1", cpu="1000", memory="1000Gi", pods="1000"), node("order-n2", cpu="1000", memory="1000Gi",
                                                                           pods="1000"))
    names = ["c", "a", "d", "b"]
    for name in names:
        assume(store, "order", name, "n1" if name in "ab" else "n2",
               attempt_result=RESULT_BIND_FAILED if name == "d" else "scheduled")

    store.apply_many([("MODIFIED", kpod("order", name, node_name="n1" if name in "ab" else "n2")) for name in names])

    recorded = list(Binding.objects.filter(namespace="order").order_by("id").values_list("pod_name", "attempt__pod_name"))
    assert recorded == [(name, name) for name in names]
    assert Attempt.objects.get(pod_name="d", namespace="order").result == "scheduled"  # the watch settled it


def test_a_batch_of_bindings_events_does_not_read_the_scheduler_names_and_a_new_pending_pod_does():
    store = PodStore(queue=queues.get_queue())
    apply(node("names-n1", cpu="1000", memory="1000Gi", pods="1000"))
    store.apply_many([("ADDED", kpod("names", f"pod-{i}")) for i in range(3)])

    with CaptureQueriesContext(connection) as bound:
        store.apply_many([("MODIFIED", kpod("names", f"pod-{i}", node_name="n1")) for i in range(3)])
    with CaptureQueriesContext(connection) as added:
        store.apply_many([("ADDED", kpod("names", "new"))])

    def names_read(queries):
        return sum("scheduler_schedulerconfigversion" in q["sql"] for q in queries)

    assert names_read(bound) == 0 and names_read(added) == 1
    assert Pod.objects.filter(namespace="names", node_name="names-n1").count() == 3
    assert queues.get_queue().get("names/new") is not None  # queued: its scheduler name is ours
    assert Pod.objects.get(namespace="names", name="new").queued_at is not None


def test_a_relist_of_a_backlog_is_applied_in_batches(django_assert_max_num_queries):
    store = PodStore(queue=queues.get_queue())
    apply(node("big-n1", cpu="1000", memory="1000Gi", pods="1000"))
    items = [kpod("big", f"pod-{i}") for i in range(600)] + [kpod("big", f"bound-{i}", node_name="n1")
                                                             for i in range(100)]
    with django_assert_max_num_queries(40):
        store.replace(items)
    assert Pod.objects.filter(namespace="big").count() == 700
    assert Node.objects.get(name="big-n1").req_pods == 100
    queue = queues.get_queue()
    assert all(queue.get(f"big/pod-{i}") is not None for i in (0, 599))


def test_a_relist_counts_every_bound_pods_room_before_it_queues_a_pending_pod():
    """The API lists pods by name, so pending pods may come before the pods bound while no leader watched; the
    workers take each batch's pending pods as soon as it commits, so they must find those bound pods counted."""
    real = queues.get_queue()
    seen: list[int] = []

    class Recording:  # the real queue, noting the node's counted pods whenever pods are queued
        def __getattr__(self, name):
            return getattr(real, name)

        def add_many(self, items):
            seen.append(Node.objects.get(name="order-n1").req_pods)
            return real.add_many(items)

    store = PodStore(queue=Recording())
    apply(node("order-n1", cpu="1000", memory="1000Gi", pods="1000"))
    items = ([kpod("order", f"a-pending-{i}") for i in range(600)]
             + [kpod("order", f"b-nominated-{i}") for i in range(3)]
             + [kpod("order", f"z-bound-{i}", node_name="n1") for i in range(100)])
    for obj in items[600:603]:
        obj["status"]["nominatedNodeName"] = "order-n1"
    store.replace(items)
    assert seen and seen[0] == 100  # every bound pod counted before the first pending pod was queued
    assert Pod.objects.filter(namespace="order").count() == 703
    assert all(real.get(f"order/a-pending-{i}") is not None for i in (0, 599))


def test_a_relist_queues_its_pending_pods_most_urgent_first_a_small_batch_first_so_workers_start_early():
    """A backlog listed after a restart is stored batch by batch, and each batch of pending pods is queued as it
    commits, so the workers start before the whole list is stored. kube-scheduler's activeQ would hand out the
    most urgent pods first, then the list's order: the batches are cut in that order, so a worker popping the
    first batch gets the list's most urgent pod (last by name here) and never one behind a pod still unstored."""
    real = queues.get_queue()
    stored_when_queued: list[int] = []
    queued_keys: list[list[str]] = []

    class Recording:  # the real queue, noting how much of the list was stored whenever pods are queued
        def __getattr__(self, name):
            return getattr(real, name)

        def add_many(self, items):
            items = list(items)
            stored_when_queued.append(Pod.objects.filter(namespace="sync").count())
            queued_keys.append([key for key, *_ in items])
            return real.add_many(items)

    items = [kpod("sync", f"a-routine-{i}") for i in range(1200)] + [kpod("sync", "y-soon"), kpod("sync", "z-urgent")]
    items[-2]["spec"]["priority"] = 10
    items[-1]["spec"]["priority"] = 1000
    PodStore(queue=Recording()).replace(items)
    # 100, then 500 at a time, each queued as soon as its batch committed.
    assert stored_when_queued == [100, 600, 1100, 1202]
    assert [len(keys) for keys in queued_keys] == [100, 500, 500, 102]
    assert queued_keys[0][:3] == ["sync/z-urgent", "sync/y-soon", "sync/a-routine-0"]
    assert queued_keys[-1][-1] == "sync/a-routine-1199"  # equal priorities in the list's order
    (first,) = real.pop()
    assert first.key == "sync/z-urgent"


def test_a_relist_removes_the_pods_it_no_longer_lists_before_it_queues_a_pending_pod():
    """A pod deleted while no leader watched still held room on its node: it goes before any pod is queued,
    or a worker's first batch would find the node fuller than it is."""
    apply(node("gone-n1", cpu="1", memory="1Gi", pods="10"))
    store = PodStore(queue=queues.get_queue())
    store.replace([kpod("gone", "old", node_name="n1", cpu="1")])
    assert Node.objects.get(name="gone-n1").req_cpu == 1000
    real = queues.get_queue()
    seen: list[int] = []

    class Recording:
        def __getattr__(self, name):
            return getattr(real, name)

        def add_many(self, items):
            seen.append(Node.objects.get(name="gone-n1").req_cpu)
            return real.add_many(items)

    PodStore(queue=Recording()).replace([kpod("gone", f"new-{i}", cpu="1") for i in range(3)])
    assert seen and seen[0] == 0
    assert not Pod.objects.filter(namespace="gone", name="old").exists()


def test_a_node_list_and_a_node_watch_batch_are_applied_in_one_transaction_each_in_the_watchs_order():
    from scheduler.kube.mirror import NodeStore

    store = NodeStore()
    apply(node("gone-n1"))  # not listed: the list deletes it
    with CaptureQueriesContext(connection) as listed:
        store.replace([node(f"list-n{i}", cpu="2") for i in range(30)])
    assert set(Node.objects.values_list("name", flat=True)) == {f"list-n{i}" for i in range(30)}
    commits = sum(q["sql"] == "COMMIT" for q in listed.captured_queries)
    assert 1 <= commits <= 2  # the page, then the deletion (one per node before)
    store.apply_many([("ADDED", node("late", cpu="3")), ("MODIFIED", node("late", cpu="5")),
                      ("DELETED", node("list-n0")), ("ADDED", node("list-n0", cpu="7"))])
    assert Node.objects.get(name="late").alloc_cpu == 5000
    assert Node.objects.get(name="list-n0").alloc_cpu == 7000


def test_a_relist_of_unchanged_nodes_costs_the_same_statements_for_ten_nodes_as_for_two_hundred():
    """A new leader lists every node before it may store a pod: the nodes it already mirrored are read (and
    locked) in one statement, not one each (1,000 unchanged nodes took ~0.7 s before)."""
    from scheduler.kube.mirror import NodeStore

    def relist(n):
        nodes = [node(f"same{n}-n{i}", cpu="2") for i in range(n)]
        NodeStore().replace(nodes)
        before = Node.objects.filter(name__startswith=f"same{n}-").values_list("name", "spec_version", "generation")
        before = sorted(before)
        with CaptureQueriesContext(connection) as queries:
            NodeStore().replace(nodes)
        after = sorted(Node.objects.filter(name__startswith=f"same{n}-")
                       .values_list("name", "spec_version", "generation"))
        assert after == before  # unchanged: not written
        return len(queries)

    assert relist(10) == relist(200) <= 8


def test_a_node_listed_changed_among_unchanged_ones_is_updated_and_one_listed_twice_is_one_node():
    from scheduler.kube.mirror import NodeStore

    store = NodeStore()
    store.replace([node("mix-a", cpu="2"), node("mix-b", cpu="2")])
    store.apply_many([("ADDED", node("mix-a", cpu="2")), ("MODIFIED", node("mix-b", cpu="4")),
                      ("ADDED", node("mix-c", cpu="1")), ("MODIFIED", node("mix-c", cpu="3"))])
    assert {n.name: n.alloc_cpu for n in Node.objects.filter(name__startswith="mix-")} == {
        "mix-a": 2000, "mix-b": 4000, "mix-c": 3000}
    assert Node.objects.get(name="mix-b").spec_version == Node.objects.get(name="mix-a").spec_version + 1


def test_a_list_parsed_while_it_waits_is_stored_as_one_parsed_when_stored():
    """The pod reflector parses its list while the nodes are stored (PodStore.prepare); the store then re-uses
    those parses. What it stores must be what a list stored without them stores, and a parse kept from before
    the list for a pod the list no longer holds is dropped."""
    import json

    apply(node("prep-n1", cpu="1000", memory="1000Gi", pods="1000"))
    items = ([kpod("prep", f"pod-{i}", cpu=f"{100 + i}m", labels={"app": f"a{i % 3}"}) for i in range(40)]
             + [kpod("prep", f"bound-{i}", node_name="n1") for i in range(5)] + [bad("prep", "refused")])

    def stored():
        fields = ["name", "uid", "manifest", "req_cpu", "req_memory", "priority", "node_name", "phase",
                  "scheduled_status", "scheduler_name", "host_ports", "nonzero_cpu", "nonzero_memory"]
        return json.dumps(sorted(Pod.objects.filter(namespace="prep").values_list(*fields)), default=str)

    PodStore(queue=queues.get_queue()).replace(json.loads(json.dumps(items)))
    expected, counted = stored(), Node.objects.get(name="prep-n1").req_pods
    Pod.objects.filter(namespace="prep").delete()
    Node.objects.filter(name="prep-n1").update(req_pods=0, req_cpu=0, req_memory=0, nonzero_cpu=0, nonzero_memory=0)
    prepared = PodStore(queue=queues.get_queue())
    prepared.parses.parse(kpod("prep", "gone-since"))  # a pod of the last watch the list no longer holds
    prepared.prepare(items)
    prepared.replace(items)
    assert prepared.parses.reused == 40  # every pending pod's parse re-used, none parsed twice
    assert ("prep", "gone-since") not in prepared.parses._kept
    assert stored() == expected
    assert Node.objects.get(name="prep-n1").req_pods == counted == 5
