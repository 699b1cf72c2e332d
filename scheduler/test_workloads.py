"""The workload controllers on the real stack: a ReplicaSet keeps its count (a deleted or evicted pod is
recreated from the template and queued), owner references and labels as upstream, `scale` as kubectl."""

import pytest

from scheduler.cluster.services import pod_delete
from scheduler.controllers import replicaset, workloads
from scheduler.models import Event, Pod
from scheduler.queue import queues
from scheduler.testing.cli import cli
from scheduler.testing.loop import apply, drain, node

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def replica_set(name="web", replicas=3, **template_spec):
    spec = {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}],
            **template_spec}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def owned(name="web"):
    return sorted(p.name for p in Pod.objects.filter(name__startswith=f"{name}-"))


def test_a_replica_set_creates_its_pods_from_the_template_owned_labelled_and_queued():
    apply(node("a"), replica_set())
    got = workloads.sync_all()
    assert len(got["replicaset-controller"]["default/web"]["created"]) == 3
    pods = list(Pod.objects.all())
    rs_uid = pods[0].manifest["metadata"]["ownerReferences"][0]["uid"]
    for p in pods:
        meta = p.manifest["metadata"]
        assert p.name.startswith("web-") and len(p.name) == len("web-") + 5
        assert meta["generateName"] == "web-" and meta["labels"] == {"app": "web"}
        assert meta["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": rs_uid,
                                            "controller": True, "blockOwnerDeletion": True}]
        assert [t["key"] for t in p.manifest["spec"]["tolerations"]] == [
            "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
    assert sorted(queues.get_queue().keys()) == sorted(f"default/{p.name}" for p in pods)
    events = Event.objects.filter(involved_kind="ReplicaSet", involved_name="web")
    assert sorted(e.message for e in events) == sorted(f"Created pod: {p.name}" for p in pods)
    assert {(e.reason, e.reporting_controller) for e in events} == {("SuccessfulCreate", "replicaset-controller")}
    drain()
    assert Pod.objects.filter(phase="Running").count() == 3
    assert workloads.sync_all() == {}


def test_a_deleted_pod_is_replaced_and_the_replacement_is_scheduled():
    apply(node("a"), replica_set(replicas=2))
    workloads.sync_all()
    drain()
    gone = owned()[0]
    pod_delete(namespace="default", name=gone)
    created = replicaset.sync_all()["default/web"]["created"]
    assert len(created) == 1 and created[0] not in (gone,)
    drain()
    assert Pod.objects.filter(phase="Running").count() == 2


@pytest.mark.parametrize("to, running, pending", [(2, 2, 0), (0, 0, 0), (5, 2, 3)])
def test_scale_prints_as_kubectl_and_the_count_follows_unscheduled_pods_going_first(clock, to, running, pending):
    apply(node("a", cpu="250m"), replica_set(replicas=3))
    workloads.sync_all()
    drain(clock)  # 100m each: two fit, one stays pending
    assert Pod.objects.filter(phase="Pending").count() == 1
    r = cli("scale", "rs/web", "--replicas", str(to))
    assert (r.code, r.out, r.err) == (0, "replicaset.apps/web scaled\n", "")
    assert (Pod.objects.filter(phase="Running").count(), Pod.objects.filter(phase="Pending").count()) == (running, pending)


def test_scale_names_a_missing_object_as_kubectl():
    r = cli("scale", "deployment/nope", "--replicas", "2")
    assert (r.code, r.err) == (1, 'Error from server (NotFound): deployments.apps "nope" not found\n')
    r = cli("scale", "rs", "web", "--replicas", "2")
    assert (r.code, r.err) == (1, 'Error from server (NotFound): replicasets.apps "web" not found\n')


def test_a_template_the_api_server_refuses_is_a_failed_create_event_and_nothing_is_created():
    apply(replica_set(replicas=1, containers=[{"name": "c", "image": "nginx",
                                               "resources": {"requests": {"cpu": "lots"}}}]))
    got = replicaset.sync_all()["default/web"]
    assert got["created"] == [] and "cpu" in got["error"]
    assert Pod.objects.count() == 0
    assert Event.objects.get(involved_name="web").reason == "FailedCreate"


def _pod(name, node="n1", phase="Running", ready_s=None, created_s=0.0, cost=0, uid=None):
    from datetime import datetime, timedelta, timezone as tz

    from scheduler.controllers.pods import OwnedPod

    t0 = datetime(2026, 12, 1, tzinfo=tz.utc)
    return OwnedPod("default", name, node, phase, t0 + timedelta(seconds=created_s), False, uid=uid or name,
                    ready_at=None if ready_s is None else t0 + timedelta(seconds=ready_s), deletion_cost=cost)


@pytest.mark.parametrize("pods, related, first", [
    # ActivePodsWithRanks, rule by rule: unassigned, Pending, not ready, lower deletion cost, doubled up,
    # ready for less time (log2 buckets, uid inside one), newer.
    ([_pod("bound", ready_s=1), _pod("unbound", node="", phase="Pending")], [], "unbound"),
    ([_pod("running", ready_s=1), _pod("pending", phase="Pending")], [], "pending"),
    ([_pod("ready", ready_s=1), _pod("notready")], [], "notready"),
    ([_pod("cheap", ready_s=1, cost=-5), _pod("dear", ready_s=1, cost=10)], [], "cheap"),
    ([_pod("alone", node="n1", ready_s=1), _pod("crowded", node="n2", ready_s=1)],
     [_pod("x", node="n2"), _pod("y", node="n2")], "crowded"),
    ([_pod("old", ready_s=10.0), _pod("young", ready_s=3000.0)], [], "young"),
    ([_pod("b", ready_s=3000.0), _pod("a", ready_s=3000.5)], [], "a"),  # same log2 bucket: the smaller uid
    ([_pod("older", created_s=0.0), _pod("newer", created_s=3000.0)], [], "newer"),
])
def test_scaling_down_deletes_the_pod_upstreams_ranking_puts_first(pods, related, first):
    from datetime import datetime, timezone as tz

    from scheduler.controllers.replicaset import pods_to_delete

    now = datetime(2026, 12, 1, 1, 0, tzinfo=tz.utc)
    assert [p.name for p in pods_to_delete(pods, related, 1, now)] == [first]
    assert [p.name for p in pods_to_delete(list(reversed(pods)), related, 1, now)] == [first]
