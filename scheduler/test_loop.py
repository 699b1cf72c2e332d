"""The scheduling loop in one process against real Postgres and Redis: schedule, reserve, bind, requeue."""

import pytest


from scheduler import loop
from scheduler.queue import queues
from scheduler.models import Attempt, Binding, Event, Node, Pod
from scheduler.cluster.services import pod_delete
from scheduler.testing.loop import apply, drain, node, pod

# The shared Redis queue on a hand-moved clock (the `clock` fixture) for every test here.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def test_it_binds_a_pending_pod_and_records_attempt_binding_and_event():
    apply(node("node-a"), pod("web"))
    drain()
    web = Pod.objects.get(name="web")
    assert web.node_name == "node-a" and web.phase == "Running" and web.scheduled_status == "True"
    attempt = Attempt.objects.get(pod_name="web")
    assert attempt.result == "scheduled" and attempt.node_name == "node-a" and attempt.number == 1
    assert attempt.e2e_ms is not None and attempt.binding_ms is not None
    binding = Binding.objects.get(pod_name="web")
    assert binding.node_name == "node-a" and binding.attempt_id == attempt.pk
    event = Event.objects.get(reason="Scheduled")
    assert event.message == "Successfully assigned default/web to node-a" and event.type == "Normal"
    node_a = Node.objects.get(name="node-a")
    assert (node_a.req_cpu, node_a.req_memory, node_a.req_pods) == (1000, 1 << 30, 1)


def test_it_marks_an_unschedulable_pod_with_upstreams_message_and_schedules_it_once_a_node_fits(clock):
    apply(node("small", cpu="1"), node("tainted", cpu="8", spec={"taints": [{"key": "k", "effect": "NoSchedule"}]}),
          pod("big", cpu="2"))
    drain()
    big = Pod.objects.get(name="big")
    # The pod asks more cpu than "small" has at all: removing pods cannot help there (nor on the tainted node).
    message = ("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s). "
               "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
    assert big.node_name == "" and big.scheduled_status == "False" and big.scheduled_reason == "Unschedulable"
    assert big.scheduled_message == message
    event = Event.objects.get(reason="FailedScheduling")
    assert event.type == "Warning" and event.message == message
    attempt = Attempt.objects.get(pod_name="big")
    assert attempt.result == "unschedulable" and attempt.reasons == {"Insufficient cpu": 1, "node(s) had untolerated taint(s)": 1}
    apply(node("roomy", cpu="4"))
    drain(clock)
    assert Pod.objects.get(name="big").node_name == "roomy"


def test_it_never_places_more_than_a_node_holds():
    apply(node("only", cpu="2", pods="110"), *[pod(f"p{i}", cpu="500m") for i in range(7)])
    drain()
    assert Pod.objects.exclude(node_name="").count() == 4
    only = Node.objects.get(name="only")
    assert only.req_cpu == 2000 and only.req_pods == 4


def test_it_requeues_pod_with_backoff_after_bind_failure():
    apply(node("node-a"), pod("flaky", meta={"annotations": {"schedboard.io/fail-binds": "1"}}))
    drain()
    flaky = Pod.objects.get(name="flaky")
    assert flaky.node_name == "" and flaky.assumed_node == ""
    assert Node.objects.get(name="node-a").req_cpu == 0  # the reservation was given back
    assert list(Attempt.objects.filter(pod_name="flaky").values_list("result", flat=True)) == ["bind_failed"]
    info = loop.get_worker().queue.get("default/flaky")
    assert info.queue == "backoff" and info.attempts == 1
    assert Event.objects.get(reason="FailedScheduling").message.startswith("Binding rejected: injected binding failure 1 of 1")


def test_it_skips_a_pod_being_deleted_with_an_event():
    apply(node("node-a"), pod("going", meta={"deletionTimestamp": "2026-01-01T00:00:00Z"}))
    # A deleting pod is not queued by apply; if one is queued anyway, the cycle skips it.
    loop.get_worker().queue.add("default/going", 0)
    drain()
    assert Pod.objects.get(name="going").node_name == ""
    assert Event.objects.get(reason="FailedScheduling").message == "skip schedule deleting pod: default/going"


def test_deleting_a_bound_pod_gives_its_room_back_and_unblocks_waiting_pods(clock):
    apply(node("only", cpu="1"), pod("first", cpu="1"), pod("second", cpu="1"))
    drain()
    bound = Pod.objects.exclude(node_name="").get()
    waiting = Pod.objects.get(node_name="")
    assert queues.get_queue().get(waiting.key).queue == "unschedulable"
    pod_delete(namespace="default", name=bound.name)
    assert queues.get_queue().get(waiting.key).queue == "backoff"  # AssignedPodDelete moved it
    drain(clock)
    assert Pod.objects.get(pk=waiting.pk).node_name == "only"
    assert Node.objects.get(name="only").req_cpu == 1000


def test_a_repeated_failure_counts_the_event_instead_of_duplicating_it(clock):
    apply(node("small", cpu="1"), pod("big", cpu="2"))
    drain()
    # A node too small for it: NodeResourcesFit's hint leaves the pod waiting (QueueSkip).
    apply(node("other", cpu="1"), pod("filler", cpu="100m", nodeName="other"))
    drain(clock)
    assert Attempt.objects.filter(pod_name="big").count() == 1
    # Assigned pods deleted (AssignedPodDelete): the pod is tried again and fails the same way... almost
    # (two nodes now), then exactly the same way.
    pod_delete(namespace="default", name="filler")
    drain(clock)
    apply(pod("filler", cpu="100m", nodeName="other"))
    pod_delete(namespace="default", name="filler")
    drain(clock)
    events = Event.objects.filter(reason="FailedScheduling", involved_name="big")
    by_message = {e.message: e.count for e in events}
    not_helpful = "Preemption is not helpful for scheduling."  # 2 cpus fit no node, even emptied
    assert by_message == {f"0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 {not_helpful}": 1,
                          f"0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 {not_helpful}": 2}
    first = events.get(count=2)
    assert first.last_timestamp >= first.first_timestamp
    assert Attempt.objects.filter(pod_name="big").count() == 3


def test_pods_are_ours_when_their_scheduler_name_names_a_profile_of_the_active_configuration():
    from scheduler.engine.config import SchedulerConfig, default_profile
    from scheduler.versions.services import config_version_create

    config_version_create(config=SchedulerConfig(profiles=[default_profile(), default_profile("batch-scheduler")]),
                          reason="a second profile")
    apply(node("node-a"), pod("batch-job", schedulerName="batch-scheduler"), pod("theirs", schedulerName="other"))
    drain()
    assert Pod.objects.get(name="batch-job").node_name == "node-a"
    assert Attempt.objects.get(pod_name="batch-job").profile_name == "batch-scheduler"
    theirs = Pod.objects.get(name="theirs")
    assert theirs.node_name == "" and not Attempt.objects.filter(pod_name="theirs").exists()


@pytest.mark.parametrize("gate", [True, False])
def test_the_opportunistic_batching_gate_places_the_pods_of_a_signature_alike_shared_or_not(settings, gate):
    settings.SCHEDBOARD_FEATURE_GATES = {**settings.SCHEDBOARD_FEATURE_GATES, "OpportunisticBatching": gate}
    settings.SCHEDBOARD_SEED = 7
    loop.reset_worker()
    apply(*[node(f"n{i}", cpu="2") for i in range(4)], *[pod(f"p{i}", cpu="500m") for i in range(12)])
    drain()
    worker = loop.get_worker()
    assert (worker.algorithm.batch is not None) is gate
    if gate:
        assert worker.algorithm.batch.batched_pods > 0
    # Four 2-cpu nodes, twelve pods of 500m: the least allocated spread gives each node three.
    counts = sorted(Pod.objects.filter(name__startswith="p").values_list("node_name", flat=True))
    assert sorted(counts.count(n) for n in set(counts)) == [3, 3, 3, 3]
