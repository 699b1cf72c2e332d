"""Adoption and release as upstream's ControllerRefManager: a ReplicaSet, ReplicationController or StatefulSet
adopts the orphans its selector matches and releases the pods whose labels left it; a Deployment adopts and
releases ReplicaSets the same way; another controller's pods are never taken."""

import copy

import pytest

from scheduler.controllers import deployment, replicaset, replication, statefulset
from scheduler.models import ClusterObject, Pod
from scheduler.testing.loop import apply, drain, node, pod
from scheduler.testing.workloads import settle, workload

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def owner_uid(name):
    refs = Pod.objects.get(name=name).manifest["metadata"].get("ownerReferences") or []
    return next((r["uid"] for r in refs if r.get("controller")), None)


def labelled(name, **labels):
    return pod(name, cpu="100m", meta={"labels": labels})


@pytest.mark.parametrize("kind, api, controller", [("ReplicaSet", "apps/v1", replicaset),
                                                   ("ReplicationController", "v1", replication)])
def test_an_orphan_the_selector_matches_is_adopted_and_counted(kind, api, controller):
    apply(node("a"), labelled("stray", app="web"), labelled("other", app="db"), workload(kind, api=api, replicas=2))
    owner = ClusterObject.objects.get(kind=kind)
    got = controller.sync_all()[f"default/web"]
    assert len(got["created"]) == 1  # the orphan counts as one of the two
    assert owner_uid("stray") == owner.uid and owner_uid("other") is None
    ref = Pod.objects.get(name="stray").manifest["metadata"]["ownerReferences"][0]
    assert ref == {"apiVersion": api, "kind": kind, "name": "web", "uid": owner.uid, "controller": True,
                   "blockOwnerDeletion": True}


def test_a_pod_whose_labels_leave_the_selector_is_released_and_replaced(clock):
    apply(node("a"), workload("ReplicaSet", replicas=2))
    settle(clock)
    rs = ClusterObject.objects.get(kind="ReplicaSet")
    name = Pod.objects.order_by("name").first().name
    edited = copy.deepcopy(Pod.objects.get(name=name).manifest)  # as `kubectl get -o yaml`, edited, applied
    edited["metadata"]["labels"] = {"app": "debug"}
    edited.pop("status", None)
    apply(edited)
    got = replicaset.sync(ClusterObject.objects.get(pk=rs.pk))
    assert owner_uid(name) is None and "ownerReferences" not in Pod.objects.get(name=name).manifest["metadata"]
    assert len(got["created"]) == 1
    settle(clock)
    assert sum(owner_uid(p.name) == rs.uid for p in Pod.objects.all()) == 2


def test_another_controllers_pod_and_a_pod_being_deleted_are_left_alone():
    apply(node("a"), workload("ReplicaSet", name="one", replicas=1), labelled("leaving", app="one"))
    Pod.objects.filter(name="leaving").update(deleting=True)
    first = ClusterObject.objects.get(name="one")
    replicaset.sync(first)
    mine = Pod.objects.exclude(name="leaving").get()
    assert owner_uid("leaving") is None
    # A second set whose selector also matches does not take the first one's pod.
    two = workload("ReplicaSet", name="two", replicas=1)
    two["spec"]["selector"] = {"matchLabels": {"app": "one"}}
    two["spec"]["template"]["metadata"]["labels"] = {"app": "one"}
    apply(two)
    second = ClusterObject.objects.get(name="two")
    replicaset.sync(second)
    assert owner_uid(mine.name) == first.uid


def test_a_stateful_set_adopts_an_orphan_of_its_ordinal_name_and_not_one_of_another_name(clock):
    apply(node("a"), labelled("db-0", app="db"), labelled("db-extra", app="db"), workload("StatefulSet", name="db",
                                                                                       replicas=2))
    sts = ClusterObject.objects.get(kind="StatefulSet")
    drain(clock)
    statefulset.sync(sts)
    assert owner_uid("db-0") == sts.uid and owner_uid("db-extra") is None
    settle(clock)
    assert sorted(p.name for p in Pod.objects.all() if owner_uid(p.name) == sts.uid) == ["db-0", "db-1"]


def test_a_deployment_adopts_an_orphan_replica_set_its_selector_matches():
    orphan = workload("ReplicaSet", name="web-old", replicas=2)
    orphan["metadata"]["labels"] = {"app": "web"}
    orphan["spec"]["selector"]["matchLabels"] = {"app": "web"}
    orphan["spec"]["template"]["metadata"]["labels"] = {"app": "web"}
    apply(node("a"), orphan, workload("Deployment", replicas=2))
    d = ClusterObject.objects.get(kind="Deployment")
    deployment.sync(d)
    adopted = ClusterObject.objects.get(name="web-old")
    assert adopted.manifest["metadata"]["ownerReferences"][0]["uid"] == d.uid
    # The adopted set has the Deployment's template but for the hash: it is the new one (no second set made).
    assert ClusterObject.objects.filter(kind="ReplicaSet").count() == 1
