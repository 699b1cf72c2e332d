"""What the workload controllers share (pkg/controller/controller_utils.go): the pods of a namespace as a
controller sees them (owner, labels, readiness), creating one from its template (generateName,
ownerReferences, the template's labels) through the same apply as a user's pod (admission, validation,
queueing), deleting one, and the events they leave.

Readiness in a cluster without kubelets: a bound pod's containers start and pass their (absent) probes at
its binding, so it is Ready from `bound_at` (as a kubelet would post Ready=True once its containers run),
unless its status carries a Ready condition of its own: the node controller's MarkPodsNotReady (a node
gone unreachable) writes Ready=False, and the node's recovery writes Ready=True again with its time
(node_lifecycle.py). Available is Ready for minReadySeconds (podutil.IsPodAvailable)."""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.utils.dateparse import parse_datetime

from ..cluster.services import cluster_apply, pod_delete
from ..manifests.errors import ManifestError, Problem
from ..manifests.objects import parse_object, problems_of
from ..models import ClusterObject, Event, Pod
from ..state.events import EventSpec

# As k8s.io/apimachinery's rand.String and names.SimpleNameGenerator (generateName + 5 characters).
ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
MAX_NAME_LENGTH = 63
RANDOM_LENGTH = 5
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_rng = random.SystemRandom()


def generate_name(base: str) -> str:
    base = base[:MAX_NAME_LENGTH - RANDOM_LENGTH]
    return base + "".join(_rng.choice(ALPHANUMS) for _ in range(RANDOM_LENGTH))


def controller_of(manifest: dict) -> dict | None:
    for ref in (manifest.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def ready_condition(manifest: dict) -> dict | None:
    for c in (manifest.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == "Ready":
            return c
    return None


def ready_since(*, phase: str, node_name: str, deleting: bool, bound_at: datetime | None,
                manifest: dict) -> datetime | None:
    """When the pod became Ready (its Ready condition's lastTransitionTime), None when it is not Ready."""
    if phase != Pod.RUNNING or not node_name or deleting:
        return None
    cond = ready_condition(manifest)
    if cond is None:
        return bound_at
    if cond.get("status") != "True":
        return None
    return parse_datetime(str(cond.get("lastTransitionTime") or "")) or bound_at


@dataclass
class OwnedPod:
    namespace: str
    name: str
    node_name: str
    phase: str
    created_at: datetime
    deleting: bool
    uid: str = ""
    labels: dict = field(default_factory=dict)
    controller_uid: str = ""
    ready_at: datetime | None = None  # when it became Ready; None: not Ready
    deletion_cost: int = 0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def ready(self) -> bool:
        return self.ready_at is not None

    def available(self, min_ready_seconds: int, now: datetime) -> bool:
        """As podutil.IsPodAvailable: Ready, and for longer than minReadySeconds."""
        if self.ready_at is None:
            return False
        return min_ready_seconds == 0 or self.ready_at + timedelta(seconds=min_ready_seconds) < now


def _deletion_cost(annotations: dict) -> int:
    """As controller.getPodDeletionCost: an int32 annotation, 0 when absent or not one."""
    try:
        cost = int(str(annotations.get(POD_DELETION_COST, "0")), 10)
    except ValueError:
        return 0
    return cost if -2**31 <= cost < 2**31 else 0


def namespace_pods(namespace: str) -> list[OwnedPod]:
    """Every pod of the namespace (what a controller's pod lister gives it)."""
    rows = Pod.objects.filter(namespace=namespace).values_list(
        "namespace", "name", "uid", "node_name", "phase", "created_at", "deleting", "bound_at", "manifest")
    out = []
    for ns, name, uid, node, phase, created, deleting, bound_at, manifest in rows:
        meta = manifest.get("metadata") or {}
        out.append(OwnedPod(ns, name, node, phase, created, deleting, uid=uid, labels=dict(meta.get("labels") or {}),
                            controller_uid=(controller_of(manifest) or {}).get("uid") or "",
                            ready_at=ready_since(phase=phase, node_name=node, deleting=deleting, bound_at=bound_at,
                                                 manifest=manifest),
                            deletion_cost=_deletion_cost(meta.get("annotations") or {})))
    return out


def owned_pods(owner: ClusterObject) -> list[OwnedPod]:
    """The pods whose controller reference names this object's uid (adoption is claims.py's)."""
    return [p for p in namespace_pods(owner.namespace) if p.controller_uid == owner.uid]


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
