"""Apply and delete Namespaces, Services, ReplicaSets, StatefulSets and ReplicationControllers (the
ClusterObject table): what the scheduler's snapshot reads for namespaceSelector and default spreading."""

from __future__ import annotations

import json
import uuid

from django.db import transaction
from django.utils import timezone

from ..manifests.cluster_objects import KINDS, POD_DISRUPTION_BUDGET, PRIORITY_CLASS, ParsedObject
from ..manifests.errors import ManifestError, Problem
from ..manifests.priority import SYSTEM_CLASSES, priority_class_info, system_class_manifest
from ..models import ClusterObject

# As kubectl names a resource in its output ("replicaset.apps/web created").
_RESOURCE = {"Namespace": "namespace", "Service": "service", "ReplicationController": "replicationcontroller",
             "ReplicaSet": "replicaset.apps", "StatefulSet": "statefulset.apps",
             "Deployment": "deployment.apps"}
# ---- preemption's kinds ----
_RESOURCE.update({"PriorityClass": "priorityclass.scheduling.k8s.io", "PodDisruptionBudget": "poddisruptionbudget.policy"})
# ---- end of preemption's kinds ----


def resource_name(kind: str) -> str:
    return _RESOURCE.get(kind, kind.lower())


def _admit(parsed: ParsedObject) -> None:
    """What the API server's admission refuses of a PriorityClass (in the caller's transaction): a second
    globalDefault class (plugin/pkg/admission/priority's validatePriorityClass)."""
    if parsed.kind != PRIORITY_CLASS:
        return
    file, doc, prefix = parsed.origin

    def refuse(path: str, message: str):
        raise ManifestError([Problem(file, doc, parsed.kind, parsed.name, f"{prefix}.{path}" if prefix else path, message)])

    old = ClusterObject.objects.filter(kind=PRIORITY_CLASS, name=parsed.name).values_list("manifest", flat=True).first()
    if old is not None:
        # As ValidatePriorityClassUpdate: the value and the policy are fixed once the class exists.
        if (old.get("value") or 0) != (parsed.manifest.get("value") or 0):
            refuse("value", "Forbidden: may not be changed in an update.")
        if old.get("preemptionPolicy") != parsed.manifest.get("preemptionPolicy"):
            refuse("preemptionPolicy", f"Invalid value: {json.dumps(parsed.manifest.get('preemptionPolicy'))}: "
                                       "field is immutable")
    if not parsed.manifest.get("globalDefault"):
        return
    for other in ClusterObject.objects.filter(kind=PRIORITY_CLASS).exclude(name=parsed.name):
        if other.manifest.get("globalDefault"):
            refuse("globalDefault", f"Forbidden: PriorityClass {other.name} is already marked as default. "
                                    "Only one default can exist")


# The kinds the workload controllers keep a status and a generation on (as the API server's strategies for
# them: metadata.generation 1 at creation, bumped by a change of the spec; the status is the controller's).
WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController")
# What the Deployment controller writes on a Deployment's metadata: kept when a file without it is applied
# again (as kubectl apply's merge keeps what its last applied configuration did not set).
CONTROLLER_ANNOTATIONS = {"Deployment": ("deployment.kubernetes.io/revision",)}


def _workload_update(parsed: ParsedObject, old: dict) -> None:
    meta, old_meta = parsed.manifest.setdefault("metadata", {}), old.get("metadata") or {}
    annotations = dict(meta.get("annotations") or {})
    for key in CONTROLLER_ANNOTATIONS.get(parsed.kind, ()):
        if key in (old_meta.get("annotations") or {}) and key not in annotations:
            annotations[key] = old_meta["annotations"][key]
    if annotations:
        meta["annotations"] = annotations
    if "status" in old:
        parsed.manifest["status"] = old["status"]
    else:
        parsed.manifest.pop("status", None)
    generation = int(old_meta.get("generation") or 1)
    # A Deployment's annotations bump it too: they are copied to its ReplicaSets (deployment's PrepareForUpdate).
    changed = parsed.manifest.get("spec") != old.get("spec") or (
        parsed.kind == "Deployment" and annotations != (old_meta.get("annotations") or {}))
    meta["generation"] = generation + 1 if changed else generation


def cluster_object_apply(parsed: ParsedObject, result) -> None:
    """Create or update one object (in the caller's transaction); recorded in `result` as kubectl says it."""
    _admit(parsed)
    meta = parsed.manifest.setdefault("metadata", {})
    row = (ClusterObject.objects.select_for_update()
           .filter(kind=parsed.kind, namespace=parsed.namespace, name=parsed.name).first())
    label = f"{resource_name(parsed.kind)}/{parsed.name}"
    if KINDS[parsed.kind][1]:
        meta["namespace"] = parsed.namespace
    if row is None:
        meta["uid"] = parsed.uid or str(uuid.uuid4())
        meta.setdefault("creationTimestamp", timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ"))
        if parsed.kind in WORKLOAD_KINDS:
            meta["generation"] = 1
            parsed.manifest.pop("status", None)  # the controller's to write (PrepareForCreate)
        ClusterObject.objects.create(kind=parsed.kind, namespace=parsed.namespace, name=parsed.name, uid=meta["uid"],
                                     labels=parsed.labels, selector=parsed.selector, replicas=parsed.replicas,
                                     manifest=parsed.manifest)
        result.created.append(label)
        result.statuses[(parsed.kind, parsed.namespace, parsed.name)] = "created"
        return
    meta["uid"] = row.uid
    meta["creationTimestamp"] = (row.manifest.get("metadata") or {}).get("creationTimestamp")
    if parsed.kind == POD_DISRUPTION_BUDGET and "status" in row.manifest:
        parsed.manifest["status"] = row.manifest["status"]  # the status is the controller's, not the file's
    if parsed.kind in WORKLOAD_KINDS:
        _workload_update(parsed, row.manifest)
    if row.manifest == parsed.manifest:
        result.unchanged.append(label)
        result.statuses[(parsed.kind, parsed.namespace, parsed.name)] = "unchanged"
        return
    row.labels, row.selector, row.replicas, row.manifest = parsed.labels, parsed.selector, parsed.replicas, parsed.manifest
    row.save()
    result.configured.append(label)
    result.statuses[(parsed.kind, parsed.namespace, parsed.name)] = "configured"


class ObjectForbidden(Exception):
    """The API server refuses the request (403): the message as it words it after `is forbidden: `."""


SYSTEM_CLASS_UNDELETABLE = "this is a system priority class and cannot be deleted"


def cluster_object_delete(*, kind: str, namespace: str, name: str) -> bool:
    if kind == PRIORITY_CLASS and name in SYSTEM_CLASSES:
        # As the priorityclass registry's Delete: the system classes stay.
        raise ObjectForbidden(SYSTEM_CLASS_UNDELETABLE)
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


def priority_classes() -> dict:
    """The stored PriorityClasses by name (what Priority admission resolves a pod's class against)."""
    return {info.name: info for info in (priority_class_info(m) for m in
                                         ClusterObject.objects.filter(kind=PRIORITY_CLASS).values_list("manifest", flat=True))}


def system_priority_classes_ensure() -> int:
    """Create the system PriorityClasses that are missing, as the API server's bootstrap hook does at every start
    (scheduling/bootstrap-system-priority-classes): `get pc` lists them, pods may name them. How many it made."""
    made = 0
    now = timezone.now()
    for name in SYSTEM_CLASSES:
        if ClusterObject.objects.filter(kind=PRIORITY_CLASS, namespace="", name=name).exists():
            continue
        manifest = system_class_manifest(name)
        manifest["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=now.strftime("%Y-%m-%dT%H:%M:%SZ"))
        ClusterObject.objects.get_or_create(kind=PRIORITY_CLASS, namespace="", name=name, defaults={
            "uid": manifest["metadata"]["uid"], "labels": {}, "selector": None, "replicas": None, "manifest": manifest})
        made += 1
    return made
