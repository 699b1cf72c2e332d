"""`kubectl cordon`, `uncordon` and `drain` (staging/src/k8s.io/kubectl/pkg/drain and cmd/drain) on the
simulated cluster: cordon sets spec.unschedulable (the node controller then adds the unschedulable
taint); drain cordons, refuses DaemonSet-managed pods without --ignore-daemonsets and pods without a
controller without --force (kubectl's filters, in its order), then evicts the rest through the Eviction
API (DisruptionTarget EvictionByEvictionAPI, PodDisruptionBudgets through eviction_allowed)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..cluster.disruption import EVICTION_API_MESSAGE, EVICTION_BY_EVICTION_API, PDB_VIOLATION, evict, eviction_allowed
from ..cluster.services import node_manifest_update
from ..models import Pod
from . import node_lifecycle
from .pods import controller_of

DAEMON_SET_FATAL = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
DAEMON_SET_WARNING = "ignoring DaemonSet-managed Pods"
UNMANAGED_FATAL = "cannot delete Pods that declare no controller (use --force to override)"
UNMANAGED_WARNING = "deleting Pods that declare no controller"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def cordon(name: str, desired: bool = True) -> str | None:
    """'cordoned', 'already cordoned' (or un-), or None when there is no such node."""
    def mutate(manifest: dict) -> None:
        spec = manifest.setdefault("spec", {})
        if desired:
            spec["unschedulable"] = True
        else:
            spec.pop("unschedulable", None)
    changed = node_manifest_update(name=name, mutate=mutate)
    if changed is None:
        return None
    node_lifecycle.monitor(names=[name])
    word = "cordoned" if desired else "uncordoned"
    return word if changed else f"already {word}"


@dataclass
class DrainPlan:
    evict: list[Pod] = field(default_factory=list)
    warnings: dict[str, list[str]] = field(default_factory=dict)  # message -> ns/name
    errors: dict[str, list[str]] = field(default_factory=dict)

    def warning_text(self) -> str:
        return "; ".join(f"{msg}: {', '.join(pods)}" for msg, pods in self.warnings.items())

    def error_texts(self) -> list[str]:
        return [f"{msg}: {', '.join(pods)}" if msg.lower().startswith("cannot delete") else
                f"cannot delete {msg}: {', '.join(pods)}" for msg, pods in self.errors.items()]


def plan(node: str, *, force: bool = False, ignore_daemonsets: bool = False) -> DrainPlan:
    """GetPodsForDeletion: each pod on the node through the filters, the first that keeps it deciding."""
    out = DrainPlan()
    for pod in Pod.objects.filter(node_name=node).order_by("namespace", "name"):
        key = f"{pod.namespace}/{pod.name}"
        finished = pod.phase in ("Succeeded", "Failed")
        ref = controller_of(pod.manifest)
        annotations = (pod.manifest.get("metadata") or {}).get("annotations") or {}
        if ref and ref.get("kind") == "DaemonSet" and not finished:
            if ignore_daemonsets:
                out.warnings.setdefault(DAEMON_SET_WARNING, []).append(key)
            else:
                out.errors.setdefault(DAEMON_SET_FATAL, []).append(key)
            continue
        if MIRROR_POD_ANNOTATION in annotations:
            continue
        if ref is None and not finished:
            if not force:
                out.errors.setdefault(UNMANAGED_FATAL, []).append(key)
                continue
            out.warnings.setdefault(UNMANAGED_WARNING, []).append(key)
        out.evict.append(pod)
    return out


def evict_pod(pod: Pod) -> bool | None:
    """True evicted, False refused by a disruption budget, None already gone."""
    if not eviction_allowed(pod):
        return False
    ok = evict(namespace=pod.namespace, name=pod.name, reason=EVICTION_BY_EVICTION_API, message=EVICTION_API_MESSAGE)
    return True if ok else None


__all__ = ["cordon", "plan", "evict_pod", "PDB_VIOLATION"]
