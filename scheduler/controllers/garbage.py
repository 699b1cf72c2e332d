"""Deleting a workload as kubectl delete does by default (propagationPolicy Background): the object goes at
once, then the garbage collector (pkg/controller/garbagecollector) deletes its dependents, the objects
and pods whose owner reference names its uid (a Deployment's ReplicaSets, and in turn their pods)."""

from __future__ import annotations

from ..cluster.objects import cluster_object_delete
from ..cluster.services import pod_delete
from ..manifests.cluster_objects import KINDS
from ..models import ClusterObject, Pod

CONTROLLER = "garbage-collector"


def _owned_by(manifest: dict, uid: str) -> bool:
    return any(isinstance(ref, dict) and ref.get("uid") == uid
               for ref in (manifest.get("metadata") or {}).get("ownerReferences") or ())


def delete_with_dependents(*, kind: str, namespace: str, name: str) -> bool:
    """False when there is no such object; else it and (recursively) its dependents are deleted."""
    ns = namespace if KINDS[kind][1] else ""
    row = ClusterObject.objects.filter(kind=kind, namespace=ns, name=name).first()
    if row is None or not cluster_object_delete(kind=kind, namespace=ns, name=name):
        return False
    if row.uid:
        for dependent in ClusterObject.objects.filter(namespace=row.namespace).exclude(kind="Namespace"):
            if _owned_by(dependent.manifest, row.uid):
                delete_with_dependents(kind=dependent.kind, namespace=dependent.namespace, name=dependent.name)
        for pod_ns, pod_name, manifest in Pod.objects.filter(namespace=row.namespace).values_list(
                "namespace", "name", "manifest"):
            if _owned_by(manifest, row.uid):
                pod_delete(namespace=pod_ns, name=pod_name)
    return True
