"""Queueing hints from the kube mirror: a pod the watch shows bound (AssignedPodAdd), or a bound pod whose
labels change (AssignedPodUpdate), moves the unschedulable pods InterPodAffinity rejected when its hint
queues them, on the set-based batch path and the per-pod path alike; other pods stay waiting."""

import pytest

from scheduler.engine.queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q
from scheduler.kube.mirror import PodStore
from scheduler.queue import queues
from scheduler.telemetry import metrics
from scheduler.testing.loop import apply, node

pytestmark = pytest.mark.django_db(transaction=True)

AFFINITY_MESSAGE = "0/1 nodes are available: 1 node(s) didn't match pod affinity rules."


def kpod(name, node_name=None, labels=None, affinity=None):
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "1",
                        "creationTimestamp": "2026-12-01T00:00:00Z", "labels": labels or {}},
           "spec": {"schedulerName": "default-scheduler",
                    "containers": [{"name": "c", "image": "app:1", "resources": {"requests": {"cpu": "100m"}}}]},
           "status": {"phase": "Pending"}}
    if affinity:
        obj["spec"]["affinity"] = affinity
    if node_name:
        obj["spec"]["nodeName"] = node_name
    return obj


def waiting_for(store, queue, name, **labels):
    """A pending pod with required affinity to `labels`, left unschedulable by InterPodAffinity."""
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": labels}}]}}
    store.apply("ADDED", kpod(name, labels={"app": "front"}, affinity=affinity))
    [info] = queue.pop(1)
    assert queue.add_unschedulable_if_not_present(info, message=AFFINITY_MESSAGE) == UNSCHEDULABLE_Q


def moved_by(event):
    return sum(metrics.queue_incoming_pods.labels(q, event)._value.get() for q in (ACTIVE_Q, BACKOFF_Q))


@pytest.fixture
def setup():
    queue = queues.get_queue()
    queue.clear()
    apply(node("n1"))
    return PodStore(queue=queue), queue


@pytest.mark.parametrize("batched", [True, False], ids=["batch", "per_pod"])
def test_a_bound_cache_pod_seen_by_the_watch_moves_the_pod_waiting_for_it(setup, batched):
    store, queue = setup
    waiting_for(store, queue, "front", app="cache")
    before = moved_by("AssignedPodAdd")
    events = [("ADDED", kpod("web", node_name="n1", labels={"app": "web"}))]
    store.apply_many(events) if batched else store.apply(*events[0])
    assert queue.get("default/front").queue == UNSCHEDULABLE_Q  # a web pod cannot help
    events = [("ADDED", kpod("cache", node_name="n1", labels={"app": "cache"}))]
    store.apply_many(events) if batched else store.apply(*events[0])
    assert queue.get("default/front").queue != UNSCHEDULABLE_Q
    assert moved_by("AssignedPodAdd") == before + 1


@pytest.mark.parametrize("batched", [True, False], ids=["batch", "per_pod"])
def test_a_bound_pod_relabelled_to_match_moves_the_waiting_pod_as_assigned_pod_update(setup, batched):
    store, queue = setup
    store.apply("ADDED", kpod("db", node_name="n1", labels={"app": "db"}))
    waiting_for(store, queue, "front", app="cache")
    before = moved_by("AssignedPodUpdate")
    event = ("MODIFIED", kpod("db", node_name="n1", labels={"app": "cache"}))
    store.apply_many([event]) if batched else store.apply(*event)
    assert queue.get("default/front").queue != UNSCHEDULABLE_Q
    assert moved_by("AssignedPodUpdate") == before + 1


TAINT_MESSAGE = "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}."


@pytest.mark.parametrize("batched", [True, False], ids=["batch", "per_pod"])
def test_the_watch_showing_a_waiting_pods_own_update_moves_it_only_as_its_hints_say(setup, batched):
    store, queue = setup
    store.apply("ADDED", kpod("p", labels={"app": "p"}))
    [info] = queue.pop(1)
    assert queue.add_unschedulable_if_not_present(info, message=TAINT_MESSAGE) == UNSCHEDULABLE_Q

    def modified(rv, labels, tolerations=None, condition=False):
        obj = kpod("p", labels=labels)
        obj["metadata"]["resourceVersion"] = str(rv)
        if tolerations:
            obj["spec"]["tolerations"] = tolerations
        if condition:  # our own PodScheduled=False: a status change, not an update of the pod
            obj["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                            "message": TAINT_MESSAGE}]
        event = ("MODIFIED", obj)
        store.apply_many([event]) if batched else store.apply(*event)

    stayed = metrics.queue_incoming_pods.labels(UNSCHEDULABLE_Q, "UnschedulablePodUpdatePodLabel")._value.get()
    modified(2, {"app": "p"}, condition=True)
    assert queue.get("default/p").queue == UNSCHEDULABLE_Q
    modified(3, {"app": "p", "tier": "web"}, condition=True)  # TaintToleration registers no label update
    assert queue.get("default/p").queue == UNSCHEDULABLE_Q
    assert metrics.queue_incoming_pods.labels(UNSCHEDULABLE_Q, "UnschedulablePodUpdatePodLabel")._value.get() == stayed + 1
    before = moved_by("UnschedulablePodUpdatePodToleration")
    modified(4, {"app": "p", "tier": "web"}, [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
             condition=True)
    assert queue.get("default/p").queue in (ACTIVE_Q, BACKOFF_Q)
    assert moved_by("UnschedulablePodUpdatePodToleration") == before + 1
