"""What a controller does to the objects (not pods) it owns or reports on: a Deployment's ReplicaSets found by
the controller reference's uid (and claimed: claims.py), created through the same decoding and apply as a
user's object, changed in place (spec.replicas as the scale subresource writes it, annotations, the
controller's `status`). A change of the spec bumps metadata.generation, as the API server does; the status
records the generation it saw (observedGeneration)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

from django.db import transaction

from ..cluster.services import cluster_apply
from ..manifests.errors import ManifestError
from ..manifests.objects import parse_object, problems_of
from ..models import ClusterObject
from .claims import adopting, claim, patch_object_owners, releasing, selector_of
from .pods import controller_of


def generation(obj: ClusterObject) -> int:
    return int((obj.manifest.get("metadata") or {}).get("generation") or 1)


def status_of(obj: ClusterObject) -> dict:
    status = obj.manifest.get("status")
    return status if isinstance(status, dict) else {}


@dataclass
class OwnedObject:
    """A ClusterObject as claims.py reads it."""

    row: ClusterObject

    @property
    def namespace(self) -> str:
        return self.row.namespace

    @property
    def name(self) -> str:
        return self.row.name

    @property
    def uid(self) -> str:
        return self.row.uid

    @property
    def labels(self) -> dict:
        return (self.row.manifest.get("metadata") or {}).get("labels") or {}

    @property
    def deleting(self) -> bool:
        return bool((self.row.manifest.get("metadata") or {}).get("deletionTimestamp"))

    @property
    def controller_uid(self) -> str:
        return (controller_of(self.row.manifest) or {}).get("uid") or ""

    @controller_uid.setter
    def controller_uid(self, value: str) -> None:
        pass  # the row is re-read by the caller after an adoption


def owned_objects(owner: ClusterObject, kind: str) -> list[ClusterObject]:
    return [row for row in ClusterObject.objects.filter(kind=kind, namespace=owner.namespace)
            if (controller_of(row.manifest) or {}).get("uid") == owner.uid]


def claimed_objects(owner: ClusterObject, kind: str) -> list[ClusterObject]:
    """As getReplicaSetsForDeployment: the owner's objects of `kind` after adoption and release by its selector."""
    selector = selector_of(owner)
    candidates = [OwnedObject(row) for row in ClusterObject.objects.filter(kind=kind, namespace=owner.namespace)]
    claimed = claim(owner, candidates, matches=lambda o: selector.matches(o.labels),
                    adopt=lambda o: patch_object_owners(kind, o, adopting(owner)),
                    release=lambda o: patch_object_owners(kind, o, releasing(owner)))
    names = {o.name for o in claimed}
    # Re-read: an adopted object's row now carries the owner reference.
    return [row for row in ClusterObject.objects.filter(kind=kind, namespace=owner.namespace, name__in=names)]


def create_object(manifest: dict) -> ClusterObject:
    """Refused (ManifestError) as `apply` would refuse it; nothing is created then."""
    o, parsed = parse_object(manifest, from_user=True)
    if parsed is None:
        raise ManifestError(problems_of(o, f"{manifest.get('kind', '').lower()}/{manifest['metadata']['name']}", 1))
    cluster_apply([parsed])
    meta = manifest["metadata"]
    return ClusterObject.objects.get(kind=manifest["kind"], namespace=meta.get("namespace", ""), name=meta["name"])


def update_object(*, kind: str, namespace: str, name: str, uid: str | None = None,
                  mutate: Callable[[dict], None]) -> ClusterObject | None:
    """The stored manifest changed by `mutate(manifest)` (spec, metadata or status); the spec's change bumps
    metadata.generation and keeps the replicas column in step. None when the object is gone (or, given `uid`,
    replaced)."""
    with transaction.atomic():
        row = ClusterObject.objects.select_for_update().filter(kind=kind, namespace=namespace, name=name).first()
        if row is None or (uid is not None and row.uid != uid):
            return None
        manifest = copy.deepcopy(row.manifest)
        mutate(manifest)
        if manifest == row.manifest:
            return row
        if manifest.get("spec") != row.manifest.get("spec"):
            meta = manifest.setdefault("metadata", {})
            meta["generation"] = generation(row) + 1
        spec = manifest.get("spec") or {}
        if isinstance(spec.get("replicas"), int):
            row.replicas = spec["replicas"]
        row.manifest = manifest
        row.save(update_fields=["manifest", "replicas", "updated_at"])
    return row


def set_replicas(*, kind: str, namespace: str, name: str, replicas: int,
                 annotations: dict | None = None) -> ClusterObject | None:
    """spec.replicas (and, for a Deployment's ReplicaSet, its annotations) written; None when there is no such
    object."""
    def mutate(manifest: dict) -> None:
        manifest["spec"] = {**(manifest.get("spec") or {}), "replicas": replicas}
        if annotations:
            meta = manifest.setdefault("metadata", {})
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    row = update_object(kind=kind, namespace=namespace, name=name, mutate=mutate)
    if row is not None:
        row.replicas = replicas
    return row


def write_status(obj: ClusterObject, status: dict) -> ClusterObject:
    """The controller's status written when it changed (as UpdateStatus: the spec is left alone)."""
    if status_of(obj) == status:
        return obj

    def mutate(manifest: dict) -> None:
        manifest["status"] = status
    return update_object(kind=obj.kind, namespace=obj.namespace, name=obj.name, uid=obj.uid, mutate=mutate) or obj
