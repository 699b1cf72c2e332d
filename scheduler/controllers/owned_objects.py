"""What a controller does to the objects (not pods) it owns: a Deployment's ReplicaSets. Found by the
controller reference's uid, created through the same decoding and apply as a user's object, scaled by
writing spec.replicas (as the scale subresource does)."""

from __future__ import annotations

from django.db import transaction

from ..cluster.services import cluster_apply
from ..manifests.errors import ManifestError
from ..manifests.objects import parse_object, problems_of
from ..models import ClusterObject
from .pods import controller_of


def owned_objects(owner: ClusterObject, kind: str) -> list[ClusterObject]:
    return [row for row in ClusterObject.objects.filter(kind=kind, namespace=owner.namespace)
            if (controller_of(row.manifest) or {}).get("uid") == owner.uid]


def create_object(manifest: dict) -> ClusterObject:
    """Refused (ManifestError) as `apply` would refuse it; nothing is created then."""
    o, parsed = parse_object(manifest, from_user=True)
    if parsed is None:
        raise ManifestError(problems_of(o, f"{manifest.get('kind', '').lower()}/{manifest['metadata']['name']}", 1))
    cluster_apply([parsed])
    meta = manifest["metadata"]
    return ClusterObject.objects.get(kind=manifest["kind"], namespace=meta.get("namespace", ""), name=meta["name"])


def set_replicas(*, kind: str, namespace: str, name: str, replicas: int,
                 annotations: dict | None = None) -> ClusterObject | None:
    """spec.replicas (and, for a Deployment's ReplicaSet, its annotations) written; None when there is no such
    object."""
    with transaction.atomic():
        row = ClusterObject.objects.select_for_update().filter(kind=kind, namespace=namespace, name=name).first()
        if row is None:
            return None
        manifest = dict(row.manifest)
        manifest["spec"] = {**(manifest.get("spec") or {}), "replicas": replicas}
        if annotations:
            meta = dict(manifest.get("metadata") or {})
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
            manifest["metadata"] = meta
        row.manifest, row.replicas = manifest, replicas
        row.save(update_fields=["manifest", "replicas", "updated_at"])
    return row
