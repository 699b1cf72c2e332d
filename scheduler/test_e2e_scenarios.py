"""Each shipped scenario played on the real stack: Celery worker processes (and beat) scheduling on Postgres
and Redis, the scenario ticking the control plane on its clock (--time-scale, so a 300 s toleration runs
out in seconds). The end state is checked as a user would: no pod on a missing node or on a node NotReady
past its pods' toleration, every Deployment/ReplicaSet/StatefulSet/ReplicationController at its count and
scheduled, no node over allocatable, no pod bound twice, and the events `kubectl describe` would show."""

from pathlib import Path

import pytest
from django.db.models import Count, Sum

from scheduler.controllers import workloads
from scheduler.controllers.deployment import HASH_LABEL
from scheduler.controllers.hashing import template_hash
from scheduler.controllers.node_lifecycle import ready_status
from scheduler.controllers.pods import is_active, owned_pods, template
from scheduler.controllers.scenario.runner import play
from scheduler.controllers.scenario.spec import load
from scheduler.models import Binding, ClusterObject, DeletedPod, Event, Node, Pod
from scheduler.testing.e2e import wait_for_workers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
TIME_SCALE = 30  # scenario seconds per wall second: node-loss's 6m30s in 13 s


def run(workers, name):
    workers(2)
    results = play(load(str(SCENARIOS / f"{name}.yaml")), time_scale=TIME_SCALE)
    failed = [(r.step.describe(), r.lines) for r in results if not r.ok]
    assert not failed
    # What beat's workloads task and the workers do after the last step: settle.
    wait_for_workers(lambda: not workloads.sync_all() and not Pod.objects.filter(node_name="").exists(),
                     "every workload at its count and every pod bound", timeout=120)
    assert_end_state()


def assert_end_state():
    nodes = {n.name: n for n in Node.objects.all()}
    pods = list(Pod.objects.all())
    for p in pods:
        assert p.node_name in nodes, f"{p.key} on missing node {p.node_name!r}"
        # Every scenario runs past the 300 s toleration of its last failure: a NotReady node is empty.
        assert ready_status(nodes[p.node_name].manifest) == "True", f"{p.key} on NotReady node {p.node_name}"
        assert Event.objects.filter(involved_name=p.name, reason="Scheduled",
                                    message__startswith=f"Successfully assigned {p.key} to {p.node_name}").exists()
    # Counts: each controller's active pods are its replicas, all bound.
    for obj in ClusterObject.objects.filter(kind__in=["ReplicaSet", "ReplicationController", "StatefulSet"]):
        active = [p for p in owned_pods(obj) if is_active(p)]
        assert len(active) == obj.replicas, f"{obj} has {len(active)} pods, wants {obj.replicas}"
        if obj.kind == "StatefulSet":
            assert sorted(p.name for p in active) == sorted(f"{obj.name}-{i}" for i in range(obj.replicas))
    for d in ClusterObject.objects.filter(kind="Deployment"):
        current = ClusterObject.objects.get(kind="ReplicaSet", name=f"{d.name}-{template_hash(template(d))}")
        assert current.replicas == d.replicas
        assert all(rs.replicas == 0 for rs in ClusterObject.objects.filter(kind="ReplicaSet",
                                                                          labels__has_key=HASH_LABEL)
                   .exclude(pk=current.pk) if rs.name.startswith(f"{d.name}-"))
    # No node over allocatable; each node's counters are what its pods request; no pod bound twice.
    per_node = {r["node_name"]: r for r in Pod.objects.values("node_name").annotate(
        cpu=Sum("req_cpu"), mem=Sum("req_memory"), n=Count("id"))}
    for n in nodes.values():
        row = per_node.get(n.name, {"cpu": 0, "mem": 0, "n": 0})
        assert (n.req_cpu, n.req_memory, n.req_pods) == (row["cpu"] or 0, row["mem"] or 0, row["n"]), n.name
        assert n.req_cpu <= n.alloc_cpu and n.req_memory <= n.alloc_memory and n.req_pods <= n.alloc_pods, n.name
    assert not Binding.objects.values("pod_uid").annotate(n=Count("id")).filter(n__gt=1).exists()


def deleted(reason, node=None):
    """Pods that went with this DisruptionTarget reason (the row kept at their deletion)."""
    out = []
    for d in DeletedPod.objects.all():
        conditions = (d.manifest.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "DisruptionTarget" and c.get("reason") == reason for c in conditions):
            if node is None or d.node_name == node:
                out.append(d)
    return out


def replaced(gone):
    """Each gone pod's owner created another pod after it went (SuccessfulCreate, as describe shows it)."""
    for d in gone:
        ref = next(r for r in d.manifest["metadata"]["ownerReferences"] if r.get("controller"))
        events = Event.objects.filter(involved_kind=ref["kind"], involved_name=ref["name"], reason="SuccessfulCreate",
                                      last_timestamp__gte=d.deleted_at)
        assert events.exists(), f"nothing replaced {d.namespace}/{d.name} ({ref['kind']}/{ref['name']})"


def test_node_loss_evicts_past_the_toleration_collects_the_orphans_and_recreates_every_pod(workers):
    run(workers, "node-loss")
    evicted = deleted("DeletionByTaintManager", "zone-a-0")
    orphaned = deleted("DeletionByPodGC", "zone-b-0")
    assert evicted and orphaned
    for d in evicted:
        assert Event.objects.filter(reason="TaintManagerEviction", involved_name=d.name,
                                    message=f"Marking for deletion Pod {d.namespace}/{d.name}").exists()
        assert d.manifest["status"]["conditions"][-1]["message"] == "Taint manager: deleting due to NoExecute taint"
    replaced(evicted + orphaned)
    assert {"node.kubernetes.io/not-ready"} <= {t["key"] for t in Node.objects.get(name="zone-a-0").manifest["spec"]["taints"]}
    assert Pod.objects.filter(name__startswith="web-").count() == 9
    rs = ClusterObject.objects.get(kind="ReplicaSet", name__startswith="web-")
    assert Event.objects.filter(involved_kind="Deployment", involved_name="web", reason="ScalingReplicaSet",
                                message=f"Scaled up replica set {rs.name} to 9 from 6").exists()


def test_zone_outage_moves_the_zones_pods_out_and_the_recovered_zone_takes_new_ones(workers):
    run(workers, "zone-outage")
    evicted = [d for z in ("zone-a-0", "zone-a-1", "zone-a-2") for d in deleted("DeletionByTaintManager", z)]
    assert len(evicted) >= 3
    replaced(evicted)
    assert all(ready_status(n.manifest) == "True" and not n.manifest["spec"].get("taints")
               for n in Node.objects.filter(name__startswith="zone-a-"))
    assert Event.objects.filter(involved_kind="StatefulSet", involved_name="db",
                                message="create Pod db-3 in StatefulSet db successful").exists()
    assert Pod.objects.filter(name__startswith="web-").count() == 12


def test_rolling_drain_evicts_through_the_eviction_api_node_by_node_and_uncordons_them(workers):
    run(workers, "rolling-drain")
    gone = [d for n in ("zone-a-0", "zone-b-0", "zone-c-0") for d in deleted("EvictionByEvictionAPI", n)]
    assert gone
    replaced(gone)
    assert not Node.objects.filter(unschedulable=True).exists()


def test_an_unschedulable_burst_waits_then_binds_on_the_new_node_and_scales_down_unbound_first(workers):
    run(workers, "unschedulable-burst")
    burst = ClusterObject.objects.get(kind="ReplicaSet", name__startswith="burst-")
    assert Pod.objects.filter(name__startswith=f"{burst.name}-").count() == 30
    assert Event.objects.filter(reason="FailedScheduling", involved_name__startswith=f"{burst.name}-",
                                message__contains="Insufficient cpu").exists()
    assert Pod.objects.filter(node_name="zone-d-0").exists()
    assert Event.objects.filter(involved_kind="Deployment", involved_name="burst",
                                message=f"Scaled down replica set {burst.name} to 30 from 40").exists()


def test_a_rolling_update_replaces_every_pod_a_few_at_a_time_and_keeps_the_old_replica_set_as_history(workers):
    run(workers, "rolling-update")
    d = ClusterObject.objects.get(kind="Deployment", name="web")
    new = ClusterObject.objects.get(kind="ReplicaSet", name=f"web-{template_hash(template(d))}")
    old = ClusterObject.objects.filter(kind="ReplicaSet", name__startswith="web-").exclude(pk=new.pk).get()
    assert (old.replicas, new.replicas) == (0, 6)
    assert {p.manifest["spec"]["containers"][0]["image"] for p in Pod.objects.filter(name__startswith="web-")} == {
        "nginx:1.28"}
    assert d.manifest["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert old.manifest["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    progressing = [c for c in d.manifest["status"]["conditions"] if c["type"] == "Progressing"][0]
    assert (progressing["reason"], progressing["message"]) == (
        "NewReplicaSetAvailable", f'ReplicaSet "{new.name}" has successfully progressed.')
    scaling = [e.message for e in Event.objects.filter(involved_kind="Deployment", involved_name="web",
                                                       reason="ScalingReplicaSet").order_by("id")]
    # maxSurge 2: the new set starts at 2 (8 pods at most); the old one goes down in steps, never at once.
    assert f"Scaled up replica set {new.name} to 2" in scaling
    downs = [m for m in scaling if m.startswith(f"Scaled down replica set {old.name}")]
    assert len(downs) >= 2 and downs[-1].startswith(f"Scaled down replica set {old.name} to 0 from")
    # Every web pod the old set lost was deleted by its controller (scaled down), none evicted.
    assert not deleted("DeletionByTaintManager") and not deleted("EvictionByEvictionAPI")
    sts = ClusterObject.objects.get(kind="StatefulSet", name="db")
    status = sts.manifest["status"]
    assert status["currentRevision"] == status["updateRevision"] and status["updatedReplicas"] == 3
    assert {p.manifest["metadata"]["labels"]["controller-revision-hash"] for p in Pod.objects.filter(
        name__startswith="db-")} == {status["updateRevision"]}
    assert [e.message for e in Event.objects.filter(involved_kind="StatefulSet", reason="SuccessfulDelete")
            .order_by("id")] == [f"delete Pod db-{i} in StatefulSet db successful" for i in (2, 1, 0)]
