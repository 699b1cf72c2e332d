"""Adoption and release as upstream's ControllerRefManager (pkg/controller/controller_ref_manager.go): a
controller claims the objects its selector matches. One it controls and that still matches is its own; one
it controls that no longer matches (its labels changed) is released (its owner reference removed); an
orphan (no controller reference) of its namespace that matches and is not being deleted is adopted (the
controller's reference added, as the strategic-merge patch AdoptPod sends); one another controller owns is
left alone. Adoption first checks that the controller itself is still there under its uid
(RecheckDeletionTimestamp), and a pod adopted by someone else in the meantime is not taken twice (the API
server refuses a second controller reference)."""

from __future__ import annotations

import copy
from typing import Callable, Protocol

from django.db import transaction

from ..engine.labels import NOTHING, SelectorError, Selector, as_selector, selector_from_set
from ..manifests.stored import label_selector
from ..models import REPLICATION_CONTROLLER, ClusterObject, Pod
from .pods import owner_reference


class Claimable(Protocol):
    namespace: str
    name: str
    uid: str
    labels: dict
    controller_uid: str
    deleting: bool


def selector_of(owner: ClusterObject) -> Selector:
    """The owner's selector compiled: a ReplicationController's map (empty: nothing, as its validation
    refuses one), a LabelSelector otherwise (nil: nothing; one upstream could not compile: nothing)."""
    raw = owner.selector
    if owner.kind == REPLICATION_CONTROLLER:
        return selector_from_set(raw) if isinstance(raw, dict) and raw else NOTHING
    try:
        return as_selector(label_selector(raw) if isinstance(raw, dict) else None)
    except SelectorError:
        return NOTHING


def claim(owner: ClusterObject, candidates: list, *, matches: Callable[[Claimable], bool],
          adopt: Callable[[Claimable], bool], release: Callable[[Claimable], bool]) -> list:
    """ClaimObject over each candidate: those the owner controls once done (adopted ones included)."""
    claimed = []
    fresh: list[bool] = []  # the owner re-read once, at the first adoption

    def can_adopt() -> bool:
        if not fresh:
            fresh.append(ClusterObject.objects.filter(kind=owner.kind, namespace=owner.namespace, name=owner.name,
                                                      uid=owner.uid).exists())
        return fresh[0]

    for obj in candidates:
        if obj.controller_uid:
            if obj.controller_uid != owner.uid:
                continue  # another controller's
            if matches(obj):
                claimed.append(obj)
            else:
                release(obj)
            continue
        if not matches(obj) or obj.deleting or obj.namespace != owner.namespace:
            continue
        if can_adopt() and adopt(obj):
            obj.controller_uid = owner.uid
            claimed.append(obj)
    return claimed


def _with_refs(manifest: dict, change: Callable[[list[dict]], list[dict] | None]) -> dict | None:
    manifest = copy.deepcopy(manifest)
    meta = manifest.setdefault("metadata", {})
    refs = change([r for r in meta.get("ownerReferences") or () if isinstance(r, dict)])
    if refs is None:
        return None
    if refs:
        meta["ownerReferences"] = refs
    else:
        meta.pop("ownerReferences", None)
    return manifest


def adopting(owner: ClusterObject) -> Callable[[list[dict]], list[dict] | None]:
    def change(refs: list[dict]) -> list[dict] | None:
        if any(r.get("controller") for r in refs):
            return None  # claimed by another controller since it was read
        return [r for r in refs if r.get("uid") != owner.uid] + [owner_reference(owner)]
    return change


def releasing(owner: ClusterObject) -> Callable[[list[dict]], list[dict] | None]:
    def change(refs: list[dict]) -> list[dict] | None:
        kept = [r for r in refs if r.get("uid") != owner.uid]
        return None if len(kept) == len(refs) else kept
    return change


def patch_pod_owners(obj: Claimable, change: Callable[[list[dict]], list[dict] | None]) -> bool:
    """The pod's ownerReferences changed, with its uid as the precondition; False when it is gone, replaced, or the
    change no longer applies."""
    with transaction.atomic():
        row = Pod.objects.select_for_update().filter(namespace=obj.namespace, name=obj.name).first()
        if row is None or row.uid != obj.uid:
            return False
        manifest = _with_refs(row.manifest, change)
        if manifest is None:
            return False
        Pod.objects.filter(pk=row.pk).update(manifest=manifest)
    return True


def patch_object_owners(kind: str, obj: Claimable, change: Callable[[list[dict]], list[dict] | None]) -> bool:
    """As patch_pod_owners, for a ReplicaSet a Deployment claims."""
    with transaction.atomic():
        row = ClusterObject.objects.select_for_update().filter(kind=kind, namespace=obj.namespace,
                                                               name=obj.name).first()
        if row is None or row.uid != obj.uid:
            return False
        manifest = _with_refs(row.manifest, change)
        if manifest is None:
            return False
        row.manifest = manifest
        row.save(update_fields=["manifest", "updated_at"])
    return True


def claim_pods(owner: ClusterObject, pods: list, matches: Callable[[Claimable], bool]) -> list:
    return claim(owner, pods, matches=matches, adopt=lambda p: patch_pod_owners(p, adopting(owner)),
                 release=lambda p: patch_pod_owners(p, releasing(owner)))
