"""What the workload controllers share (pkg/controller/controller_utils.go): the pods a controller owns,
creating one from its template (generateName, ownerReferences, the template's labels) through the same
apply as a user's pod (admission, validation, queueing), deleting one, and the events they leave."""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from datetime import datetime

from ..cluster.services import cluster_apply, pod_delete
from ..manifests.errors import ManifestError, Problem
from ..manifests.objects import parse_object, problems_of
from ..models import ClusterObject, Event, Pod
from ..state.events import EventSpec

# As k8s.io/apimachinery's rand.String and names.SimpleNameGenerator (generateName + 5 characters).
ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
MAX_NAME_LENGTH = 63
RANDOM_LENGTH = 5
_rng = random.SystemRandom()


def generate_name(base: str) -> str:
    base = base[:MAX_NAME_LENGTH - RANDOM_LENGTH]
    return base + "".join(_rng.choice(ALPHANUMS) for _ in range(RANDOM_LENGTH))


@dataclass
class OwnedPod:
    namespace: str
    name: str
    node_name: str
    phase: str
    created_at: datetime
    deleting: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def controller_of(manifest: dict) -> dict | None:
    for ref in (manifest.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def owned_pods(owner: ClusterObject) -> list[OwnedPod]:
    """The pods whose controller reference names this object's uid (adoption of orphans is not modelled)."""
    rows = Pod.objects.filter(namespace=owner.namespace).values_list(
        "namespace", "name", "node_name", "phase", "created_at", "deleting", "manifest")
    return [OwnedPod(ns, name, node, phase, created, deleting) for ns, name, node, phase, created, deleting, manifest
            in rows if (controller_of(manifest) or {}).get("uid") == owner.uid]


def is_active(pod: OwnedPod) -> bool:
    """As controller.IsPodActive: not terminal and not being deleted."""
    return pod.phase not in ("Succeeded", "Failed") and not pod.deleting


def owner_reference(owner: ClusterObject) -> dict:
    api_version = "v1" if owner.kind == "ReplicationController" else "apps/v1"
    return {"apiVersion": api_version, "kind": owner.kind, "name": owner.name, "uid": owner.uid,
            "controller": True, "blockOwnerDeletion": True}


def template(owner: ClusterObject) -> dict:
    return copy.deepcopy((owner.manifest.get("spec") or {}).get("template") or {})


def pod_from_template(owner: ClusterObject, name: str, *, labels: dict | None = None, generate_name: str = "",
                      spec_changes: dict | None = None) -> dict:
    """The pod a controller asks the API server for (GetPodFromTemplate): the template's labels, annotations and
    spec, the controller's ownerReference."""
    tmpl = template(owner)
    meta = tmpl.get("metadata") or {}
    pod_meta: dict = {"name": name, "namespace": owner.namespace,
                      "labels": dict(labels if labels is not None else meta.get("labels") or {}),
                      "ownerReferences": [owner_reference(owner)]}
    if generate_name:
        pod_meta["generateName"] = generate_name
    if meta.get("annotations"):
        pod_meta["annotations"] = dict(meta["annotations"])
    spec = copy.deepcopy(tmpl.get("spec") or {})
    spec.update(spec_changes or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def create_pods(owner: ClusterObject, manifests: list[dict]) -> None:
    """Created (and queued) as `apply` creates a user's pod; a template the API server would refuse is
    ManifestError naming the owner, and nothing is created."""
    parsed, problems = [], []
    for manifest in manifests:
        o, pod = parse_object(manifest, from_user=True)
        if pod is None:
            problems += [Problem(p.file, p.doc, owner.kind, f"{owner.namespace}/{owner.name}",
                                 f"spec.template ({p.path})", p.message)
                         for p in problems_of(o, f"{owner.kind.lower()}/{owner.name}", 1)]
        else:
            parsed.append(pod)
    if problems:
        raise ManifestError(problems)
    if parsed:
        cluster_apply(parsed)


def delete_pods(pods: list[OwnedPod]) -> list[str]:
    return [pod.name for pod in pods if pod_delete(namespace=pod.namespace, name=pod.name)]


def owner_event(owner: ClusterObject, reason: str, message: str, controller: str, type: str = Event.NORMAL) -> EventSpec:
    return EventSpec(type=type, reason=reason, message=message, kind=owner.kind, namespace=owner.namespace,
                     name=owner.name, uid=owner.uid, reporting_controller=controller)
