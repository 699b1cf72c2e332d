"""Why a pending pod is pending, now: its stored spec run through the engine's explainer (engine/why.py)
over a fresh snapshot of the nodes, under the active configuration's profile for the pod."""

from __future__ import annotations

from ..engine.why import NEAREST_NODES, why_pending
from ..manifests.errors import ManifestError
from ..manifests.objects import pod_from_manifest
from ..models import Pod
from ..state.snapshot import Snapshot
from ..versions.profiles import active_config


class WhyError(Exception):
    """The pod cannot be explained: it does not exist, or its spec or scheduler name cannot be read."""


def pod_why(*, namespace: str, name: str, nearest: int = NEAREST_NODES) -> dict:
    """The engine's answer for one pod, plus what the pod row says: {"bound": node} for a pod already
    placed (nothing to explain), else why_pending()'s object with "version" (the configuration used)."""
    pod = Pod.objects.filter(namespace=namespace, name=name).first()
    if pod is None:
        raise WhyError(f"pod {namespace}/{name} not found")
    placed = pod.node_name or pod.assumed_node
    if placed:
        return {"pod": pod.key, "bound": placed}
    try:
        spec = pod_from_manifest(pod.manifest)
    except ManifestError as e:
        raise WhyError(f"pod {pod.key}: its spec cannot be read: {'; '.join(str(p) for p in e.problems)}") from None
    version, config = active_config()
    profiles = {p.scheduler_name: p for p in config.profiles}
    if spec.scheduler_name not in profiles:
        raise WhyError(f"pod {pod.key}: spec.schedulerName {spec.scheduler_name!r} is no profile of configuration "
                       f"version {version} (have: {', '.join(sorted(profiles))})")
    table = Snapshot().refresh().table
    answer = why_pending(profiles[spec.scheduler_name].build(version), spec, table, nearest=nearest)
    answer["version"] = version
    answer["message"] = pod.scheduled_message
    if spec.scheduling_gates:
        answer["gates"] = list(spec.scheduling_gates)
    return answer
