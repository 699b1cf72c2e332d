"""The binding cycle's safety against real Postgres and Redis: a binding never goes out after its reservation
was freed, the reconciler never frees a reservation whose binding is in flight (nor keeps one forever), and a
redelivered bind job for a bound pod is a success on every backend."""

import logging
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler import loop
from scheduler.queue import queues
from scheduler.backends import reset_backend, set_backend
from scheduler.backends.errors import BindOutcomeUnknown
from scheduler.backends.simulated import SimulatedBackend
from scheduler.kube.mirror import PodStore
from scheduler.models import Attempt, Binding, Event, Node, Pod
from scheduler.testing.loop import apply, node, pod
from scheduler.loop.bind import mark_binding

pytestmark = pytest.mark.django_db(transaction=True)


class Cluster:
    """A backend like the kubernetes one (the cluster reports bindings back through its watch): it records every
    binding it is sent, accepts them, and can run something while a binding is in flight."""

    mirrors_bindings = True

    def __init__(self, during_call=None):
        self.sent: list[tuple[str, str]] = []
        self.during_call = during_call
        self.handed: list[list[dict]] = []
        # Up to when its watch has shown everything accepted (a test sets it behind, or None: nobody watches).
        self.watched_through = time.time

    def bind_many(self, requests):
        if self.during_call is not None:
            self.during_call()
        out = []
        for r in requests:
            meta = r["pod_manifest"]["metadata"]
            self.sent.append((meta["name"], r["node_name"]))
            out.append((None, 0.001))
        return out

    def counts_bind_failures(self, pod_manifest):
        return False

    def hand_off(self, items):
        self.handed.append(items)  # the test decides when the binder runs

    def report(self, *, failed, scheduled):
        pass

    def mirror_current_through(self):
        return self.watched_through()


class Sent(SimulatedBackend):
    """The simulated backend, counting what it is asked to bind (and running something during the first call)."""

    def __init__(self, during_call=None):
        self.sent = []
        self.during_call = during_call

    def bind(self, *, pod_manifest, node_name, **kwargs):
        self.sent.append((pod_manifest["metadata"]["name"], node_name))
        if self.during_call is not None:
            hook, self.during_call = self.during_call, None
            hook()
        super().bind(pod_manifest=pod_manifest, node_name=node_name, **kwargs)

    def hand_off(self, items):
        pass


@pytest.fixture
def backend():
    installed = []

    def install(b):
        set_backend(b)
        installed.append(b)
        return b

    yield install
    reset_backend()


def placed(name):
    """One scheduling batch; the placements it handed to the binder (not yet bound)."""
    stats = loop.get_worker().schedule_batch()
    items = [i for i in stats.bind_items if i.key == f"default/{name}"]
    assert items, f"{name} was not placed"
    return items


def age_reservation(name, seconds=60):
    Pod.objects.filter(name=name).update(assumed_at=timezone.now() - timedelta(seconds=seconds))


def watch_says_bound(name, node_name):
    """The cluster's watch reports the pod bound (what the mirror does once the API accepted a binding)."""
    row = Pod.objects.get(name=name)
    obj = {**row.manifest, "spec": {**row.manifest["spec"], "nodeName": node_name}}
    PodStore(queue=queues.get_queue()).apply("MODIFIED", obj)


def failed_scheduling(name):
    return list(Event.objects.filter(involved_name=name, reason="FailedScheduling").values_list("message", flat=True))


# ---- point 1: no binding after the reservation is gone ----------------------------------------------------

def test_a_binding_whose_reservation_expired_is_never_sent_and_the_room_goes_to_the_next_pod(backend):
    cluster = backend(Cluster())
    apply(node("only", cpu="1"), pod("first", cpu="1"))
    stale_job = placed("first")
    age_reservation("first")
    assert loop.reconcile()["expired"] == 1  # the backlog was longer than the assume TTL
    apply(pod("second", cpu="1"))
    fresh_job = placed("second")

    loop.bind_batch(stale_job)
    loop.bind_batch(fresh_job)

    assert cluster.sent == [("second", "only")]  # the stale binding never went out
    first = Pod.objects.get(name="first")
    assert (first.node_name, first.assumed_node, first.scheduled_reason) == ("", "", "")
    assert failed_scheduling("first") == []  # nothing failed in the cluster: the pod is simply scheduled again
    attempt = Attempt.objects.get(pod_name="first")
    assert attempt.result == "bind_failed" and attempt.message.startswith("Binding skipped: the reservation on only")
    watch_says_bound("second", "only")
    assert Node.objects.get(name="only").req_cpu == 1000


def test_the_reconciler_never_frees_a_reservation_whose_binding_is_in_flight(backend):
    """The issue's overcommit: a reservation freed mid-call, its room given away, the watch adding the bound pod."""
    taken = []

    def slow_call():  # the call takes longer than the TTL; meanwhile the reconciler runs and another pod comes
        age_reservation("first")
        loop.reconcile()
        apply(pod("second", cpu="1"))
        taken.extend(loop.get_worker().schedule_batch().bind_items)

    cluster = backend(Cluster(during_call=slow_call))
    apply(node("only", cpu="1"), pod("first", cpu="1"))
    job = placed("first")

    loop.bind_batch(job)
    watch_says_bound("first", "only")

    assert cluster.sent == [("first", "only")] and taken == []  # the room stayed first's
    only = Node.objects.get(name="only")
    assert (only.req_cpu, only.req_pods) == (1000, 1)  # never over its allocatable
    first = Pod.objects.get(name="first")
    assert first.node_name == "only" and first.binding_at is None
    assert failed_scheduling("first") == [] and first.scheduled_reason != "SchedulerError"
    assert Attempt.objects.get(pod_name="first").result == "scheduled"


def test_a_binding_left_in_flight_by_a_binder_that_died_is_sent_again_by_the_next_one(backend):
    cluster = backend(Cluster())
    apply(node("only"), pod("web"))
    job = placed("web")
    mark_binding(job, timezone.now() - timedelta(seconds=100))  # marked, then the leader died mid-call
    age_reservation("web", seconds=100)
    assert loop.reconcile()["expired"] == 0  # in flight: not the TTL's to free

    loop.bind_batch(job)  # the next leader's recover() hands the same job over again

    web = Pod.objects.get(name="web")
    assert (web.node_name, web.binding_at) == ("only", None)
    assert cluster.sent == [("web", "only")]
    assert Node.objects.get(name="only").req_pods == 1


def test_on_the_simulated_cluster_a_dead_binders_reservation_is_freed_after_the_assume_ttl_and_its_job_finds_it_gone(
        backend):
    """The binding there is this database's own conditional write: nothing went out that cannot be taken back,
    so a worker killed mid-binding (its job redelivered an hour later, at Redis's visibility timeout) must not
    hold the room for the binding timeout."""
    backend(Sent())
    apply(node("only", cpu="1"), pod("web", cpu="1"))
    job = placed("web")
    mark_binding(job, timezone.now() - timedelta(seconds=100))  # marked, then the worker was SIGKILLed
    age_reservation("web", seconds=100)

    assert loop.reconcile()["expired"] == 1
    web = Pod.objects.get(name="web")
    assert (web.assumed_node, web.binding_at) == ("", None)
    assert Node.objects.get(name="only").req_pods == 0
    assert loop.bind_batch(job)["lost"] == 1  # the redelivered job: nothing bound, the pod is scheduled again
    assert Pod.objects.get(name="web").node_name == ""


def test_a_binding_mark_whose_job_was_lost_is_freed_after_the_binding_timeout_and_the_pod_requeued(
        backend, settings, caplog):
    backend(Cluster())
    apply(node("only"), pod("web"))
    job = placed("web")
    long_ago = timezone.now() - timedelta(seconds=settings.SCHEDBOARD_BINDING_TIMEOUT_SECONDS + 1)
    mark_binding(job, long_ago)
    age_reservation("web", seconds=settings.SCHEDBOARD_BINDING_TIMEOUT_SECONDS + 1)
    queues.get_queue().delete("default/web")  # the job and the queue were lost with Redis

    with caplog.at_level(logging.WARNING, logger="scheduler.loop"):
        assert loop.reconcile()["expired"] == 1

    web = Pod.objects.get(name="web")
    assert (web.assumed_node, web.binding_at) == ("", None)
    assert Node.objects.get(name="only").req_pods == 0
    assert queues.get_queue().get("default/web") is not None
    assert "its binding was marked in flight" in caplog.text


def test_a_binding_mark_is_not_freed_while_nobody_watches_nor_before_the_mirror_has_seen_past_its_deadline(
        backend, settings):
    """A leader marks a binding, sends it, and dies; the API server accepted it. Until a mirror has watched past
    the mark's deadline the pod may be bound there: freeing its room then gave it to another pod (the chaos
    run's host port taken twice, seed 9). Between leaders nobody watches, so nothing is freed."""
    cluster = backend(Cluster())
    apply(node("only"), pod("web"))
    job = placed("web")
    marked_at = timezone.now() - timedelta(seconds=settings.SCHEDBOARD_BINDING_TIMEOUT_SECONDS + 5)
    mark_binding(job, marked_at)
    age_reservation("web", seconds=settings.SCHEDBOARD_BINDING_TIMEOUT_SECONDS + 5)

    cluster.watched_through = lambda: None  # a failover: no leader watches pods
    assert loop.reconcile()["expired"] == 0
    cluster.watched_through = lambda: marked_at.timestamp() + settings.SCHEDBOARD_BINDING_TIMEOUT_SECONDS - 1
    assert loop.reconcile()["expired"] == 0  # the mirror has not seen past the deadline yet
    assert Pod.objects.get(name="web").assumed_node == "only"

    watch_says_bound("web", "only")  # the new leader's list shows the binding the dead one sent
    cluster.watched_through = time.time
    assert loop.reconcile()["expired"] == 0
    web = Pod.objects.get(name="web")
    assert (web.node_name, web.assumed_node) == ("only", "")
    assert Node.objects.get(name="only").req_pods == 1


def test_the_mirror_seeing_the_pod_bound_settles_its_binding_mark(backend):
    backend(Cluster())
    apply(node("only"), pod("web"))
    job = placed("web")
    mark_binding(job, timezone.now())

    watch_says_bound("web", "only")

    web = Pod.objects.get(name="web")
    assert (web.node_name, web.assumed_node, web.binding_at) == ("only", "", None)
    assert Node.objects.get(name="only").req_pods == 1  # our reservation became the binding: counted once


# ---- point 5: a redelivered bind job is a success ---------------------------------------------------------

@pytest.mark.parametrize("make_backend", [Sent, Cluster], ids=["simulated", "cluster"])
def test_a_redelivered_bind_job_for_a_bound_pod_is_a_success_on_every_backend(backend, make_backend):
    b = backend(make_backend())
    apply(node("only"), pod("web"))
    job = placed("web")
    loop.bind_batch(job)
    if b.mirrors_bindings:
        watch_says_bound("web", "only")
    before = Pod.objects.get(name="web")

    loop.bind_batch(job)  # acks_late: the worker died after binding, the broker delivered the job again

    web = Pod.objects.get(name="web")
    assert web.node_name == "only" and web.scheduled_status == before.scheduled_status
    assert (web.scheduled_reason, web.scheduled_message) == ("", "")
    assert web.bound_at == before.bound_at
    assert list(Attempt.objects.filter(pod_name="web").values_list("result", flat=True)) == ["scheduled"]
    assert Binding.objects.filter(pod_name="web").count() == 1
    assert failed_scheduling("web") == []
    assert queues.get_queue().get("default/web") is None  # not requeued
    assert b.sent == [("web", "only")]  # nothing sent twice
    assert Node.objects.get(name="only").req_pods == 1


def test_a_bind_job_for_a_pod_bound_meanwhile_by_another_attempt_never_fails_the_pod(backend):
    backend(Sent())
    apply(node("only"), pod("web"))
    old_job = placed("web")
    age_reservation("web")
    loop.reconcile()
    queues.get_queue().delete("default/web")
    queues.get_queue().add("default/web", 0)
    new_job = placed("web")
    loop.bind_batch(new_job)

    loop.bind_batch(old_job)

    web = Pod.objects.get(name="web")
    assert web.node_name == "only" and web.scheduled_reason == "" and failed_scheduling("web") == []
    results = dict(Attempt.objects.values_list("pk", "result"))
    assert results == {old_job[0].attempt: "bind_failed", new_job[0].attempt: "scheduled"}
    assert Node.objects.get(name="only").req_pods == 1


def test_the_same_bind_job_delivered_twice_at_once_binds_once_and_fails_nothing(backend):
    """acks_late: a slow worker's job is delivered again to another worker while the first is still binding."""
    jobs = []
    b = backend(Sent(during_call=lambda: loop.bind_batch(jobs[0])))
    apply(node("only"), pod("web"))
    jobs.append(placed("web"))

    loop.bind_batch(jobs[0])  # the second delivery runs (and records) inside the first's call

    web = Pod.objects.get(name="web")
    assert (web.node_name, web.scheduled_status, web.scheduled_reason) == ("only", "True", "")
    assert list(Attempt.objects.values_list("result", flat=True)) == ["scheduled"]
    assert Binding.objects.count() == 1 and failed_scheduling("web") == []
    assert queues.get_queue().get("default/web") is None
    assert Node.objects.get(name="only").req_pods == 1 and len(b.sent) == 2


def test_a_pod_deleted_while_its_binding_is_in_flight_is_forgotten_without_a_failure(backend):
    from scheduler.cluster.services import pod_delete

    backend(Sent(during_call=lambda: pod_delete(namespace="default", name="web")))
    apply(node("only"), pod("web"))
    job = placed("web")

    assert loop.bind_batch(job) == {"bound": 0, "failed": 0, "lost": 0, "dropped": 0}

    assert not Pod.objects.exists() and not Binding.objects.exists()
    assert Node.objects.get(name="only").req_pods == 0
    assert queues.get_queue().get("default/web") is None
    # The audit does not claim a placement that never happened.
    assert list(Attempt.objects.values_list("result", "message")) == [
        ("bind_failed", "Binding skipped: the pod was deleted before its binding")]


class Unsettled(Cluster):
    """The cluster never said whether the binding happened (every try timed out)."""

    def bind_many(self, requests):
        for r in requests:
            self.sent.append((r["pod_manifest"]["metadata"]["name"], r["node_name"]))
        return [(BindOutcomeUnknown("no answer settled whether the binding happened: 0 timeout"), 30.0)
                for _ in requests]


def test_a_binding_whose_outcome_is_unknown_keeps_its_room_until_the_watch_says_where_the_pod_is(backend):
    """The overcommit chaos found: a binding timed out, the room went to the next pod, and the binding had landed."""
    cluster = backend(Unsettled())
    apply(node("only", cpu="1"), pod("first", cpu="1"))
    loop.bind_batch(placed("first"))

    first = Pod.objects.get(name="first")
    assert (first.assumed_node, first.node_name) == ("only", "") and first.binding_at is not None
    assert failed_scheduling("first") == [] and first.scheduled_reason == ""  # maybe bound: no failure said
    assert Attempt.objects.get(pod_name="first").message.startswith("Binding outcome unknown:")
    assert queues.get_queue().get("default/first") is None  # not scheduled again meanwhile
    age_reservation("first")
    assert loop.reconcile()["expired"] == 0  # the assume TTL does not free it either
    apply(pod("second", cpu="1"))
    assert loop.get_worker().schedule_batch().bind_items == []  # the room is still first's

    watch_says_bound("first", "only")  # it had landed
    only = Node.objects.get(name="only")
    assert (only.req_cpu, only.req_pods) == (1000, 1)
    assert cluster.sent == [("first", "only")]
    # ... and the audit has it: the watch recorded the placement the binder could not confirm.
    binding = Binding.objects.get(pod_name="first")
    assert (binding.node_name, binding.attempt_id) == ("only", Attempt.objects.get(pod_name="first").pk)
    assert Attempt.objects.get(pod_name="first").result == "scheduled"
    assert list(Event.objects.filter(involved_name="first", reason="Scheduled").values_list("message", flat=True)) == [
        "Successfully assigned default/first to only"]


def test_a_binding_the_watch_shows_before_its_binder_records_it_is_recorded_once_and_completely(backend):
    """The watch is fast: the mirror sees our binding land while the binder's call is still returning."""
    backend(Cluster(during_call=lambda: watch_says_bound("web", "only")))
    apply(node("only"), pod("web"))
    loop.bind_batch(placed("web"))

    assert Binding.objects.filter(pod_name="web").count() == 1
    attempt = Attempt.objects.get(pod_name="web")
    assert attempt.result == "scheduled" and attempt.binding_ms is not None  # the binder still wrote its part
    assert Binding.objects.get(pod_name="web").attempt_id == attempt.pk
    assert Event.objects.filter(involved_name="web", reason="Scheduled").count() == 1
    assert Node.objects.get(name="only").req_pods == 1


def test_a_binding_sent_by_a_binder_that_died_is_recorded_when_the_watch_shows_it(backend):
    backend(Cluster())
    apply(node("only"), pod("web"))
    job = placed("web")
    mark_binding(job, timezone.now())  # marked, sent ... and the binder died before recording

    watch_says_bound("web", "only")

    binding = Binding.objects.get(pod_name="web")
    assert (binding.node_name, binding.attempt_id) == ("only", job[0].attempt)


def test_a_bind_job_run_again_after_the_watch_recorded_its_binding_writes_the_event_and_timings_once(backend):
    """A binding batch rolled back (a deadlock with the mirror) and run again finds its binding recorded by
    the watch: the event, the attempt's timings and the metrics are still its to write; a third run adds none."""
    backend(Cluster())
    apply(node("only"), pod("web"))
    job = placed("web")
    mark_binding(job, timezone.now())  # sent; then the batch's transaction was rolled back
    watch_says_bound("web", "only")

    loop.bind_batch(job)
    loop.bind_batch(job)  # redelivered once more

    assert Binding.objects.filter(pod_name="web").count() == 1
    attempt = Attempt.objects.get(pod_name="web")
    assert attempt.result == "scheduled" and attempt.binding_ms is not None
    assert Event.objects.filter(involved_name="web", reason="Scheduled").count() == 1


def _with_host_port(obj, port=8080):
    obj["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": port, "protocol": "TCP"}]
    return obj


def test_a_dead_leaders_recovered_job_in_the_same_batch_as_the_pods_next_placement_sends_only_the_current_binding(
        backend, settings):
    """A leader dies mid-call; its mark outlives the binding timeout, so the room is freed and the pod placed on
    another node, and another pod takes the room it left (here: the same host port). The next leader's
    recover() puts the dead leader's job back, and the committer takes it in one batch with the new one: the
    mark lands for the pod (on its new node), and only that binding may go out. Sending the stale one too
    raced the two in the API server, and the stale node could win: the pod bound where its room was given
    away (a host port taken twice, the chaos run's overcommit)."""
    cluster = backend(Cluster())
    apply(node("a"), node("b"), _with_host_port(pod("web")))
    old_job = placed("web")
    stale = old_job[0].node
    fresh = "b" if stale == "a" else "a"
    long_ago = timezone.now() - timedelta(seconds=settings.SCHEDBOARD_BINDING_TIMEOUT_SECONDS + 1)
    mark_binding(old_job, long_ago)  # marked, then the leader died mid-call (nothing was sent)
    age_reservation("web", seconds=settings.SCHEDBOARD_BINDING_TIMEOUT_SECONDS + 1)
    assert loop.reconcile()["expired"] == 1
    apply(node(stale, spec={"unschedulable": True}))
    queues.get_queue().delete("default/web")  # requeued afresh (not in backoff), as test_a_bind_job_for_a_pod...
    queues.get_queue().add("default/web", 0)
    new_job = placed("web")
    assert new_job[0].node == fresh
    apply(node(stale), _with_host_port(pod("db")))
    assert placed("db")[0].node == stale  # the host port is free there: web's room went back

    loop.bind_batch([*old_job, *new_job])  # the recovered job and the new one, in one committer batch

    assert cluster.sent == [("web", fresh)]
    web = Pod.objects.get(name="web")
    assert (web.node_name, web.assumed_node, web.scheduled_reason) == (fresh, "", "")
    assert dict(Attempt.objects.filter(pod_name="web").values_list("pk", "result")) == {
        old_job[0].attempt: "bind_failed", new_job[0].attempt: "scheduled"}
    assert Binding.objects.filter(pod_name="web").count() == 1 and failed_scheduling("web") == []
    assert queues.get_queue().get("default/web") is None  # bound: not back in the queue
    ports = {n.name: n.used_ports for n in Node.objects.all()}
    assert ports == {stale: [["TCP", 8080, "0.0.0.0"]], fresh: [["TCP", 8080, "0.0.0.0"]]}


def test_a_recovered_job_and_the_pods_next_placement_on_the_same_node_bind_once_and_record_one_binding(
        backend, settings, caplog):
    """As above, the pod placed again on the same node: one binding goes out (the latest attempt's), one
    Binding row is written (two in one statement broke the batch on binding_once_per_pod_uid)."""
    cluster = backend(Cluster())
    apply(node("only"), pod("web"))
    old_job = placed("web")
    mark_binding(old_job, timezone.now() - timedelta(seconds=settings.SCHEDBOARD_BINDING_TIMEOUT_SECONDS + 1))
    age_reservation("web", seconds=settings.SCHEDBOARD_BINDING_TIMEOUT_SECONDS + 1)
    assert loop.reconcile()["expired"] == 1
    queues.get_queue().delete("default/web")
    queues.get_queue().add("default/web", 0)
    new_job = placed("web")

    with caplog.at_level(logging.ERROR, logger="scheduler.loop"):
        loop.bind_batch([*old_job, *new_job])

    assert cluster.sent == [("web", "only")] and "failed" not in caplog.text
    assert Pod.objects.get(name="web").node_name == "only" and Node.objects.get(name="only").req_pods == 1
    assert dict(Attempt.objects.values_list("pk", "result")) == {
        old_job[0].attempt: "bind_failed", new_job[0].attempt: "scheduled"}
    assert list(Binding.objects.values_list("attempt_id", flat=True)) == [new_job[0].attempt]
