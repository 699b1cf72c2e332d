"""Preemption in the loop against real Postgres and Redis: the PostFilter nominates, the preempt task
evicts the victims (DisruptionTarget, a Preempted event, deleted), the preemptor binds on the room; the
nominator keeps that room from lower-priority pods; PDBs and preemptionPolicy are respected."""

import pytest

from scheduler import loop
from scheduler.kubectl import printers as kubectl
from scheduler.manifests.objects import pod_from_manifest
from scheduler.models import Attempt, DeletedPod, Event, Node, Pod, Preemption
from scheduler.queue import queues
from scheduler.state.nominations import nominations_write, preemption_job
from scheduler.state.preemptions import preemption_done, preemptions_record, preemptions_under_way
from scheduler.testing.loop import apply, drain, node, pod

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def priority_class(name, value, **extra):
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, **extra}


def pdb(name, match, min_available=None, max_unavailable=None, ns="default"):
    spec = {"selector": {"matchLabels": match}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": ns},
            "spec": spec}


def test_a_high_priority_pod_preempts_a_lower_one_which_gets_the_condition_and_event_then_binds_on_the_room(clock):
    apply(priority_class("high", 1000), node("node-a", cpu="2"), pod("low-1"), pod("low-2"))
    drain()
    assert Pod.objects.exclude(node_name="").count() == 2
    low_uids = dict(Pod.objects.values_list("name", "uid"))
    apply(pod("vip", priorityClassName="high"))
    vip = Pod.objects.get(name="vip")
    assert vip.priority == 1000 and vip.manifest["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    drain(clock)
    vip.refresh_from_db()
    assert vip.node_name == "node-a" and vip.nominated_node == "node-a"
    assert vip.manifest["status"]["nominatedNodeName"] == "node-a"
    # One victim was enough (both are equally important: the later started goes, as upstream's order).
    assert Pod.objects.filter(name__startswith="low-").count() == 1
    [gone] = DeletedPod.objects.filter(name__startswith="low-")
    condition = [c for c in gone.manifest["status"]["conditions"] if c["type"] == "DisruptionTarget"][0]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True", "PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher priority pod")
    event = Event.objects.get(reason="Preempted")
    assert event.type == "Normal" and event.involved_name == gone.name and event.involved_uid == low_uids[gone.name]
    assert event.message == f"Preempted by pod {vip.uid} on node node-a"
    first = Attempt.objects.filter(pod_name="vip").order_by("number").first()
    # On success the PostFilter adds nothing to the message (as FitError with an empty PostFilterMsg).
    assert first.result == "unschedulable" and first.message == "0/1 nodes are available: 1 Insufficient cpu."
    assert first.trace["preemption"]["nominated"] == "node-a"
    assert first.trace["preemption"]["victims"] == [f"default/{gone.name}"]
    assert Attempt.objects.filter(pod_name="vip", result="scheduled").count() == 1


def test_an_equal_priority_pod_preempts_nobody_and_the_message_says_so():
    apply(node("node-a", cpu="1"), pod("first"))
    drain()
    apply(pod("second"))
    drain()
    second = Pod.objects.get(name="second")
    assert second.node_name == "" and second.nominated_node == ""
    assert second.scheduled_message == ("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are "
                                        "available: 1 No preemption victims found for incoming pod.")
    assert Pod.objects.get(name="first").node_name == "node-a"


def test_a_pod_whose_class_says_never_does_not_preempt():
    apply(priority_class("polite", 1000, preemptionPolicy="Never"), node("node-a", cpu="1"), pod("low"))
    drain()
    apply(pod("vip", priorityClassName="polite"))
    drain()
    vip = Pod.objects.get(name="vip")
    assert vip.manifest["spec"]["preemptionPolicy"] == "Never"
    assert vip.scheduled_message == ("0/1 nodes are available: 1 Insufficient cpu. "
                                     "preemption: not eligible due to preemptionPolicy=Never.")
    assert Pod.objects.get(name="low").node_name == "node-a"


def test_the_pdb_protected_pod_is_spared_when_another_node_offers_a_victim(clock):
    apply(priority_class("high", 1000), node("node-a", cpu="1"), node("node-b", cpu="1"),
          pod("guarded", meta={"labels": {"app": "db"}}, nodeName="node-a"),
          pod("plain", nodeName="node-b"), pdb("db", {"app": "db"}, min_available=1))
    apply(pod("vip", priorityClassName="high"))
    drain(clock)
    assert Pod.objects.get(name="vip").node_name == "node-b"
    assert Pod.objects.filter(name="guarded", node_name="node-a").exists()
    assert not Pod.objects.filter(name="plain").exists()


def test_the_nominated_room_is_not_taken_by_a_lower_priority_pod(clock):
    apply(priority_class("high", 1000), node("node-a", cpu="1"), pod("vip", priorityClassName="high"))
    q = queues.get_queue()
    q.delete("default/vip")  # the preemptor waits elsewhere (its victims are still going), nominated to node-a
    nominations_write([(Pod.objects.get(name="vip").pk, "node-a")])
    apply(pod("low"))
    drain()
    low = Pod.objects.get(name="low")
    assert low.node_name == "" and low.scheduled_reason == "Unschedulable"
    # As kubectl shows a waiting preemptor: -o json's status.nominatedNodeName, -o wide's NOMINATED NODE.
    vip = Pod.objects.get(name="vip")
    assert kubectl.pod_object(vip)["status"]["nominatedNodeName"] == "node-a"
    assert kubectl.pods_table([vip], all_namespaces=False, wide=True, now=vip.created_at).splitlines()[1].split()[6] == "node-a"
    assert low.scheduled_message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    q.add("default/vip", 1000)
    drain(clock)
    assert Pod.objects.get(name="vip").node_name == "node-a"


def test_the_preempt_task_is_idempotent_and_never_deletes_a_pod_recreated_under_a_victims_name():
    apply(priority_class("high", 1000), node("node-a", cpu="1"), pod("low", nodeName="node-a"),
          pod("vip", priorityClassName="high"))
    queues.get_queue().delete("default/vip")
    vip, low = Pod.objects.get(name="vip"), Pod.objects.get(name="low")
    nominations_write([(vip.pk, "node-a")])
    job = preemption_job(vip, "node-a", (pod_from_manifest(low.manifest),), None)
    assert loop.run_preempt(job) == {"victims": 1}
    assert loop.run_preempt(job) == {"victims": 0}  # delivered again: nothing more to do
    apply(pod("low", nodeName="node-a"))  # its controller recreated it (a new uid)
    assert loop.run_preempt(job) == {"victims": 0}
    assert Pod.objects.filter(name="low").exists()
    assert Event.objects.filter(reason="Preempted").count() == 1


def test_the_preempt_task_evicts_its_victims_in_one_transaction_of_as_many_statements_for_one_as_for_four():
    """The task holds a worker while it runs: its victims go set-based (conditions, events, deletions), never one
    transaction of a dozen statements each."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    statements = []
    for n in (1, 4):
        Pod.objects.all().delete()
        apply(priority_class("high", 1000), node("node-a", cpu="4"), *[pod(f"low-{i}", nodeName="node-a") for i in range(n)],
              pod("vip", cpu="4", priorityClassName="high"))
        queues.get_queue().delete("default/vip")
        vip = Pod.objects.get(name="vip")
        nominations_write([(vip.pk, "node-a")])
        job = preemption_job(vip, "node-a", tuple(pod_from_manifest(p.manifest) for p in
                                                  Pod.objects.filter(name__startswith="low-")), None)
        with CaptureQueriesContext(connection) as queries:
            assert loop.run_preempt(job) == {"victims": n}
        statements.append(len(queries))
        assert not Pod.objects.filter(name__startswith="low-").exists()
        assert Event.objects.filter(reason="Preempted", message__contains=vip.uid).count() == n
        assert DeletedPod.objects.filter(uid__in=[v["uid"] for v in job["victims"]]).count() == n
        assert Node.objects.get(name="node-a").req_cpu == 0 and Node.objects.get(name="node-a").req_pods == 0
    # Only the room given back goes node usage row by row (one short UPDATE each).
    assert statements[1] - statements[0] <= 3, statements


def test_no_victim_goes_for_a_preemptor_deleted_or_nominated_elsewhere_since():
    apply(priority_class("high", 1000), node("node-a", cpu="1"), pod("low", nodeName="node-a"),
          pod("vip", priorityClassName="high"))
    queues.get_queue().delete("default/vip")
    vip, low = Pod.objects.get(name="vip"), Pod.objects.get(name="low")
    job = preemption_job(vip, "node-a", (pod_from_manifest(low.manifest),), None)
    assert loop.run_preempt(job) == {"victims": 0}  # not nominated to node-a
    assert Pod.objects.filter(name="low").exists()


def test_a_preemptor_whose_victims_are_still_going_is_not_attempted_until_the_task_is_done(clock):
    apply(priority_class("high", 1000), node("node-a", cpu="1"), pod("low", nodeName="node-a"),
          pod("vip", priorityClassName="high"))
    vip = Pod.objects.get(name="vip")
    nominations_write([(vip.pk, "node-a")])
    job = preemption_job(vip, "node-a", (pod_from_manifest(Pod.objects.get(name="low").manifest),), None)
    preemptions_record([job])  # as the batch that chose the victims does, the task not run yet
    drain(clock)
    assert Attempt.objects.filter(pod_name="vip").count() == 0  # held back: no second preemption meanwhile
    assert queues.get_queue().get("default/vip") is not None  # still queued, not lost
    assert loop.run_preempt(job) == {"victims": 1}  # ends the preemption, activates the pod
    assert not Preemption.objects.exists()
    drain(clock)
    assert Pod.objects.get(name="vip").node_name == "node-a"
    assert Event.objects.filter(reason="Preempted").count() == 1


@pytest.fixture
def lost_preempt_tasks(monkeypatch):
    """Preempt tasks sent are kept here instead of run: as if the worker that took each died with it."""
    from scheduler import dispatch

    lost, send = [], dispatch.send
    monkeypatch.setattr(dispatch, "send", lambda name, *args: lost.append(args[0]) if name == dispatch.PREEMPT
                        else send(name, *args))
    return lost


def nominating_attempts(name):
    return [a for a in Attempt.objects.filter(pod_name=name) if ((a.trace or {}).get("preemption") or {}).get("nominated")]


def test_a_preemptor_is_held_as_long_as_its_victims_are_there_even_with_its_task_lost_and_redis_emptied(
        clock, lost_preempt_tasks):
    """The hold is Postgres's (the preemption recorded with the nomination), not a mark that expires or that a
    Redis restart loses: the preemptor never preempts a second time while its victims are there; the reconciler
    sends the lost task again, which evicts them once."""
    from datetime import timedelta

    from django.db.models import F

    from scheduler.state.preemptions import PREEMPTION_RESEND_SECONDS

    apply(priority_class("high", 1000), node("node-a", cpu="2"), pod("low-0", nodeName="node-a"),
          pod("low-1", nodeName="node-a"))
    apply(pod("vip", cpu="2", priorityClassName="high"))
    drain(clock)
    assert len(lost_preempt_tasks) == 1 and len(nominating_attempts("vip")) == 1
    queues.get_redis().flushdb()  # Redis restarted: the queue is rebuilt from Postgres, nothing else is kept there
    clock.advance(600)
    drain(clock)
    drain(clock)
    assert len(nominating_attempts("vip")) == 1 and len(lost_preempt_tasks) == 1  # held: it did not preempt again
    assert Pod.objects.filter(name__startswith="low-").count() == 2
    # Its task is sent again once it has been out too long (its worker died with it); this time it runs.
    lost_preempt_tasks.clear()
    Preemption.objects.update(sent_at=F("sent_at") - timedelta(seconds=PREEMPTION_RESEND_SECONDS - 5))
    drain(clock)
    assert lost_preempt_tasks == []  # not yet
    Preemption.objects.update(sent_at=F("sent_at") - timedelta(seconds=10))
    loop.reconcile()
    [again] = lost_preempt_tasks  # sent again (kept by the fixture: run here)
    assert loop.run_preempt(again) == {"victims": 2}
    drain(clock)
    assert Pod.objects.get(name="vip").node_name == "node-a"
    assert len(nominating_attempts("vip")) == 1 and Event.objects.filter(reason="Preempted").count() == 2
    assert not Preemption.objects.exists()


def test_a_preemption_over_no_longer_holds_its_preemptor_and_a_later_one_is_not_ended_by_the_first_task():
    """Held only while a victim is there and not yet being deleted (upstream: the last victim's deletion started,
    the preemption is done; a victim still terminating then makes the pod not eligible to preempt again)."""
    apply(priority_class("high", 1000), node("node-a", cpu="1"), pod("low", nodeName="node-a"),
          pod("vip", priorityClassName="high"))
    queues.get_queue().delete("default/vip")
    vip, low = Pod.objects.get(name="vip"), Pod.objects.get(name="low")
    first = preemption_job(vip, "node-a", (pod_from_manifest(low.manifest),), 1)
    preemptions_record([first])
    assert preemptions_under_way({vip.uid: "node-a"}) == {vip.uid}
    assert preemptions_under_way({vip.uid: "node-b"}) == set()  # nominated elsewhere since
    Pod.objects.filter(pk=low.pk).update(deleting=True)
    assert preemptions_under_way({vip.uid: "node-a"}) == set()
    Pod.objects.filter(pk=low.pk).update(deleting=False)
    second = {**first, "attempt": 2}
    preemptions_record([second])  # the same pod preempting again: its row replaced
    preemption_done(first)  # a late copy of the first task
    assert preemptions_under_way({vip.uid: "node-a"}) == {vip.uid}
    preemption_done(second)
    assert preemptions_under_way({vip.uid: "node-a"}) == set()


def test_a_victim_owned_by_a_replica_set_is_made_again_by_its_controller_and_waits(clock):
    from scheduler.controllers import workloads

    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default"},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "c", "image": "nginx",
                                                         "resources": {"requests": {"cpu": "1"}}}]}}}}
    apply(priority_class("high", 1000), node("node-a", cpu="1"), rs)
    workloads.sync_all()
    drain(clock)
    [first] = Pod.objects.filter(name__startswith="web-")
    assert first.node_name == "node-a"
    apply(pod("vip", priorityClassName="high"))
    drain(clock)
    assert Pod.objects.get(name="vip").node_name == "node-a"
    assert not Pod.objects.filter(uid=first.uid).exists()
    workloads.sync_all()  # the controller sees one pod short and makes another
    drain(clock)
    [again] = Pod.objects.filter(name__startswith="web-")
    assert again.uid != first.uid and again.node_name == "" and again.scheduled_reason == "Unschedulable"
    # Its priority (0) is lower than the preemptor's: nothing to preempt, as upstream says.
    assert again.scheduled_message.endswith("preemption: 0/1 nodes are available: 1 No preemption victims found "
                                            "for incoming pod.")


def test_an_attempt_records_where_its_workers_draws_stood_and_preemption_draws_from_that_stream(clock, settings):
    """The tie-break among equal top scores and preemption's random offset among the candidates are one stream
    (engine/tiebreak.py): each attempt records its seed and position, so a replay can draw what it drew."""
    settings.SCHEDBOARD_SEED = None  # unseeded: the worker draws a seed of its own, and records it all the same
    apply(priority_class("high", 1000), node("node-a", cpu="2"), node("node-b", cpu="2"))
    apply(*[pod(f"low-{i}") for i in range(4)])
    drain()
    seed = loop.get_worker().algorithm.tiebreak.seed
    rows = list(Attempt.objects.order_by("id").values_list("pod_name", "tiebreak_seed", "tiebreak_position",
                                                           "start_node_index"))
    # Two equal nodes, then one, then two equal again, then one: a draw for low-0 and low-2 only.
    assert rows == [("low-0", seed, 0, 0), ("low-1", seed, 1, 0), ("low-2", seed, 1, 0), ("low-3", seed, 2, 0)]
    apply(pod("vip", priorityClassName="high"))
    drain(clock)
    vip = list(Attempt.objects.filter(pod_name="vip").order_by("number").values_list("result", "tiebreak_position"))
    # Nominated after one draw (the offset among the two candidate nodes), then bound on its nominated node.
    assert vip == [("unschedulable", 2), ("scheduled", 3)]


def test_preemption_reads_a_bound_pods_start_as_its_binding_even_on_a_node_nothing_else_changed(clock):
    """"old" then "new" are bound by this worker (its own reservations: its index holds what it assumed); an
    agent arriving bound on new's node makes the worker read that node again, and nothing touches old's. The
    binding is the simulated kubelet's start (placed_pods): so the victim is the one that started last, "new",
    as upstream's pickOneNodeForPreemption prefers, not "old" read as never started (now)."""
    apply(priority_class("high", 1000), node("node-a", cpu="1", labels={"name": "a"}),
          node("node-b", cpu="1", labels={"name": "b"}))
    apply(pod("old", nodeSelector={"name": "a"}))
    drain()
    apply(pod("new", nodeSelector={"name": "b"}))
    drain()
    apply(pod("agent", cpu="0", memory="0", nodeName="node-b"))
    apply(pod("vip", priorityClassName="high"))
    drain(clock)
    first = Attempt.objects.filter(pod_name="vip").order_by("number").first()
    assert first.trace["preemption"]["victims"] == ["default/new"]
    assert Pod.objects.get(name="vip").node_name == "node-b" and Pod.objects.filter(name="old").exists()


def test_a_preemptor_whose_victims_go_while_its_batch_reads_the_snapshot_is_held_not_attempted_on_the_stale_one(
        clock, lost_preempt_tasks, monkeypatch):
    """The hold is asked before the snapshot is read, as upstream's PreEnqueue runs before the cycle that takes its
    snapshot. Asked after it, victims evicted by another worker's task in between were gone for the hold and still
    there for the snapshot, and the preemptor, eligible again on that stale view, preempted a second time (seen in
    PreemptionAsync end to end: more preemptions than preemptors)."""
    from scheduler.state.snapshot import Snapshot

    apply(priority_class("high", 1000), node("node-a", cpu="1"), pod("low", nodeName="node-a"))
    apply(pod("vip", priorityClassName="high"))
    drain(clock)
    assert len(lost_preempt_tasks) == 1  # vip preempted low; its task has not run
    refresh, ran = Snapshot.refresh, []

    def refresh_then_the_task_runs_elsewhere(self, *args, **kwargs):
        cache = refresh(self, *args, **kwargs)
        while lost_preempt_tasks:  # another worker's preempt task, just after this batch read its snapshot
            ran.append(loop.run_preempt(lost_preempt_tasks.pop()))
        return cache

    monkeypatch.setattr(Snapshot, "refresh", refresh_then_the_task_runs_elsewhere)
    clock.advance(600)  # the unschedulable pool's flush: vip is popped while its task has not run
    drain(clock)
    assert Pod.objects.get(name="vip").node_name == "node-a"
    assert ran == [{"victims": 1}]  # one preemption: no second one on the stale snapshot
    assert Attempt.objects.filter(pod_name="vip", result="unschedulable").count() == 1
    assert Event.objects.filter(reason="Preempted").count() == 1
