"""The Deployment controller (pkg/controller/deployment): a Deployment owns ReplicaSets named
<deployment>-<pod-template-hash>, the hash also added to the ReplicaSet's labels, selector and pod template
(so its pods carry it), with the revision/desired-replicas/max-replicas annotations. Scaling the
ReplicaSets is announced on the Deployment as ScalingReplicaSet "Scaled up|down replica set NAME from A
to B"; the ReplicaSet controller then makes the pods.

Every strategy acts as Recreate here (rolloutRecreate): on a template change the old ReplicaSets are
scaled to 0 first, and the new one is scaled up once their pods are gone. RollingUpdate's maxSurge and
maxUnavailable steps are not modelled (the scheduler sees the same pods at the end). Old ReplicaSets past
spec.revisionHistoryLimit are deleted as upstream's cleanup does."""

from __future__ import annotations

import copy

from ..cluster.objects import cluster_object_delete
from ..manifests.errors import ManifestError
from ..models import DEPLOYMENT, REPLICA_SET, ClusterObject, Event
from ..state.events import events_record
from .hashing import template_hash
from .owned_objects import create_object, owned_objects, set_replicas
from .pods import is_active, owned_pods, owner_event, owner_reference, template

CONTROLLER = "deployment-controller"
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
DEFAULT_REVISION_HISTORY_LIMIT = 10


def _rs_hash(rs: ClusterObject) -> str:
    tmpl = (rs.manifest.get("spec") or {}).get("template") or {}
    return ((tmpl.get("metadata") or {}).get("labels") or {}).get(HASH_LABEL, "")


def _revision(rs: ClusterObject) -> int:
    try:
        return int(((rs.manifest.get("metadata") or {}).get("annotations") or {}).get(REVISION, 0))
    except (TypeError, ValueError):
        return 0


def new_replica_set_manifest(d: ClusterObject, pod_hash: str, replicas: int, revision: int) -> dict:
    """As getNewReplicaSet builds it: the template with the hash label, the selector with it too."""
    tmpl = template(d)
    meta = tmpl.setdefault("metadata", {})
    labels = {**(meta.get("labels") or {}), HASH_LABEL: pod_hash}
    meta["labels"] = labels
    selector = copy.deepcopy((d.manifest.get("spec") or {}).get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: pod_hash}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{d.name}-{pod_hash}", "namespace": d.namespace, "labels": dict(labels),
                         "annotations": {DESIRED_REPLICAS: str(replicas), MAX_REPLICAS: str(replicas),
                                         REVISION: str(revision)},
                         "ownerReferences": [owner_reference(d)]},
            "spec": {"replicas": replicas, "selector": selector, "template": tmpl}}


def _scaled(d: ClusterObject, rs_name: str, old: int, new: int):
    direction = "up" if new > old else "down"
    return owner_event(d, "ScalingReplicaSet", f"Scaled {direction} replica set {rs_name} from {old} to {new}",
                       CONTROLLER)


def sync(d: ClusterObject) -> dict:
    """One syncDeployment (Recreate): the ReplicaSets scaled, name -> (from, to)."""
    want = d.replicas if d.replicas is not None else 1
    pod_hash = template_hash(template(d))
    rses = owned_objects(d, REPLICA_SET)
    new = next((rs for rs in rses if _rs_hash(rs) == pod_hash), None)
    old = [rs for rs in rses if rs is not new]
    scaled, events = {}, []
    for rs in old:
        if rs.replicas:
            set_replicas(kind=REPLICA_SET, namespace=rs.namespace, name=rs.name, replicas=0)
            scaled[rs.name] = (rs.replicas, 0)
            events.append(_scaled(d, rs.name, rs.replicas, 0))
    # Recreate: the new pods only once every old one is gone (oldPodsRunning).
    waiting = bool(scaled) or any(is_active(p) for rs in old for p in owned_pods(rs))
    if not waiting:
        annotations = {DESIRED_REPLICAS: str(want), MAX_REPLICAS: str(want)}
        if new is None:
            revision = max((_revision(rs) for rs in old), default=0) + 1
            try:
                create_object(new_replica_set_manifest(d, pod_hash, want, revision))
            except ManifestError as e:
                events_record(events + [owner_event(d, "FailedCreate", f"Failed to create new replica set: "
                                                    f"{e.problems[0]}", CONTROLLER, Event.WARNING)])
                return {"scaled": scaled, "error": str(e.problems[0])}
            if want > 0:
                scaled[f"{d.name}-{pod_hash}"] = (0, want)
                events.append(_scaled(d, f"{d.name}-{pod_hash}", 0, want))
        elif new.replicas != want:
            set_replicas(kind=REPLICA_SET, namespace=new.namespace, name=new.name, replicas=want,
                         annotations=annotations)
            scaled[new.name] = (new.replicas or 0, want)
            events.append(_scaled(d, new.name, new.replicas or 0, want))
    events_record(events)
    _clean_up(d, [rs for rs in old if rs.name not in scaled])
    return {"scaled": scaled}


def _clean_up(d: ClusterObject, old: list[ClusterObject]) -> None:
    """As cleanupDeployment: old ReplicaSets at 0 with no pods left, past spec.revisionHistoryLimit (10), are
    deleted, the lowest revisions first."""
    limit = (d.manifest.get("spec") or {}).get("revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        limit = DEFAULT_REVISION_HISTORY_LIMIT
    idle = sorted((rs for rs in old if not rs.replicas and not owned_pods(rs)), key=lambda rs: (_revision(rs), rs.name))
    for rs in idle[:max(0, len(idle) - limit)]:
        cluster_object_delete(kind=REPLICA_SET, namespace=rs.namespace, name=rs.name)


def sync_all() -> dict:
    out = {}
    for d in ClusterObject.objects.filter(kind=DEPLOYMENT):
        result = sync(d)
        if result["scaled"] or result.get("error"):
            out[f"{d.namespace}/{d.name}"] = result
    return out
