"""The ReplicaSet controller (pkg/controller/replicaset): keep spec.replicas active pods, creating them from
the template (SuccessfulCreate "Created pod: NAME") or deleting the least useful first (SuccessfulDelete
"Deleted pod: NAME"), as manageReplicas and getPodsToDelete rank them. Upstream's ReplicationController
manager is this same controller run over ReplicationControllers (replication/replication_controller.go):
see replication.py."""

from __future__ import annotations

from ..manifests.errors import ManifestError
from ..models import REPLICA_SET, ClusterObject, Event
from ..state.events import events_record
from .pods import (OwnedPod, create_pods, delete_pods, generate_name, is_active, owned_pods, owner_event,
                   pod_from_template)

CONTROLLER = "replicaset-controller"


def _deletion_rank(pod: OwnedPod) -> tuple:
    """As ActivePodsWithRanks, simplified to what the simulation has: unassigned before assigned, pending
    before running, then the newest first."""
    return (bool(pod.node_name), pod.phase == "Running", -pod.created_at.timestamp())


def sync(rs: ClusterObject, controller: str = CONTROLLER) -> dict:
    """One syncReplicaSet: the pods created and deleted (names)."""
    pods = [p for p in owned_pods(rs) if is_active(p)]
    want = rs.replicas if rs.replicas is not None else 1
    diff = want - len(pods)
    created, deleted = [], []
    if diff > 0:
        prefix = f"{rs.name}-"
        manifests = [pod_from_template(rs, generate_name(prefix), generate_name=prefix) for _ in range(diff)]
        try:
            create_pods(rs, manifests)
        except ManifestError as e:
            # As FailedCreate: the template is refused; say why on the ReplicaSet and try again next sync.
            events_record([owner_event(rs, "FailedCreate", f"Error creating: {e.problems[0]}", controller,
                                       Event.WARNING)])
            return {"created": [], "deleted": [], "error": str(e.problems[0])}
        created = [m["metadata"]["name"] for m in manifests]
        events_record([owner_event(rs, "SuccessfulCreate", f"Created pod: {name}", controller) for name in created])
    elif diff < 0:
        deleted = delete_pods(sorted(pods, key=_deletion_rank)[:-diff])
        events_record([owner_event(rs, "SuccessfulDelete", f"Deleted pod: {name}", controller) for name in deleted])
    return {"created": created, "deleted": deleted}


def sync_kind(kind: str, controller: str) -> dict:
    out = {}
    for rs in ClusterObject.objects.filter(kind=kind):
        result = sync(rs, controller)
        if result["created"] or result["deleted"] or result.get("error"):
            out[f"{rs.namespace}/{rs.name}"] = result
    return out


def sync_all() -> dict:
    return sync_kind(REPLICA_SET, CONTROLLER)

