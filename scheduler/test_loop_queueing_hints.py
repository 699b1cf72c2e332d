"""Queueing hints in the loop: a pod that InterPodAffinity or PodTopologySpread left unschedulable moves
(AssignedPodAdd) when a pod its hint says may make it schedulable is bound, not after the pool's
5-minute timeout; a bound pod that cannot help leaves it waiting."""

import time

import pytest
import yaml

from django.conf import settings

from scheduler import loop
from scheduler.cluster.services import cluster_apply
from scheduler.engine.labels import LabelSelector
from scheduler.engine.pods import PodAffinity, PodAffinityTerm, PodSpec
from scheduler.engine.queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q
from scheduler.manifests.files import parse_documents
from scheduler.models import Pod
from scheduler.queue import hints, queues
from scheduler.queue.redis_queue import RedisQueue
from scheduler.telemetry import metrics
from scheduler.testing.topology import ZONE, node, pod, spread, topology_config

pytestmark = pytest.mark.django_db(transaction=True)


def apply(*objs):
    return cluster_apply(parse_documents(yaml.safe_dump_all(objs), "test.yaml"))


def affine(key, **labels):
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": key, "labelSelector": {"matchLabels": labels}}]}}


@pytest.fixture(autouse=True)
def queue():
    q = RedisQueue(queues.get_redis(), prefix=settings.SCHEDBOARD_QUEUE_PREFIX, on_incoming=metrics.count_incoming)
    q.clear()
    queues.reset_queue(q)
    loop.reset_worker(loop.Worker(config=topology_config()))
    return q


def drain():
    for _ in range(30):
        loop.reconcile()
        if not loop.run_schedule_task().popped:
            return
    raise AssertionError("queue never drained")


def moved_by(event):
    return sum(metrics.queue_incoming_pods.labels(q, event)._value.get() for q in (ACTIVE_Q, BACKOFF_Q))


def node_of(name):
    return Pod.objects.get(name=name).node_name


def bound_within(name, seconds):
    """Schedule until the pod is bound (its backoff, at most a few seconds, runs out), or give up."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        drain()
        if node_of(name):
            return True
        time.sleep(0.2)
    return False


def test_a_pod_waiting_for_affinity_to_app_cache_moves_and_binds_when_a_cache_pod_is_bound(queue):
    apply(node("n0", "a"), node("n1", "b"))
    apply(pod("front", {"app": "front"}, affinity=affine(ZONE, app="cache")))
    drain()
    assert queue.get("default/front").queue == UNSCHEDULABLE_Q
    assert "didn't match pod affinity rules" in Pod.objects.get(name="front").scheduled_message

    before = moved_by("AssignedPodAdd")
    apply(pod("cache", {"app": "cache"}))
    drain()
    assert node_of("cache")
    assert queue.get("default/front") is None or queue.get("default/front").queue != UNSCHEDULABLE_Q
    assert moved_by("AssignedPodAdd") == before + 1
    assert bound_within("front", 20)  # far less than the pool's 5 minutes
    zone = {"n0": "a", "n1": "b"}
    assert zone[node_of("front")] == zone[node_of("cache")]


def test_a_bound_pod_no_hint_queues_for_leaves_the_affinity_pod_waiting(queue):
    apply(node("n0", "a"))
    apply(pod("front", {"app": "front"}, affinity=affine(ZONE, app="cache")))
    drain()
    before = moved_by("AssignedPodAdd")
    apply(pod("web", {"app": "web"}), pod("db", {"app": "db"}))
    drain()
    assert node_of("web") and node_of("db")
    assert queue.get("default/front").queue == UNSCHEDULABLE_Q
    assert moved_by("AssignedPodAdd") == before


def test_a_pod_rejected_by_spread_moves_when_a_matching_pod_is_bound_elsewhere(queue):
    # Zone a holds two web pods; zone b's only node is tainted (it still counts: nodeTaintsPolicy Ignore),
    # so a third web pod fits nowhere without breaking maxSkew 1.
    tainted = node("n1", "b")
    tainted["spec"] = {**tainted.get("spec", {}), "taints": [{"key": "dedicated", "effect": "NoSchedule"}]}
    apply(node("n0", "a"), tainted)
    apply(pod("web-0", {"app": "web"}, node_name="n0"))
    apply(pod("web-1", {"app": "web"}, node_name="n0"))
    apply(pod("web-2", {"app": "web"}, topologySpreadConstraints=spread(ZONE, app="web")))
    drain()
    assert queue.get("default/web-2").queue == UNSCHEDULABLE_Q
    assert "didn't match pod topology spread constraints" in Pod.objects.get(name="web-2").scheduled_message
    before = moved_by("AssignedPodAdd")
    apply(pod("other", {"app": "db"}))  # matches no selector: no move
    drain()
    assert queue.get("default/web-2").queue == UNSCHEDULABLE_Q
    apply(pod("web-3", {"app": "web"}, nodeSelector={ZONE: "b"},
              tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]))
    attempts = queue.get("default/web-2").attempts
    drain()
    assert node_of("web-3") == "n1"
    assert moved_by("AssignedPodAdd") == before + 1
    # Moved by the hint (out of the pool, not after its timeout), and (SchedulerPopFromBackoffQ: activeQ is empty)
    # tried again at once, from backoffQ if it was still backing off.
    assert [(e.queue, e.via) for e in queue.timeline("default/web-2") if e.event == "AssignedPodAdd"] in (
        [(ACTIVE_Q, "QueueingHint")], [(BACKOFF_Q, "QueueingHint")])
    # Once, or twice when that retry came within the in-flight check's clock margin of web-3's binding (sent
    # through backoffQ once more, never again: the binding was before its put-back).
    assert attempts + 1 <= queue.get("default/web-2").attempts <= attempts + 2


def test_apply_of_a_bound_pod_and_relabelling_one_move_the_affinity_pod(queue):
    apply(node("n0", "a"))
    apply(pod("db", {"app": "db"}, node_name="n0"))
    apply(pod("front", {"app": "front"}, affinity=affine(ZONE, app="cache")))
    drain()
    assert queue.get("default/front").queue == UNSCHEDULABLE_Q
    before = moved_by("AssignedPodUpdate")
    apply(pod("db", {"app": "cache"}, node_name="n0"))  # AssignedPodUpdate: now it matches
    assert queue.get("default/front").queue != UNSCHEDULABLE_Q
    assert moved_by("AssignedPodUpdate") == before + 1
    assert bound_within("front", 20)

    apply(pod("front-2", {"app": "front"}, affinity=affine(ZONE, app="queue")))
    drain()
    assert queue.get("default/front-2").queue == UNSCHEDULABLE_Q
    before = moved_by("AssignedPodAdd")
    apply(pod("mq", {"app": "queue"}, node_name="n0"))  # created bound: AssignedPodAdd
    assert queue.get("default/front-2").queue != UNSCHEDULABLE_Q
    assert moved_by("AssignedPodAdd") == before + 1


def test_a_pod_failing_after_its_partner_was_bound_while_it_was_in_flight_goes_to_backoff_not_the_pool(queue):
    apply(node("n0", "a"))
    popped_before = time.time()
    apply(pod("cache", {"app": "cache"}))
    drain()
    assert node_of("cache")

    def wants(app):
        return PodSpec(namespace="default", name="front", uid="f", pod_affinity=PodAffinity(
            required=(PodAffinityTerm(ZONE, LabelSelector(match_labels=(("app", app),))),)))

    message = "0/1 nodes are available: 1 node(s) didn't match pod affinity rules."
    assert hints.bound_while_in_flight([("default/front", popped_before, wants("cache"), message)]) == {"default/front"}
    # Popped after the binding, or waiting for another app, or rejected by another plugin: the pool.
    assert hints.bound_while_in_flight([("default/front", time.time() + 5, wants("cache"), message)]) == set()
    assert hints.bound_while_in_flight([("default/front", popped_before, wants("db"), message)]) == set()
    assert hints.bound_while_in_flight([("default/front", popped_before, wants("cache"), "0/1 nodes are available: "
                                         "1 Insufficient cpu.")]) == set()
