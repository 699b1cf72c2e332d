"""Queueing hints in the loop: a pod that InterPodAffinity or PodTopologySpread left unschedulable moves
(AssignedPodAdd) when a pod its hint says may make it schedulable is bound, not after the pool's
5-minute timeout; a bound pod that cannot help leaves it waiting. Node events (NodeAdd, NodeUpdateNode*)
and assigned pods deleted (AssignedPodDelete) move only the pods a rejecting plugin's hint queues."""

import time

import pytest
import yaml

from django.conf import settings

from scheduler import loop
from scheduler.cluster.services import cluster_apply, node_delete, pod_delete
from scheduler.engine.labels import LabelSelector
from scheduler.engine.pods import PodAffinity, PodAffinityTerm, PodSpec
from scheduler.engine.queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q, MemoryQueue
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


# ---- node events and assigned pods deleted ----------------------------------------------------------

NODE_AFFINITY_MESSAGE = "didn't match Pod's node affinity/selector"


def labelled(name, zone, cpu="8", taints=None, **labels):
    n = node(name, zone)
    n["metadata"]["labels"].update(labels)
    n["status"]["allocatable"]["cpu"] = cpu
    if taints:
        n["spec"] = {"taints": taints}
    return n


def wants_cpu(name, cpu, **spec):
    p = pod(name, {"app": name}, **spec)
    p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return p


def waiting(queue, name):
    info = queue.get(f"default/{name}")
    return info is not None and info.queue == UNSCHEDULABLE_Q


def test_a_pod_rejected_by_node_affinity_moves_only_on_a_node_that_now_matches(queue):
    apply(labelled("n0", "a", disk="hdd"))
    apply(pod("db", {"app": "db"}, nodeSelector={"disk": "ssd"}))
    drain()
    assert waiting(queue, "db")
    assert NODE_AFFINITY_MESSAGE in Pod.objects.get(name="db").scheduled_message

    before = moved_by("NodeAdd")
    apply(labelled("n1", "b", disk="hdd"))  # NodeAdd that still does not match: it stays
    assert waiting(queue, "db")
    apply(labelled("n0", "a", disk="hdd", rack="r1"))  # NodeUpdateNodeLabel, still no ssd
    assert waiting(queue, "db")
    assert moved_by("NodeAdd") == before and moved_by("NodeUpdateNodeLabel") == 0

    apply(labelled("n2", "c", disk="ssd"))  # a matching NodeAdd moves it
    assert not waiting(queue, "db")
    assert moved_by("NodeAdd") == before + 1
    assert bound_within("db", 20)
    assert node_of("db") == "n2"


def test_a_node_relabelled_to_match_moves_the_pod_under_node_update_node_label(queue):
    apply(labelled("n0", "a", disk="hdd"))
    apply(pod("db", {"app": "db"}, nodeSelector={"disk": "ssd"}))
    drain()
    assert waiting(queue, "db")
    tainted = labelled("n0", "a", disk="hdd", taints=[{"key": "x", "effect": "PreferNoSchedule"}])
    apply(tainted)  # NodeUpdateNodeTaint: NodeAffinity does not register it
    assert waiting(queue, "db")
    before = moved_by("NodeUpdateNodeLabel")
    apply(labelled("n0", "a", disk="ssd"))
    assert not waiting(queue, "db")
    assert moved_by("NodeUpdateNodeLabel") == before + 1
    assert bound_within("db", 20)


def test_a_pod_rejected_for_insufficient_cpu_moves_when_an_assigned_pod_is_deleted(queue):
    apply(labelled("n0", "a", cpu="2"))
    apply(wants_cpu("hog", "1500m", nodeName="n0"))
    apply(wants_cpu("big", "1"))
    apply(pod("picky", {"app": "picky"}, nodeSelector={"disk": "ssd"}))
    drain()
    assert waiting(queue, "big") and waiting(queue, "picky")
    assert "Insufficient cpu" in Pod.objects.get(name="big").scheduled_message

    before = moved_by("AssignedPodDelete")
    assert pod_delete(namespace="default", name="hog")
    assert not waiting(queue, "big")
    assert waiting(queue, "picky")  # NodeAffinity registers no pod deletion
    assert moved_by("AssignedPodDelete") == before + 1
    assert bound_within("big", 20)
    assert node_of("big") == "n0"


def test_a_node_grown_or_untainted_moves_the_pods_its_change_concerns(queue):
    apply(labelled("n0", "a", cpu="1", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]))
    apply(wants_cpu("big", "2", tolerations=[{"key": "dedicated", "operator": "Exists"}]))
    apply(pod("plain", {"app": "plain"}))
    drain()
    assert waiting(queue, "big") and waiting(queue, "plain")
    assert "had untolerated taint" in Pod.objects.get(name="plain").scheduled_message

    # More cpu (NodeUpdateNodeAllocatable): only the pod NodeResourcesFit rejected, and it now fits.
    apply(labelled("n0", "a", cpu="4", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]))
    assert not waiting(queue, "big")
    assert waiting(queue, "plain")
    assert moved_by("NodeUpdateNodeAllocatable") >= 1
    # The taint gone (NodeUpdateNodeTaint): the pod TaintToleration rejected.
    apply(labelled("n0", "a", cpu="4"))
    assert not waiting(queue, "plain")
    assert moved_by("NodeUpdateNodeTaint") >= 1


def test_the_reconciler_replays_recorded_events_through_the_hints(queue):
    apply(labelled("n0", "a", cpu="1"))
    apply(wants_cpu("big", "2"))
    apply(pod("db", {"app": "db"}, nodeSelector={"disk": "ssd"}))
    drain()
    assert waiting(queue, "big") and waiting(queue, "db")
    # Recorded by another process: a node update (its old state unknown: judged as it is now) and the
    # deletion of a pod this database never saw deleted (unknown: every plugin registering it queues).
    hints.move_after_recorded(queue, [("NodeUpdate", "n0")])
    assert waiting(queue, "big") and waiting(queue, "db")  # n0 neither fits big nor matches db
    hints.move_after_recorded(queue, [("AssignedPodDelete", "default/gone")])
    assert not waiting(queue, "big")
    assert waiting(queue, "db")


def test_a_pod_in_flight_during_a_node_event_its_plugin_registers_goes_to_backoff(queue):
    apply(labelled("n0", "a", disk="hdd"))
    apply(pod("db", {"app": "db"}, nodeSelector={"disk": "ssd"}))
    (info,) = queue.pop()
    message = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    taint_message = "0/1 nodes are available: 1 node(s) had untolerated taint(s)."
    apply(labelled("n0", "a", disk="ssd"))  # NodeUpdateNodeLabel while db is in flight
    assert hints.events_while_in_flight(queue, [(info.key, info.cycle, message)]) == {info.key}
    # TaintToleration does not register label updates; a pod popped after the event did not miss it.
    assert hints.events_while_in_flight(queue, [(info.key, info.cycle, taint_message)]) == set()
    assert hints.events_while_in_flight(queue, [(info.key, queue.scheduling_cycle() + 1, message)]) == set()

    # Had it reached the pool before its check saw the event (the event's move found nothing to move, so
    # the queue's move-request cycle did not send it to backoffQ), the after-check moves it.
    assert queue.add_unschedulable_if_not_present(info, unschedulable=True, message=message) == UNSCHEDULABLE_Q
    before = moved_by("NodeUpdateNodeLabel")
    assert hints.move_missed_while_in_flight(queue, [(info.key, info.cycle, message)]) == 1
    assert queue.get(info.key).queue != UNSCHEDULABLE_Q
    assert moved_by("NodeUpdateNodeLabel") == before + 1


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_the_in_flight_record_works_on_both_queues(kind, queue):
    from scheduler.engine.queue import MemoryQueue

    q = MemoryQueue() if kind == "memory" else queue
    message = "0/1 nodes are available: 1 Insufficient cpu."
    q.add("default/a")
    (a,) = q.pop()
    assert hints.events_while_in_flight(q, [(a.key, a.cycle, message)]) == set()  # nothing noted yet
    hints.note_events(q, {"NodeUpdateNodeLabel"})  # NodeResourcesFit does not register it
    assert hints.events_while_in_flight(q, [(a.key, a.cycle, message)]) == set()
    hints.note_events(q, {"AssignedPodDelete"})
    assert hints.events_while_in_flight(q, [(a.key, a.cycle, message)]) == {a.key}
    q.add("default/b")
    (b,) = q.pop()  # popped after both events
    assert hints.events_while_in_flight(q, [(b.key, b.cycle, message)]) == set()
    assert q.add_unschedulable_if_not_present(b, unschedulable=True, message=message) == UNSCHEDULABLE_Q
    assert hints.move_missed_while_in_flight(q, [(b.key, b.cycle, message)]) == 0
    assert q.get(b.key).queue == UNSCHEDULABLE_Q


# ---- a waiting pod's own update (PriorityQueue.Update with SchedulerQueueingHints) -------------------

GPU_TAINT = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
GPU_TOLERATION = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]


def stayed(event):
    return metrics.queue_incoming_pods.labels(UNSCHEDULABLE_Q, event)._value.get()


def test_a_pod_rejected_by_a_taint_stays_on_a_label_change_and_moves_when_it_gains_the_toleration(queue):
    apply(labelled("n0", "a", taints=GPU_TAINT))
    apply(pod("p", {"app": "p"}))
    drain()
    assert waiting(queue, "p")
    assert "had untolerated taint" in Pod.objects.get(name="p").scheduled_message
    attempts = queue.get("default/p").attempts

    label_stayed = stayed("UnschedulablePodUpdatePodLabel")
    apply(pod("p", {"app": "p", "tier": "web"}))  # UnschedulablePodUpdatePodLabel: TaintToleration does not register it
    assert waiting(queue, "p")
    assert stayed("UnschedulablePodUpdatePodLabel") == label_stayed + 1
    drain()
    assert waiting(queue, "p") and queue.get("default/p").attempts == attempts  # not tried again

    before = moved_by("UnschedulablePodUpdatePodToleration")
    apply(pod("p", {"app": "p", "tier": "web"}, tolerations=GPU_TOLERATION))
    assert not waiting(queue, "p")
    assert moved_by("UnschedulablePodUpdatePodToleration") == before + 1
    assert [e.via for e in queue.timeline("default/p") if e.event == "UnschedulablePodUpdatePodToleration"] == [
        "QueueingHint"]
    assert bound_within("p", 20)  # not the pool's 5 minutes
    assert node_of("p") == "n0"


def test_a_pod_rejected_for_cpu_moves_when_its_requests_are_scaled_down(queue):
    apply(labelled("n0", "a", cpu="1"))
    apply(wants_cpu("big", "2"))
    drain()
    assert waiting(queue, "big")
    assert "Insufficient cpu" in Pod.objects.get(name="big").scheduled_message

    # Its labels change: NodeResourcesFit registers no label update of the pod, so it stays.
    relabelled = wants_cpu("big", "2")
    relabelled["metadata"]["labels"]["tier"] = "batch"
    apply(relabelled)
    assert waiting(queue, "big")

    before = moved_by("UnschedulablePodUpdatePodScaleDown")
    smaller = wants_cpu("big", "500m")
    smaller["metadata"]["labels"]["tier"] = "batch"
    apply(smaller)  # UnschedulablePodUpdatePodScaleDown: the target pod itself, Queue
    assert not waiting(queue, "big")
    assert moved_by("UnschedulablePodUpdatePodScaleDown") == before + 1
    assert bound_within("big", 20)


def test_a_pod_rejected_by_node_affinity_stays_on_its_own_update(queue):
    apply(labelled("n0", "a"))
    apply(pod("p", {"app": "p"}, nodeSelector={"disk": "ssd"}))
    drain()
    assert waiting(queue, "p")
    before = stayed("UnschedulablePodUpdate")
    apply(pod("p", {"app": "p"}, nodeSelector={"disk": "ssd"}, priority=0,
              containers=[{"name": "c", "image": "nginx:2", "resources": {"requests": {"cpu": "100m"}}}]))
    assert waiting(queue, "p")  # the generic update: NodeAffinity registers no Pod update
    assert stayed("UnschedulablePodUpdate") == before + 1


def test_a_queued_pods_update_leaves_it_in_activeq(queue):
    apply(labelled("n0", "a"))
    apply(pod("p", {"app": "p"}))
    assert queue.get("default/p").queue == ACTIVE_Q
    apply(pod("p", {"app": "p", "tier": "x"}))
    assert queue.get("default/p").queue == ACTIVE_Q
    drain()
    assert node_of("p") == "n0"


def test_a_pod_rejected_by_spread_moves_when_a_node_with_its_topology_key_is_deleted(queue):
    # Zones a (n0, holding two web pods) and b (n1, tainted: it counts as a domain but takes no pod). A third
    # web pod would break maxSkew 1; once n1 is deleted, zone a is the only domain and it fits there.
    tainted = labelled("n1", "b", taints=GPU_TAINT)
    apply(labelled("n0", "a"), tainted)
    apply(pod("web-0", {"app": "web"}, node_name="n0"))
    apply(pod("web-1", {"app": "web"}, node_name="n0"))
    apply(pod("web-2", {"app": "web"}, topologySpreadConstraints=spread(ZONE, app="web")))
    drain()
    assert waiting(queue, "web-2")
    assert "didn't match pod topology spread constraints" in Pod.objects.get(name="web-2").scheduled_message
    before = moved_by("NodeDelete")
    node_delete(name="n1")
    assert not waiting(queue, "web-2")
    assert moved_by("NodeDelete") == before + 1


def test_a_node_deletion_leaves_a_pod_rejected_for_cpu_waiting(queue):
    apply(labelled("n0", "a", cpu="1"), labelled("n1", "b", cpu="1"))
    apply(wants_cpu("big", "2"))
    drain()
    assert waiting(queue, "big")
    node_delete(name="n1")
    assert waiting(queue, "big")


TAINT_MESSAGE = "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}."


@pytest.mark.parametrize("backend", ["redis", "memory"])
def test_an_own_update_while_in_flight_sends_the_failing_pod_to_backoff_when_a_rejecting_plugin_registers_it(queue, backend):
    if backend == "memory":
        queue = MemoryQueue(on_incoming=metrics.count_incoming)
        queues.reset_queue(queue)
        loop.reset_worker(loop.Worker(config=topology_config()))
    apply(labelled("n0", "a", taints=GPU_TAINT))
    apply(pod("p", {"app": "p"}))
    apply(pod("q", {"app": "q"}))
    drain()
    assert waiting(queue, "p") and waiting(queue, "q")
    queue.move_to_active_or_backoff(["default/p", "default/q"], "test")
    popped = {i.key: i for i in queue.pop(2)}
    assert set(popped) == {"default/p", "default/q"}
    # While both are in flight: p gains the toleration, q only a label.
    apply(pod("p", {"app": "p"}, tolerations=GPU_TOLERATION))
    apply(pod("q", {"app": "q", "tier": "x"}))
    assert queue.get("default/p").queue == queue.get("default/q").queue == "in_flight"
    failures = [(key, info.cycle, TAINT_MESSAGE) for key, info in popped.items()]
    assert hints.events_while_in_flight(queue, failures) == {"default/p"}
    # Read once: a later attempt of the same pods is not sent to backoffQ by it.
    assert hints.events_while_in_flight(queue, failures) == set()


def test_an_own_update_noted_after_the_check_moves_the_pod_once_it_is_in_the_pool(queue):
    apply(labelled("n0", "a", taints=GPU_TAINT))
    apply(pod("p", {"app": "p"}))
    drain()
    queue.move_to_active_or_backoff(["default/p"], "test")
    info = queue.pop(1)[0]
    assert hints.events_while_in_flight(queue, [("default/p", info.cycle, TAINT_MESSAGE)]) == set()
    apply(pod("p", {"app": "p"}, tolerations=GPU_TOLERATION))  # after the check, before the put-back
    assert queue.add_unschedulable_if_not_present(info, unschedulable=True, message=TAINT_MESSAGE) == UNSCHEDULABLE_Q
    before = moved_by("UnschedulablePodUpdatePodToleration")
    assert hints.move_missed_while_in_flight(queue, [("default/p", info.cycle, TAINT_MESSAGE)]) == 1
    assert not waiting(queue, "p")
    assert moved_by("UnschedulablePodUpdatePodToleration") == before + 1
