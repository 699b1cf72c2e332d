"""Preemption end to end with real worker processes on real Postgres and Redis: high-priority pods arriving
on a full cluster each evict lower-priority pods through the preempt task and bind on the room, with no
overcommit and no pod lost, a worker killed mid-run included."""

import signal

import pytest

from django.db.models import Count

from scheduler.models import Binding, Event, Node, Pod
from scheduler.testing.e2e import apply, node, pod, wait_for_workers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

HIGH = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}


def vip(name):
    p = pod(name, cpu="1", memory="1Gi")
    p["spec"]["priorityClassName"] = "high"
    return p


def test_high_priority_pods_preempt_on_a_full_cluster_and_bind_with_no_overcommit_even_when_a_worker_dies(workers):
    apply([HIGH] + [node(f"node-{i:02d}", cpu="2", memory="4Gi") for i in range(10)])
    apply([pod(f"low-{i:02d}", cpu="1", memory="1Gi") for i in range(20)])
    wp = workers(2)
    wait_for_workers(lambda: Pod.objects.filter(name__startswith="low-").exclude(node_name="").count() == 20,
                     "the low-priority pods fill the cluster")
    apply([vip(f"vip-{i:02d}") for i in range(6)])
    wp.kill(0, signal.SIGKILL)  # one worker dies with whatever it held (a batch, a preemption): nothing is lost
    wp.restart(0)
    wait_for_workers(lambda: Pod.objects.filter(name__startswith="vip-").exclude(node_name="").count() == 6,
                     "every high-priority pod bound")
    # Exactly one victim per preemptor (each needs one cpu), each with its Preempted event.
    assert Pod.objects.filter(name__startswith="low-").count() == 14
    preempted = Event.objects.filter(reason="Preempted")
    assert preempted.count() == 6
    uids = set(Pod.objects.filter(name__startswith="vip-").values_list("uid", flat=True))
    assert {e.message.split()[3] for e in preempted} <= uids
    # The invariants, the victims' bindings kept in the audit: 20 + 6 bindings for 20 pods still bound.
    assert Binding.objects.count() == Pod.objects.exclude(node_name="").count() + 6
    assert Binding.objects.values("pod_uid").annotate(n=Count("id")).filter(n__gt=1).count() == 0
    for n in Node.objects.all():
        on = Pod.objects.filter(node_name=n.name)
        assert (n.req_cpu, n.req_pods) == (sum(p.req_cpu for p in on), on.count()), n.name
        assert n.req_cpu <= n.alloc_cpu and n.req_memory <= n.alloc_memory, n.name
    assert Pod.objects.exclude(assumed_node="").count() == 0


@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")  # sent through the broker on purpose
def test_a_preempt_task_runs_before_the_tasks_queued_ahead_of_it(workers):
    """Preemption's victims go through a queue of their own that a worker (`celery -A config worker`, no -Q) reads
    first: the eviction waits for no schedule, bind or beat task sent before it, as upstream's goroutine waits
    for no scheduling cycle."""
    import redis
    from celery import current_app
    from django.conf import settings

    from scheduler.manifests.objects import pod_from_manifest
    from scheduler.state.nominations import nominations_write, preemption_job

    apply([HIGH, node("node-a", cpu="1", memory="4Gi")])
    low = pod("low", cpu="1", memory="1Gi")
    low["spec"]["nodeName"] = "node-a"
    waiting = vip("vip")
    waiting["spec"]["schedulerName"] = "another-scheduler"  # our workers leave it alone: only the task acts
    apply([low, waiting])
    preemptor, victim = Pod.objects.get(name="vip"), Pod.objects.get(name="low")
    nominations_write([(preemptor.pk, "node-a")])
    job = preemption_job(preemptor, "node-a", (pod_from_manifest(victim.manifest),), None)
    for _ in range(1000):  # sent first, through the broker (tests run tasks inline otherwise)
        current_app.send_task("scheduler.recount")
    current_app.send_task("scheduler.preempt", args=[job])
    r = redis.Redis.from_url(settings.REDIS_URL)
    assert r.llen(settings.CELERY_TASK_DEFAULT_QUEUE) == 1000 and r.llen(settings.SCHEDBOARD_PREEMPT_QUEUE) == 1
    workers(1)
    wait_for_workers(lambda: not Pod.objects.filter(name="low").exists(), "the victim evicted")
    # Evicted after at most the tasks the worker prefetched (a FIFO: after all 1,000); the worker goes on with the
    # rest while the test polls, so what is left when it looks depends on the machine's load: half is far from 0
    # (a recount with nothing drifted takes a few ms: of 200, 120 were gone by one loaded poll).
    assert r.llen(settings.CELERY_TASK_DEFAULT_QUEUE) >= 500
    assert Event.objects.filter(reason="Preempted", involved_name="low").count() == 1
