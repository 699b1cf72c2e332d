"""The kubernetes backend against a loopback API server, for tests: objects as a user would create them
through the API, reading them back, an emptied cluster, one replica of ours leading (and running its
committer and the schedule loop in threads, as `kube run --inline` does), and a wait that says what the
mirror and the queue held when it timed out. The `kube_cluster` fixture is in fixtures.py."""

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from scheduler import loop
from scheduler.kube.client import call
from scheduler.models import Node, Pod

from .wait import wait_for

NS = "default"
WAIT = 20.0


def _closing_connections(body: Callable[[], None]) -> Callable[[], None]:
    """A thread's body that closes the thread's own database connections when it ends."""

    def run():
        from django.db import connections

        try:
            body()
        finally:
            connections.close_all()

    return run


def schedule_loop(stop: threading.Event) -> None:
    """The scheduling loop until `stop` is set: reconcile, pop and schedule, wait a little when the queue is empty."""

    def body():
        while not stop.is_set():
            loop.reconcile()
            if not loop.run_schedule_task().popped:
                stop.wait(0.05)

    _closing_connections(body)()


def new_replica(api_client, *, namespace: str = NS, lease_name: str | None = None, retry_period: float = 2.0):
    """One replica of ours (its lease in `namespace`), not yet leading."""
    from scheduler.replica import Replica

    return Replica(api_client=api_client, namespace=namespace, lease_name=lease_name or f"lease-{uuid.uuid4().hex[:6]}",
                   lease_duration=15, renew_deadline=10, retry_period=retry_period, watch_timeout=60)


@contextmanager
def leading(controller) -> Iterator:
    """`controller` holding its lease with its watches synced; the test drives the loop and the committer.
    Afterwards it stops, gives up leading and the backend is reset."""
    from scheduler.backends import reset_backend

    assert controller.elector.acquire()
    controller.start_leading()
    try:
        yield controller
    finally:
        controller.stop()
        controller.stop_leading()
        reset_backend()


def leading_replica(api_client, **replica_args):
    """A new replica (new_replica's arguments), leading: `with leading_replica(client) as replica: ...`."""
    return leading(new_replica(api_client, **replica_args))


@contextmanager
def threads_running(*bodies: Callable[[threading.Event], None]) -> Iterator[threading.Event]:
    """Each body(stop) in a daemon thread until the block ends; then stop is set and the threads joined."""
    stop = threading.Event()
    threads = [threading.Thread(target=body, args=(stop,), daemon=True) for body in bodies]
    for t in threads:
        t.start()
    try:
        yield stop
    finally:
        stop.set()
        for t in threads:
            t.join(10)


def commit_loop(controller) -> Callable[[threading.Event], None]:
    """The replica's committer, run until stop is set."""

    def run(stop: threading.Event) -> None:
        def body():
            while not stop.is_set():
                controller.committer.run_once(0.05)

        _closing_connections(body)()

    return run


@contextmanager
def run_in_threads(controller) -> Iterator:
    """`controller` (leading) with its committer and the scheduling loop in threads, as `kube run --inline` does."""
    with threads_running(commit_loop(controller), schedule_loop):
        yield controller


@contextmanager
def running_replica(api_client, **replica_args) -> Iterator:
    """A new replica, leading, its committer and the scheduling loop in threads."""
    with leading_replica(api_client, **replica_args) as controller, run_in_threads(controller):
        yield controller


def empty_cluster(core, namespace: str = NS) -> None:
    """Every pod of `namespace` deleted at once (no kubelet here to finish them) and every node, and the API
    server seen listing none: a test starts from an empty cluster whatever the one before it left."""
    call(core.delete_collection_namespaced_pod, namespace, grace_period_seconds=0)
    call(core.delete_collection_node)
    wait_for_cluster(lambda: not call(core.list_pod_for_all_namespaces)["items"] and not call(core.list_node)["items"],
                     "an empty cluster")


def cluster_state() -> str:
    """What the mirror and the queue hold, for a failure message."""
    pods = [(p.key, p.node_name, p.assumed_node, p.scheduled_reason, p.scheduled_message) for p in Pod.objects.all()]
    nodes = [(n.name, n.req_cpu, n.req_pods) for n in Node.objects.all()]
    return f"pods={pods}\nnodes={nodes}\nqueue={loop.get_worker().queue.lengths()}"


def wait_for_cluster(predicate, what: str, timeout: float = WAIT):
    """wait_for against the API server, which answers within milliseconds: poll often, and show what the
    mirror and the queue held on a timeout."""
    return wait_for(predicate, what, timeout, interval=0.05, detail=cluster_state)


def node(name, cpu="4", memory="8Gi", pods="110", labels=None):
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": allocatable, "capacity": allocatable}}


def pod(name, cpu="500m", memory="256Mi", scheduler="default-scheduler", node_name=None):
    spec = {"schedulerName": scheduler,
            "containers": [{"name": "c", "image": "registry.invalid/app:1",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def read_pod(core, name):
    return call(core.read_namespaced_pod, name, NS)


def scheduled_condition(obj):
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == "PodScheduled"), None)
