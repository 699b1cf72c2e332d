"""The loop end to end with real worker processes, for tests: objects to apply, the invariants every such
test checks at its end, and a wait sized for a busy machine. The `workers` fixture is in fixtures.py."""

import yaml
from django.db.models import Count, Sum

from scheduler.manifests.files import parse_documents
from scheduler.models import Binding, Event, Node, Pod
from scheduler.cluster.services import cluster_apply

from .wait import wait_for

WAIT_SECONDS = 180
def wait_for_workers(predicate, what: str, timeout: float = WAIT_SECONDS):
    """wait_for real worker processes on a busy machine: a long readiness wait, polled calmly."""
    return wait_for(predicate, what, timeout, interval=0.25)


def node(name, cpu="4", memory="32Gi", pods="110"):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}}}


def pod(name, cpu="100m", memory="500Mi", annotations=None):
    meta = {"name": name, "namespace": "default"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "app:1", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}


def apply(objs):
    return cluster_apply(parse_documents(yaml.safe_dump_all(objs), "e2e.yaml"))


def bound_count():
    return Pod.objects.exclude(node_name="").count()


def assert_invariants():
    # No pod bound twice, and every binding has its attempt and its event.
    assert Binding.objects.values("pod_uid").annotate(n=Count("id")).filter(n__gt=1).count() == 0
    bound = Pod.objects.exclude(node_name="")
    assert Binding.objects.count() == bound.count()
    for b in Binding.objects.select_related("attempt"):
        assert b.attempt is not None and b.attempt.result == "scheduled" and b.attempt.node_name == b.node_name
    scheduled_events = Event.objects.filter(reason="Scheduled").count()
    assert scheduled_events == bound.count()
    # No node over allocatable; each node's counters are exactly what its pods take.
    per_node = {r["node_name"]: r for r in bound.values("node_name").annotate(cpu=Sum("req_cpu"), mem=Sum("req_memory"), n=Count("id"))}
    for n in Node.objects.all():
        row = per_node.get(n.name, {"cpu": 0, "mem": 0, "n": 0})
        assert (n.req_cpu, n.req_memory, n.req_pods) == (row["cpu"] or 0, row["mem"] or 0, row["n"]), n.name
        assert n.req_cpu <= n.alloc_cpu and n.req_memory <= n.alloc_memory and n.req_pods <= n.alloc_pods, n.name
    assert Pod.objects.exclude(assumed_node="").count() == 0
