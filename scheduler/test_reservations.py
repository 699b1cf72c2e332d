"""Node usage against real Postgres: every change applies exactly once under concurrency, a claim only takes
the pod version the worker scheduled, and the recount repairs drift without racing reservations."""

import logging
import threading
import time

import pytest
from django.db import connection, connections, transaction

from scheduler import loop
from scheduler.models import Node, Pod
from scheduler.state.reservations import add_node_usage, release_assumed, reserve, reserve_many, row_usage, usage_recount
from scheduler.testing.loop import apply, node, pod
from scheduler.testing.metrics import counters

pytestmark = pytest.mark.django_db(transaction=True)

GPU = "example.com/gpu"


def gpu_node(name="gpu-node", gpus="1"):
    obj = node(name)
    obj["status"]["allocatable"][GPU] = gpus
    return obj


def gpu_pod(name, gpus="1", host_port=None, node_name=None):
    obj = pod(name, cpu="100m", memory="64Mi")
    container = obj["spec"]["containers"][0]
    container["resources"]["requests"][GPU] = gpus
    container["resources"]["limits"] = {GPU: gpus}
    if host_port:
        container["ports"] = [{"containerPort": 80, "hostPort": host_port}]
    if node_name:
        obj["spec"]["nodeName"] = node_name
    return obj


def counted_from_pods(node_name: str) -> tuple[dict, list]:
    """What the pods bound or assumed on the node take, from first principles (their rows)."""
    from django.db.models import Q

    scalars: dict[str, int] = {}
    ports: list = []
    for p in Pod.objects.filter(Q(node_name=node_name) | Q(node_name="", assumed_node=node_name)):
        for r, v in (p.req_scalar or {}).items():
            scalars[r] = scalars.get(r, 0) + v
        ports += p.host_ports or []
    return scalars, sorted(ports)


# ---- every usage change applies, however the changes interleave ------------------------------------------

class NodeRowHolder:
    """Holds the node's row lock in its own connection until released, so that two changes pile up behind it."""

    def __init__(self, name):
        self.name = name
        self.locked = threading.Event()
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.locked.wait(10)

    def _run(self):
        try:
            with transaction.atomic():
                Node.objects.select_for_update().get(name=self.name)
                self.locked.set()
                self.release.wait(30)
        finally:
            connections.close_all()


def waiting_on_locks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0]


def run_together(*ops, node_name="gpu-node"):
    """Start every op in its own thread and connection while the node's row is locked; let them go at once."""
    holder = NodeRowHolder(node_name)
    results, errors = [None] * len(ops), []

    def worker(i, op):
        try:
            results[i] = op()
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i, op)) for i, op in enumerate(ops)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while waiting_on_locks() < len(ops) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert waiting_on_locks() == len(ops), "both changes should be waiting on the node row"
    holder.release.set()
    for t in threads:
        t.join(20)
    holder.thread.join(10)
    assert not errors, errors
    return results


def add_bound(name):
    """A pod that arrives bound to the node (as apply or the mirror counts it): row and usage in one transaction."""
    def op():
        with transaction.atomic():
            row = Pod.objects.get(name=name)
            Pod.objects.filter(pk=row.pk).update(node_name="gpu-node")
            add_node_usage(node_name="gpu-node", usage=row_usage(row))
    return op


def reserve_on(name):
    def op():
        row = Pod.objects.get(name=name)
        return reserve(pod_id=row.pk, usage=row_usage(row), node_name="gpu-node")
    return op


def release(name):
    def op():
        row = Pod.objects.get(name=name)
        return release_assumed(pod_id=row.pk, node_name="gpu-node", usage=row_usage(row))
    return op


def assumed(*names):
    """Reserve these pods one after the other (no race), so that a test can release them."""
    for name in names:
        assert reserve_on(name)()


@pytest.mark.parametrize("gpus, ops, setup, expected_gpus, expected_ports", [
    # Two GPU pods arrive bound at once: both count (the kubelet runs them), neither is lost.
    ("1", lambda: (add_bound("a"), add_bound("b")), lambda: None, 2, [8080, 8081]),
    # Two GPU pods reserved at once on a node with room for both: both are reserved.
    ("2", lambda: (reserve_on("a"), reserve_on("b")), lambda: None, 2, [8080, 8081]),
    # Two releases at once: both give their GPU and port back.
    ("2", lambda: (release("a"), release("b")), lambda: assumed("a", "b"), 0, []),
    # A release and a reservation at once: the node ends up counting exactly the reserved pod.
    ("2", lambda: (release("a"), reserve_on("b")), lambda: assumed("a"), 1, [8081]),
], ids=["add+add", "reserve+reserve", "release+release", "release+reserve"])
def test_concurrent_usage_changes_on_a_node_with_extended_resources_and_ports_all_apply(
        gpus, ops, setup, expected_gpus, expected_ports):
    apply(gpu_node(gpus=gpus), gpu_pod("a", host_port=8080), gpu_pod("b", host_port=8081))
    setup()

    results = run_together(*ops())

    assert all(r is None or r is True for r in results), results
    gpu_node_row = Node.objects.get(name="gpu-node")
    assert gpu_node_row.req_scalar.get(GPU, 0) == expected_gpus
    assert sorted(p[1] for p in gpu_node_row.used_ports) == expected_ports
    scalars, ports = counted_from_pods("gpu-node")
    assert (gpu_node_row.req_scalar, sorted(gpu_node_row.used_ports)) == ({k: v for k, v in scalars.items() if v}, ports)


def test_a_gpu_pod_reserved_while_another_arrives_bound_is_counted_either_way():
    """The overcommit of the issue: a lost add left a bound GPU pod uncounted and the node took a second one."""
    apply(gpu_node(gpus="1"), gpu_pod("bound"), gpu_pod("placed"))

    reserved, _ = run_together(reserve_on("placed"), add_bound("bound"))

    gpu_node_row = Node.objects.get(name="gpu-node")
    on_node = Pod.objects.filter(name__in=["bound", "placed"]).exclude(node_name="", assumed_node="").count()
    assert gpu_node_row.req_scalar.get(GPU, 0) == on_node  # every pod on the node is counted
    assert on_node == (2 if reserved else 1)


def test_a_batch_reservation_takes_its_nodes_in_name_order_so_two_batches_never_deadlock():
    """Two workers' batches (or a batch and the binder) updating overlapping nodes each locked them in their
    plan's order: each held a node the other waited for, and Postgres aborted one (its popped pods then waited
    a minute for the in-flight lease). Taken in name order, a batch waiting on one node holds none after it."""
    apply(node("node-b"), node("node-a"), pod("on-b", cpu="1"), pod("on-a", cpu="1"))  # node-b's row comes first
    rows = {p.name: p for p in Pod.objects.all()}
    holder = NodeRowHolder("node-a")  # another transaction holds node-a
    done: list = []

    def reserve_both():
        try:
            done.append(reserve_many([(rows["on-b"].pk, row_usage(rows["on-b"]), "node-b", None, rows["on-b"].updated_at),
                                      (rows["on-a"].pk, row_usage(rows["on-a"]), "node-a", None, rows["on-a"].updated_at)]))
        finally:
            connections.close_all()

    thread = threading.Thread(target=reserve_both)
    thread.start()
    deadline = time.monotonic() + 10
    while waiting_on_locks() < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert waiting_on_locks() == 1, "the batch should be waiting on node-a"
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            # node-b sorts after node-a: the waiting batch has not taken it (NOWAIT raises if it had).
            cursor.execute("SELECT 1 FROM scheduler_node WHERE name = 'node-b' FOR UPDATE NOWAIT")
    finally:
        holder.release.set()
        thread.join(20)
        holder.thread.join(10)
    assert done and not done[0].conflicts and not done[0].gone
    assert {n.name: n.req_cpu for n in Node.objects.all()} == {"node-a": 1000, "node-b": 1000}


# ---- a claim takes only the pod version that was scheduled ----------------------------------------------

def test_a_claim_refuses_a_pod_whose_row_changed_after_the_worker_read_it():
    apply(node("node-a"), pod("web", cpu="1"))
    read = Pod.objects.get(name="web")
    apply(pod("web", cpu="2"))  # the pending pod's requests change between the read and the claim

    result = reserve_many([(read.pk, row_usage(read), "node-a", None, read.updated_at)])

    assert (result.conflicts, result.gone, result.changed) == (set(), {read.pk}, {read.pk})
    assert Pod.objects.get(name="web").assumed_node == ""
    assert Node.objects.get(name="node-a").req_cpu == 0


def test_a_claim_refuses_a_changed_pod_with_extended_resources_too():
    apply(gpu_node(gpus="2"), gpu_pod("g", gpus="1"))
    read = Pod.objects.get(name="g")
    apply(gpu_pod("g", gpus="2"))

    result = reserve_many([(read.pk, row_usage(read), "gpu-node", None, read.updated_at)])

    assert (result.conflicts, result.gone, result.changed) == (set(), {read.pk}, {read.pk})
    assert Node.objects.get(name="gpu-node").req_scalar == {}


# ---- the recount ----------------------------------------------------------------------------------------

def drift_counter(resource: str) -> float:
    registry = counters()
    value = registry.get_sample_value("schedboard_usage_drift_repaired_total", {"resource": resource})
    return value or 0.0


def test_the_recount_repairs_every_drifted_usage_column_from_the_pods_and_reports_it(caplog):
    apply(gpu_node(gpus="2"), node("node-b"),
          gpu_pod("bound", host_port=8080, node_name="gpu-node"), gpu_pod("placed", gpus="1"), pod("plain"))
    assumed("placed")
    truth = Node.objects.get(name="gpu-node")
    honest = Node.objects.get(name="node-b")
    # Drift as lost deltas leave it: a release that never applied, an add that never applied.
    Node.objects.filter(name="gpu-node").update(req_cpu=5000, req_memory=1, req_pods=7, nonzero_cpu=0, req_scalar={},
                                                used_ports=[["TCP", 9999, "0.0.0.0"]])
    before = {r: drift_counter(r) for r in ("cpu", "memory", "pods", GPU, "hostports", "nonzero-cpu")}

    with caplog.at_level(logging.WARNING, logger="scheduler.state.reservations"):
        report = loop.recount()  # what the beat task runs

    repaired = Node.objects.get(name="gpu-node")
    for f in ("req_cpu", "req_memory", "req_ephemeral", "req_pods", "nonzero_cpu", "nonzero_memory", "req_scalar"):
        assert getattr(repaired, f) == getattr(truth, f), f
    assert sorted(repaired.used_ports) == sorted(truth.used_ports)
    assert repaired.generation > truth.generation  # workers' snapshots see the repair
    assert Node.objects.get(name="node-b").generation == honest.generation  # nothing to repair: untouched
    assert {name: set(resources) for name, resources in report["repaired"].items()} == {
        "gpu-node": {"cpu", "memory", "pods", GPU, "hostports", "nonzero-cpu"}}
    for resource in before:
        assert drift_counter(resource) == before[resource] + 1, resource
    assert "usage drift repaired on node gpu-node: cpu 5000 -> 200" in caplog.text
    assert f"{GPU} 0 -> 2" in caplog.text and "pods 7 -> 2" in caplog.text


@pytest.mark.parametrize("node_name, drift, resources", [
    ("gpu-node", {"req_cpu": 1}, ["cpu"]),
    ("gpu-node", {"req_memory": 1}, ["memory"]),
    ("gpu-node", {"req_ephemeral": 1}, ["ephemeral-storage"]),
    ("gpu-node", {"req_pods": 9}, ["pods"]),
    ("gpu-node", {"nonzero_cpu": 1}, ["nonzero-cpu"]),
    ("gpu-node", {"nonzero_memory": 1}, ["nonzero-memory"]),
    ("gpu-node", {"req_scalar": {GPU: 1}}, [GPU]),
    ("gpu-node", {"used_ports": []}, ["hostports"]),
    ("node-b", {"req_cpu": 100}, ["cpu"]),  # a node no pod is on
    ("node-b", {"req_scalar": {GPU: 1}}, [GPU]),
    ("node-b", {"used_ports": [["TCP", 80, "0.0.0.0"]]}, ["hostports"]),
], ids=lambda v: v if isinstance(v, str) else None)
def test_the_recounts_first_look_finds_each_column_drifted_alone(node_name, drift, resources):
    """On Postgres the recount locks only the nodes its read-only look found different from their pods' sums:
    that look must see every column the locked recount repairs."""
    apply(gpu_node(gpus="2"), node("node-b"), gpu_pod("bound", gpus="2", host_port=8080, node_name="gpu-node"))
    assert usage_recount()["repaired"] == {}
    Node.objects.filter(name=node_name).update(**drift)
    assert usage_recount()["repaired"] == {node_name: resources}
    assert usage_recount()["repaired"] == {}


def test_the_recount_leaves_a_node_whose_usage_is_right_unlocked_even_while_another_transaction_holds_it():
    apply(node("node-a"), node("node-b"), pod("p1", cpu="1", nodeName="node-a"))
    Node.objects.filter(name="node-b").update(req_cpu=500)
    holder = NodeRowHolder("node-a")  # busy, and right: not even tried
    try:
        report = usage_recount()
    finally:
        holder.release.set()
        holder.thread.join(10)
    assert report == {"nodes": 2, "skipped": 0, "repaired": {"node-b": ["cpu"]}}


def test_the_recount_counts_a_pod_whose_node_row_came_later_and_frees_nothing_bound():
    apply(node("node-a", cpu="4"), pod("p1", cpu="1"))
    Pod.objects.filter(name="p1").update(node_name="node-a")  # bound, but the node never counted it
    usage_recount()
    assert Node.objects.get(name="node-a").req_cpu == 1000
    assert usage_recount()["repaired"] == {}  # a second pass finds nothing


def test_the_recount_skips_a_node_another_transaction_is_changing_instead_of_waiting_or_overwriting_it():
    apply(node("node-a"), pod("p1", cpu="1"))
    Node.objects.filter(name="node-a").update(req_cpu=3000)  # drift the recount would repair
    holder = NodeRowHolder("node-a")
    try:
        started = time.monotonic()
        report = usage_recount()
        assert time.monotonic() - started < 5  # never waits on a busy node
        assert report["skipped"] == 1 and report["repaired"] == {}
    finally:
        holder.release.set()
        holder.thread.join(10)
    assert usage_recount()["repaired"] == {"node-a": ["cpu"]}  # the next pass repairs it


def test_a_reservation_claimed_before_the_recount_and_taken_after_it_is_counted_once():
    """The reservation's two steps (claim the pod, take the room) straddle a recount: still counted exactly once."""
    from scheduler.state.reservations import _apply_delta

    apply(node("node-a", cpu="4"), pod("p1", cpu="1"), pod("p2", cpu="1"))
    assumed_row = Pod.objects.get(name="p2")
    reserve(pod_id=assumed_row.pk, usage=row_usage(assumed_row), node_name="node-a")
    claimed, go_on = threading.Event(), threading.Event()
    errors = []

    def reservation():
        try:
            with transaction.atomic():
                row = Pod.objects.get(name="p1")
                Pod.objects.filter(pk=row.pk).update(assumed_node="node-a")
                claimed.set()
                go_on.wait(10)
                assert _apply_delta("node-a", row_usage(row), +1, check_fit=True)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()

    t = threading.Thread(target=reservation)
    t.start()
    assert claimed.wait(10)
    usage_recount()  # does not see the uncommitted claim, and counts p2 only
    go_on.set()
    t.join(10)

    assert not errors
    assert Node.objects.get(name="node-a").req_cpu == 2000
    assert usage_recount()["repaired"] == {}


def test_the_recount_finds_no_drift_where_every_change_went_through_the_reservations():
    apply(gpu_node(gpus="4"), node("node-b"), *(gpu_pod(f"g{i}", host_port=9000 + i, node_name="gpu-node") for i in range(3)),
          gpu_pod("queued"), pod("web", cpu="1"))
    assumed("queued")
    assert usage_recount()["repaired"] == {}


# ---- usage deltas are int64, as the columns -----------------------------------------------------------------

@pytest.mark.parametrize("host_port", [None, 8080], ids=["plain", "host-port"])
def test_usage_deltas_of_two_gibibytes_and_more_are_not_wrapped_to_32_bits(host_port):
    """Django binds a plain int next to F() as a 32-bit integer on Postgres: 3Gi came out as -1Gi."""
    big = node("big-node")
    big["status"]["allocatable"]["memory"] = "32Gi"
    apply(big)
    bound = gpu_pod("bound", node_name="big-node", host_port=host_port)
    del bound["spec"]["containers"][0]["resources"]["limits"][GPU], bound["spec"]["containers"][0]["resources"]["requests"][GPU]
    bound["spec"]["containers"][0]["resources"]["requests"]["memory"] = "3Gi"
    apply(bound)
    three_gi = 3 * 1024**3
    assert Node.objects.get(name="big-node").req_memory == three_gi
    waiting = pod("waiting", cpu="100m", memory="28Gi")
    if host_port:
        waiting["spec"]["containers"][0]["ports"] = [{"containerPort": 81, "hostPort": host_port + 1}]
    apply(waiting)
    row = Pod.objects.get(name="waiting")
    # 3Gi + 28Gi fits in 32Gi; a wrapped comparison would have let 30Gi more in too.
    assert reserve(pod_id=row.pk, usage=row_usage(row), node_name="big-node")
    assert Node.objects.get(name="big-node").req_memory == 31 * 1024**3
    assert release_assumed(pod_id=row.pk, node_name="big-node", usage=row_usage(row))
    assert Node.objects.get(name="big-node").req_memory == three_gi


# ---- a nominated room is kept at the reservation too ------------------------------------------------------

def priority_class(name, value):
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


@pytest.mark.parametrize("placed, fits", [
    (["low-200m"], True),  # 800m nominated + 200m: the node's 1 CPU exactly (as the nominator's filter pass)
    (["low-300m"], False),  # a worker whose snapshot lacked the nomination placed it in the room: refused
    (["low-100m", "low-200m"], False),  # two pods of one batch together, against their sum
    (["top-300m"], True),  # a pod of higher priority than the nominated one does not yield to it
    # With it, as upstream placing them one at a time (low-200m, then top-300m, which counts no nomination).
    (["low-200m", "top-300m"], True),
])
def test_a_reservation_counts_the_pods_nominated_to_the_node_with_a_priority_at_least_the_placed_pods(placed, fits):
    from scheduler.state.nominations import nominations_write

    apply(priority_class("mid", 100), priority_class("top", 1000), node("node-a", cpu="1"),
          pod("vip", cpu="800m", priorityClassName="mid"),
          pod("low-100m", cpu="100m"), pod("low-200m", cpu="200m"), pod("low-300m", cpu="300m"),
          pod("top-300m", cpu="300m", priorityClassName="top"))
    nominations_write([(Pod.objects.get(name="vip").pk, "node-a")])
    rows = [Pod.objects.get(name=name) for name in placed]

    result = reserve_many([(r.pk, row_usage(r), "node-a", None, r.updated_at) for r in rows])

    assert result.conflicts == (set() if fits else {r.pk for r in rows})
    assert Node.objects.get(name="node-a").req_cpu == (sum(r.req_cpu for r in rows) if fits else 0)
    assert {p.name for p in Pod.objects.exclude(assumed_node="")} == (set(placed) if fits else set())


def test_the_nominated_pod_itself_is_reserved_on_its_room():
    from scheduler.state.nominations import nominations_write

    apply(priority_class("mid", 100), node("node-a", cpu="1"), pod("vip", cpu="800m", priorityClassName="mid"))
    vip = Pod.objects.get(name="vip")
    nominations_write([(vip.pk, "node-a")])
    vip.refresh_from_db()

    result = reserve_many([(vip.pk, row_usage(vip), "node-a", None, vip.updated_at)])

    assert not result.conflicts and Node.objects.get(name="node-a").req_cpu == 800
