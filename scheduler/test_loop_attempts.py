"""A pod row's attempt count after every path of a placement: the claim writes a placed pod's count (its one
update of the attempt), so each path that undoes a claim has to take the count back with it."""

import pytest
import yaml

from django.conf import settings

from scheduler import loop
from scheduler.cluster.services import cluster_apply
from scheduler.loop import schedule
from scheduler.manifests.files import parse_documents
from scheduler.models import Attempt, Node, Pod
from scheduler.queue import queues
from scheduler.queue.redis_queue import RedisQueue
from scheduler.telemetry import metrics
from scheduler.testing import topology
from scheduler.testing.loop import apply, drain, node, pod

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def numbers(name):
    return list(Attempt.objects.filter(pod_name=name).order_by("number").values_list("number", "result"))


def test_a_placed_pod_counts_its_one_attempt():
    apply(node("a"), *(pod(f"p{i}", cpu="100m") for i in range(3)))
    drain()
    for p in Pod.objects.filter(name__startswith="p"):
        assert p.node_name == "a" and p.attempts == 1
        assert numbers(p.name) == [(1, "scheduled")]


def test_a_pod_placed_after_failing_counts_both_attempts(clock):
    apply(node("small", cpu="1"), pod("big", cpu="2"))
    drain()
    assert Pod.objects.get(name="big").attempts == 1
    apply(node("roomy", cpu="4"))
    drain(clock)
    big = Pod.objects.get(name="big")
    assert big.node_name == "roomy" and big.attempts == 2
    assert numbers("big") == [(1, "unschedulable"), (2, "scheduled")]


def test_a_pod_with_an_extended_resource_counts_its_attempt():
    gpu = "example.com/gpu"
    big = node("gpu-node")
    big["status"]["allocatable"][gpu] = "2"
    want = pod("trainer")
    want["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1", gpu: "1"}, "limits": {gpu: "1"}}
    apply(big, want)
    drain()
    trainer = Pod.objects.get(name="trainer")
    assert trainer.node_name == "gpu-node" and trainer.attempts == 1


def test_a_pod_that_lost_the_reservation_race_counts_one_attempt(monkeypatch):
    apply(node("a", cpu="1"), node("b", cpu="1"), pod("web", cpu="1"))
    real = schedule._DbCluster.reserve_many
    taken = []

    def another_worker_first(self, placements):
        if not taken:  # a pod arrives bound on the chosen node: the claim succeeds, the node's take does not
            taken.append(placements[0][1])
            apply({**pod("intruder", cpu="1"), "spec": {**pod("intruder", cpu="1")["spec"], "nodeName": taken[0]}})
        return real(self, placements)

    monkeypatch.setattr(schedule._DbCluster, "reserve_many", another_worker_first)
    drain()
    web = Pod.objects.get(name="web")
    assert web.node_name and web.node_name != taken[0] and web.attempts == 1
    assert numbers("web") == [(1, "scheduled")]


def test_a_placed_pod_whose_batch_write_is_refused_counts_no_attempt(monkeypatch):
    apply(node("a"), pod("web"))

    def refused(model, objs):
        raise ValueError("refused")

    monkeypatch.setattr(schedule, "insert_many", refused)
    loop.run_schedule_task()
    web = Pod.objects.get(name="web")
    # As before the claim wrote the count: the attempt that was not recorded is not counted.
    assert web.assumed_node == "" and web.node_name == "" and web.attempts == 0
    assert web.scheduled_reason == "SchedulerError"
    assert Node.objects.get(name="a").req_cpu == 0


def test_a_placed_pod_whose_result_cannot_be_recorded_counts_its_failed_attempt(monkeypatch):
    apply(node("a"), pod("web"))
    real = schedule.Worker._attempt

    def broken(self, pod_row, info, result, *args):
        if result.status == "scheduled":
            raise RuntimeError("broken")
        return real(self, pod_row, info, result, *args)

    monkeypatch.setattr(schedule.Worker, "_attempt", broken)
    loop.run_schedule_task()
    web = Pod.objects.get(name="web")
    assert web.assumed_node == "" and web.node_name == "" and web.attempts == 1
    assert numbers("web") == [(1, "error")]
    assert Node.objects.get(name="a").req_cpu == 0


def test_a_checked_placement_counts_its_attempt():
    queues.reset_queue(RedisQueue(queues.get_redis(), prefix=settings.SCHEDBOARD_QUEUE_PREFIX,
                                  on_incoming=metrics.count_incoming))
    loop.reset_worker(loop.Worker(config=topology.topology_config()))
    objs = [topology.node(f"n{i}", "a") for i in range(2)]
    objs += [topology.pod(f"web-{i}", {"app": "web"}, affinity=topology.anti(topology.HOST, app="web")) for i in range(2)]
    cluster_apply(parse_documents(yaml.safe_dump_all(objs), "test.yaml"))
    drain()
    for web in Pod.objects.filter(name__startswith="web-"):
        assert web.node_name and web.attempts == 1
