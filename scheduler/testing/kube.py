"""The kubernetes backend against a loopback API server, for tests: objects as a user would create them
through the API, reading them back, one replica's schedule loop, and a wait that says what the mirror
and the queue held when it timed out. The `kube_cluster` fixture is in fixtures.py."""

from scheduler import loop
from scheduler.kube.client import call
from scheduler.models import Node, Pod

from .wait import wait_for

NS = "default"
WAIT = 20.0


def schedule_loop(stop):
    from django.db import connections

    try:
        while not stop.is_set():
            loop.reconcile()
            if not loop.run_schedule_task().popped:
                stop.wait(0.05)
    finally:
        connections.close_all()


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
