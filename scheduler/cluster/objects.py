"""Apply and delete Namespaces, Services, ReplicaSets, StatefulSets and ReplicationControllers (the
ClusterObject table): what the scheduler's snapshot reads for namespaceSelector and default spreading."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.utils import timezone

from ..manifests.cluster_objects import KINDS, ParsedObject
from ..models import ClusterObject

# As kubectl names a resource in its output ("replicaset.apps/web created").
_RESOURCE = {"Namespace": "namespace", "Service": "service", "ReplicationController": "replicationcontroller",
             "ReplicaSet": "replicaset.apps", "StatefulSet": "statefulset.apps",
             "Deployment": "deployment.apps"}


def resource_name(kind: str) -> str:
    return _RESOURCE.get(kind, kind.lower())


def cluster_object_apply(parsed: ParsedObject, result) -> None:
    """Create or update one object (in the caller's transaction); recorded in `result` as kubectl says it."""
    meta = parsed.manifest.setdefault("metadata", {})
    row = (ClusterObject.objects.select_for_update()
           .filter(kind=parsed.kind, namespace=parsed.namespace, name=parsed.name).first())
    label = f"{resource_name(parsed.kind)}/{parsed.name}"
    if KINDS[parsed.kind][1]:
        meta["namespace"] = parsed.namespace
    if row is None:
        meta["uid"] = parsed.uid or str(uuid.uuid4())
        meta.setdefault("creationTimestamp", timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ"))
        ClusterObject.objects.create(kind=parsed.kind, namespace=parsed.namespace, name=parsed.name, uid=meta["uid"],
                                     labels=parsed.labels, selector=parsed.selector, replicas=parsed.replicas,
                                     manifest=parsed.manifest)
        result.created.append(label)
        result.statuses[(parsed.kind, parsed.namespace, parsed.name)] = "created"
        return
    meta["uid"] = row.uid
    meta["creationTimestamp"] = (row.manifest.get("metadata") or {}).get("creationTimestamp")
    if row.manifest == parsed.manifest:
        result.unchanged.append(label)
        result.statuses[(parsed.kind, parsed.namespace, parsed.name)] = "unchanged"
        return
    row.labels, row.selector, row.replicas, row.manifest = parsed.labels, parsed.selector, parsed.replicas, parsed.manifest
    row.save()
    result.configured.append(label)
    result.statuses[(parsed.kind, parsed.namespace, parsed.name)] = "configured"


def cluster_object_delete(*, kind: str, namespace: str, name: str) -> bool:
    with transaction.atomic():
        deleted, _ = ClusterObject.objects.filter(kind=kind, namespace=namespace if KINDS[kind][1] else "",
                                                  name=name).delete()
    return deleted > 0


def cluster_object_upsert_mirrored(*, kind: str, namespace: str, name: str, uid: str, labels: dict,
                                   selector, replicas, manifest: dict) -> None:
    """As the kubernetes mirror sees an object: stored as the API server has it (no checks of ours)."""
    ClusterObject.objects.update_or_create(
        kind=kind, namespace=namespace, name=name,
        defaults={"uid": uid, "labels": labels, "selector": selector, "replicas": replicas, "manifest": manifest})
