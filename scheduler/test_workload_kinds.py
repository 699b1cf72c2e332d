"""Deployments, StatefulSets and ReplicationControllers keep their counts on the real stack: names, labels
and owner references as upstream, the events their controllers leave, `scale`, `get`, cascading `delete`."""

import re

import pytest

from scheduler.cluster.services import pod_delete
from scheduler.controllers import statefulset, workloads
from scheduler.models import ClusterObject, Event, Pod
from scheduler.testing.cli import cli
from scheduler.testing.loop import apply, node
from scheduler.testing.workloads import settle, workload

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def messages(kind, name):
    return [e.message for e in Event.objects.filter(involved_kind=kind, involved_name=name).order_by("id")]


def test_a_deployment_owns_a_replica_set_named_by_its_template_hash_whose_pods_carry_the_hash(clock):
    apply(node("a"), workload("Deployment"))
    settle(clock)
    d = ClusterObject.objects.get(kind="Deployment", name="web")
    rs = ClusterObject.objects.get(kind="ReplicaSet")
    pod_hash = rs.name.removeprefix("web-")
    assert re.fullmatch(r"[bcdfghjklmnpqrstvwxz2456789]{1,10}", pod_hash)
    meta = rs.manifest["metadata"]
    assert meta["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": d.uid,
                                        "controller": True, "blockOwnerDeletion": True}]
    assert meta["labels"] == {"app": "web", "pod-template-hash": pod_hash}
    # max-replicas: 3 + maxSurge, the default 25% of 3 rounded up.
    assert meta["annotations"] == {"deployment.kubernetes.io/desired-replicas": "3",
                                   "deployment.kubernetes.io/max-replicas": "4", "deployment.kubernetes.io/revision": "1"}
    assert rs.selector == {"matchLabels": {"app": "web", "pod-template-hash": pod_hash}}
    pods = list(Pod.objects.all())
    assert len(pods) == 3 and all(p.node_name == "a" for p in pods)
    for p in pods:
        assert p.name.startswith(f"{rs.name}-") and len(p.name) == len(rs.name) + 6
        assert p.manifest["metadata"]["labels"] == {"app": "web", "pod-template-hash": pod_hash}
        assert p.manifest["metadata"]["ownerReferences"][0]["uid"] == rs.uid
    assert messages("Deployment", "web") == [f"Scaled up replica set {rs.name} to 3"]
    assert {e.reason for e in Event.objects.filter(involved_kind="Deployment")} == {"ScalingReplicaSet"}
    assert Event.objects.filter(involved_kind="ReplicaSet", reason="SuccessfulCreate").count() == 3


def test_a_deployment_scaled_and_its_lost_pod_replaced_and_get_prints_as_kubectl(clock):
    apply(node("a"), workload("Deployment", replicas=2))
    settle(clock)
    pod_delete(namespace="default", name=Pod.objects.first().name)
    settle(clock)
    assert Pod.objects.filter(phase="Running").count() == 2
    r = cli("scale", "deployment/web", "--replicas", "4")
    assert (r.code, r.out) == (0, "deployment.apps/web scaled\n")
    settle(clock)
    assert Pod.objects.filter(phase="Running").count() == 4
    rs = ClusterObject.objects.get(kind="ReplicaSet")
    assert messages("Deployment", "web")[-1] == f"Scaled up replica set {rs.name} to 4 from 2"
    out = cli("get", "deployments").out.splitlines()
    assert re.split(r"\s{2,}", out[0]) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert re.split(r"\s{2,}", out[1])[:4] == ["web", "4/4", "4", "4"]
    assert re.split(r"\s{2,}", cli("get", "rs").out.splitlines()[1])[:4] == [rs.name, "4", "4", "4"]


def test_a_recreate_deployment_scales_the_old_replica_set_to_zero_before_the_new_one_starts(clock):
    apply(node("a"), workload("Deployment", replicas=2, strategy={"type": "Recreate"}))
    settle(clock)
    old = ClusterObject.objects.get(kind="ReplicaSet")
    apply(workload("Deployment", replicas=2, image="httpd", strategy={"type": "Recreate"}))
    settle(clock)
    new = ClusterObject.objects.filter(kind="ReplicaSet").exclude(name=old.name).get()
    assert ClusterObject.objects.get(name=old.name).replicas == 0
    assert new.manifest["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert {p.manifest["spec"]["containers"][0]["image"] for p in Pod.objects.all()} == {"httpd"}
    assert Pod.objects.filter(phase="Running").count() == 2
    assert messages("Deployment", "web")[1:] == [f"Scaled down replica set {old.name} to 0 from 2",
                                                 f"Scaled up replica set {new.name} to 2"]


def test_deleting_a_deployment_deletes_its_replica_sets_and_their_pods():
    apply(node("a"), workload("Deployment", replicas=2))
    workloads.sync_all()
    r = cli("delete", "deployment", "web")
    assert (r.code, r.out) == (0, 'deployment.apps "web" deleted from default namespace\n')
    assert not ClusterObject.objects.filter(kind__in=["Deployment", "ReplicaSet"]).exists()
    assert Pod.objects.count() == 0


def test_a_stateful_set_creates_ordinal_pods_in_order_and_recreates_a_lost_one_under_its_name(clock):
    apply(node("a"), {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "default"},
                      "spec": {"selector": {"app": "db"}}},
          workload("StatefulSet", name="db", serviceName="db"))
    sts = ClusterObject.objects.get(kind="StatefulSet")
    assert statefulset.sync(sts) == {"created": ["db-0"], "deleted": []}
    assert statefulset.sync(sts) == {"created": [], "deleted": []}  # OrderedReady: db-0 is not Running yet
    settle(clock)
    assert sorted(Pod.objects.values_list("name", flat=True)) == ["db-0", "db-1", "db-2"]
    p = Pod.objects.get(name="db-1")
    labels = p.manifest["metadata"]["labels"]
    assert labels["statefulset.kubernetes.io/pod-name"] == "db-1" and labels["apps.kubernetes.io/pod-index"] == "1"
    assert re.fullmatch(r"db-[bcdfghjklmnpqrstvwxz2456789]+", labels["controller-revision-hash"])
    assert (p.manifest["spec"]["hostname"], p.manifest["spec"]["subdomain"]) == ("db-1", "db")
    assert p.manifest["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    pod_delete(namespace="default", name="db-1")
    settle(clock)
    assert sorted(Pod.objects.filter(phase="Running").values_list("name", flat=True)) == ["db-0", "db-1", "db-2"]
    r = cli("scale", "sts/db", "--replicas", "1")
    assert (r.code, r.out) == (0, "statefulset.apps/db scaled\n")
    settle(clock)
    assert list(Pod.objects.values_list("name", flat=True)) == ["db-0"]
    assert messages("StatefulSet", "db") == [
        "create Pod db-0 in StatefulSet db successful", "create Pod db-1 in StatefulSet db successful",
        "create Pod db-2 in StatefulSet db successful", "delete Pod db-2 in StatefulSet db successful",
        "delete Pod db-1 in StatefulSet db successful"]
    # db-1 created twice: one event, counted twice (as the API server aggregates a repeated event).
    assert Event.objects.get(involved_name="db", message="create Pod db-1 in StatefulSet db successful").count == 2
    assert re.split(r"\s{2,}", cli("get", "sts").out.splitlines()[1])[:2] == ["db", "1/1"]


def test_a_parallel_stateful_set_creates_all_its_pods_at_once():
    apply(node("a"), workload("StatefulSet", name="db", podManagementPolicy="Parallel"))
    assert statefulset.sync(ClusterObject.objects.get(kind="StatefulSet"))["created"] == ["db-0", "db-1", "db-2"]


def test_a_replication_controller_keeps_its_count_its_pods_owned_by_v1_replication_controller(clock):
    apply(node("a"), workload("ReplicationController", api="v1", replicas=2))
    settle(clock)
    rc = ClusterObject.objects.get(kind="ReplicationController")
    pods = list(Pod.objects.filter(phase="Running"))
    assert len(pods) == 2
    assert pods[0].manifest["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "ReplicationController", "name": "web", "uid": rc.uid, "controller": True,
         "blockOwnerDeletion": True}]
    assert {(e.reason, e.reporting_controller) for e in Event.objects.filter(involved_kind="ReplicationController")} \
        == {("SuccessfulCreate", "replication-controller")}
    assert cli("scale", "rc/web", "--replicas", "3").out == "replicationcontroller/web scaled\n"
    settle(clock)
    assert Pod.objects.filter(phase="Running").count() == 3


def test_a_stateful_set_does_not_take_over_a_pod_of_its_name_it_does_not_own():
    from scheduler.testing.loop import pod

    apply(node("a"), pod("db-0"), workload("StatefulSet", name="db"))
    assert statefulset.sync(ClusterObject.objects.get(kind="StatefulSet")) == {"created": [], "deleted": []}
    assert "ownerReferences" not in Pod.objects.get(name="db-0").manifest["metadata"]
    e = Event.objects.get(involved_kind="StatefulSet")
    assert (e.reason, e.type, e.message) == ("FailedCreate", "Warning", 'create Pod db-0 in StatefulSet db failed error: '
                                                                       'pods "db-0" already exists')


def test_old_replica_sets_past_the_revision_history_limit_are_deleted_oldest_first(clock):
    apply(node("a"))
    names = []
    for image in ("a", "b", "c", "d"):
        apply(workload("Deployment", replicas=1, image=image, revisionHistoryLimit=2))
        settle(clock)
        names.append(ClusterObject.objects.get(kind="ReplicaSet", replicas=1).name)
    # The current one and the two newest old ones: the first is gone.
    assert sorted(ClusterObject.objects.filter(kind="ReplicaSet").values_list("name", flat=True)) == sorted(names[1:])
    assert Pod.objects.get().manifest["spec"]["containers"][0]["image"] == "d"


def test_a_stateful_sets_new_template_replaces_its_pods_from_the_highest_ordinal_once_each_is_ready(clock):
    apply(node("a"), workload("StatefulSet", name="db", replicas=3))
    settle(clock)
    first = ClusterObject.objects.get(kind="StatefulSet").manifest["status"]
    assert first["currentRevision"] == first["updateRevision"] and first["readyReplicas"] == 3
    apply(workload("StatefulSet", name="db", replicas=3, image="postgres"))
    sts = ClusterObject.objects.get(kind="StatefulSet")
    assert statefulset.sync(sts)["deleted"] == ["db-2"]
    assert statefulset.sync(ClusterObject.objects.get(pk=sts.pk)) == {"created": ["db-2"], "deleted": []}
    # db-2 is back at the new revision but not yet bound: nothing more goes until it is Running and Ready.
    assert statefulset.sync(ClusterObject.objects.get(pk=sts.pk)) == {"created": [], "deleted": []}
    status = ClusterObject.objects.get(pk=sts.pk).manifest["status"]
    assert (status["currentRevision"], status["updatedReplicas"]) == (first["currentRevision"], 1)
    settle(clock)
    status = ClusterObject.objects.get(pk=sts.pk).manifest["status"]
    assert status["currentRevision"] == status["updateRevision"] != first["updateRevision"]
    assert (status["currentReplicas"], status["updatedReplicas"], status["readyReplicas"]) == (3, 3, 3)
    assert {p.manifest["spec"]["containers"][0]["image"] for p in Pod.objects.all()} == {"postgres"}
    assert [m for m in messages("StatefulSet", "db") if m.startswith("delete")] == [
        "delete Pod db-2 in StatefulSet db successful", "delete Pod db-1 in StatefulSet db successful",
        "delete Pod db-0 in StatefulSet db successful"]


def test_an_on_delete_stateful_set_keeps_its_pods_until_they_are_deleted(clock):
    apply(node("a"), workload("StatefulSet", name="db", replicas=2, updateStrategy={"type": "OnDelete"}))
    settle(clock)
    apply(workload("StatefulSet", name="db", replicas=2, image="postgres", updateStrategy={"type": "OnDelete"}))
    settle(clock)
    assert {p.manifest["spec"]["containers"][0]["image"] for p in Pod.objects.all()} == {"nginx"}
    pod_delete(namespace="default", name="db-1")
    settle(clock)
    assert {p.name: p.manifest["spec"]["containers"][0]["image"] for p in Pod.objects.all()} == {
        "db-0": "nginx", "db-1": "postgres"}
