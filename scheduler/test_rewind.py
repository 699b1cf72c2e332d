"""The rewind: the node cache and the queue at a past instant, rebuilt from history, equal to what was live
then and to the audit's Binding rows up to it, after later pods, deletions and nodes."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler.cluster.services import node_delete, pod_delete
from scheduler.models import (RESULT_BIND_FAILED, RESULT_ERROR, RESULT_UNSCHEDULABLE, Attempt, DeletedNode,
                              DeletedPod, Node)
from scheduler.queue.queues import get_queue
from scheduler.testing.audit import audit_bound
from scheduler.testing.loop import apply, drain, node, pod

from scheduler.state.rewind import ACTIVE, BACKOFF, IN_FLIGHT, UNSCHEDULABLE, _queued, rewind

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def live_state() -> tuple[dict, dict]:
    """What the live tables and queue say now: node -> (cpu, memory, pods), queue -> pod keys."""
    nodes = {n: (cpu, mem, pods) for n, cpu, mem, pods in Node.objects.values_list("name", "req_cpu", "req_memory", "req_pods")}
    queue = get_queue()
    return nodes, {q: sorted(i.key for i in queue.entries(q, limit=1000)) for q in ("active", "backoff", "unschedulable")}


def rewound_state(at) -> tuple[dict, dict]:
    r = rewind(at=at)
    return ({n.name: (n.req_cpu, n.req_memory, n.pods) for n in r.nodes},
            {q: sorted(p.key for p in pods) for q, pods in r.queues.items()})


def test_a_past_instant_rewinds_to_what_was_live_then_and_to_the_bindings_up_to_it(clock):
    apply(node("n1", cpu="4"), node("n2", cpu="4"), pod("a", cpu="1", meta={"uid": "uid-a"}), pod("b", cpu="1500m"))
    drain(clock)
    t1, live1 = timezone.now(), live_state()

    apply(pod("c", cpu="2"), pod("huge", cpu="64"))
    drain(clock)
    t2, live2 = timezone.now(), live_state()

    # What happens after: a deletion, a new node, a node deleted, more pods.
    pod_delete(namespace="default", name="a")
    apply(node("n3", cpu="8"), pod("d", cpu="1"))
    drain(clock)
    node_delete(name="n3")
    assert DeletedPod.objects.filter(name="a", uid="uid-a", req_cpu=1000).exists()
    assert DeletedNode.objects.filter(name="n3", alloc_cpu=8000).exists()

    assert rewound_state(t1) == live1
    assert rewound_state(t2) == live2
    assert live2[1]["unschedulable"] == ["default/huge"]
    for at in (t1, t2, timezone.now()):
        r = rewind(at=at)
        names = {n.name for n in r.nodes}  # pod d's binding to n3 outlives n3 (deleted with d still on it)
        assert {n.name: (n.bound_cpu, n.bound_memory) for n in r.nodes if n.pods} == {
            name: v for name, v in audit_bound(at).items() if name in names}
    # Pod a was on its node at t2 (deleted after) and is not now; n3 existed only in between.
    assert "n3" not in {n.name for n in rewind(at=t2).nodes}
    assert rewind(at=t2).attempts_before[-1].pod_name == "huge"
    assert [b.pod_name for b in rewind(at=t1).bindings_after][:1] == ["c"]


def test_a_node_changed_since_shows_its_allocatable_and_cordon_as_they_were(clock):
    from scheduler.controllers.drain import cordon

    apply(node("n1", cpu="4"), pod("a", cpu="1"))
    drain(clock)
    before = timezone.now()
    apply(node("n1", cpu="16"))  # resized
    cordon("n1")
    after = timezone.now()
    [then] = rewind(at=before).nodes
    [now] = rewind(at=after).nodes
    assert (then.alloc_cpu, then.unschedulable, then.revised) == (4000, False, True)
    assert (now.alloc_cpu, now.unschedulable, now.revised) == (16000, True, False)
    assert then.percent("cpu") == 25 and now.percent("cpu") == 6


T = timezone.now()


def attempt(result, number=1, finished=-1.0, started=-1.5, binding_ms=None):
    return Attempt(pk=number, namespace="default", pod_name="p", number=number, result=result, message="why",
                   started_at=T + timedelta(seconds=started), binding_ms=binding_ms,
                   finished_at=None if finished is None else T + timedelta(seconds=finished))


POD = {"namespace": "default", "name": "p", "priority": 5, "queued_at": T - timedelta(seconds=60)}


@pytest.mark.parametrize("latest,queue,since_s,expires_s", [
    (None, ACTIVE, -60, None),  # never tried: active since queued
    (attempt(RESULT_UNSCHEDULABLE, finished=None), IN_FLIGHT, -1.5, None),
    (attempt(RESULT_UNSCHEDULABLE, finished=1.0, started=-0.5), IN_FLIGHT, -0.5, None),  # finishes after T
    (attempt(RESULT_UNSCHEDULABLE, number=3, finished=-10), UNSCHEDULABLE, -10, -6),  # backoff 4 s with 3 attempts
    (attempt(RESULT_UNSCHEDULABLE, finished=-301, started=-302), ACTIVE, -1, None),  # flushed after 5 minutes
    (attempt(RESULT_ERROR, number=2, finished=-1), BACKOFF, -1, 1),
    (attempt(RESULT_ERROR, number=1, finished=-3), ACTIVE, -2, None),  # backoff of 1 s ran out
    (attempt(RESULT_BIND_FAILED, number=1, finished=-2, binding_ms=1500), BACKOFF, -0.5, 0.5),
])
def test_a_pending_pods_sub_queue_follows_its_last_attempt(latest, queue, since_s, expires_s):
    entry = _queued(POD, latest, T)
    assert entry.queue == queue
    assert entry.since == T + timedelta(seconds=since_s)
    assert entry.backoff_expires == (None if expires_s is None else T + timedelta(seconds=expires_s))


def test_gated_pods_are_rewound_from_their_creation_until_their_last_gate_goes(clock):
    gates = [{"name": "example.com/quota"}, {"name": "example.com/approval"}]
    apply(node("n1", cpu="4"), pod("held", cpu="1", schedulingGates=gates), pod("kept", cpu="1", schedulingGates=gates[:1]),
          pod("gone", cpu="1", schedulingGates=gates[:1]), pod("theirs", cpu="1", schedulerName="other", schedulingGates=gates))
    drain(clock)
    t1 = timezone.now()
    apply(pod("held", cpu="1"))  # both gates removed: queued, then bound
    drain(clock)
    pod_delete(namespace="default", name="gone")  # deleted while gated
    t2 = timezone.now()

    then = rewind(at=t1, scheduler_names={"default-scheduler"})
    assert [g.key for g in then.gated] == ["default/held", "default/kept", "default/gone"]  # by age, as the live page
    by_key = {g.key: g for g in then.gated}
    assert by_key["default/held"].gates == [] and by_key["default/held"].ungated_at > t1  # its gates went after T
    assert by_key["default/kept"].gates == ["example.com/quota"] and by_key["default/gone"].deleted_at > t1
    assert not any(p.key == "default/held" for q in then.queues.values() for p in q)  # gated, not queued
    assert {n.name: n.pods for n in then.nodes} == {"n1": 0}
    assert [g.key for g in rewind(at=t1).gated] == ["default/held", "default/kept", "default/gone", "default/theirs"]

    now = rewind(at=t2, scheduler_names={"default-scheduler"})
    assert [g.key for g in now.gated] == ["default/kept"]  # held's gates are gone, gone is gone
    assert {n.name: n.pods for n in now.nodes} == {"n1": 1}
