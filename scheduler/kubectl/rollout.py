"""`kubectl rollout status`'s viewers (kubectl/pkg/polymorphichelpers/rollout_status.go): from a Deployment's
or StatefulSet's stored status, the line kubectl prints and whether the rollout is done; an error when it
cannot finish (past its progress deadline) or cannot be followed (a StatefulSet that is not RollingUpdate)."""

from __future__ import annotations


class RolloutError(Exception):
    """What kubectl reports as `error: ...` and exits 1 on."""


def _int(status: dict, key: str) -> int:
    value = status.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def deployment_status(manifest: dict, replicas: int, revision: int = 0) -> tuple[str, bool]:
    """DeploymentStatusViewer.Status."""
    name = manifest["metadata"]["name"]
    meta, status = manifest.get("metadata") or {}, manifest.get("status") or {}
    if revision > 0:
        current = int((meta.get("annotations") or {}).get("deployment.kubernetes.io/revision") or 0)
        if current != revision:
            raise RolloutError(f"desired revision ({revision}) is different from the running revision ({current})")
    if int(meta.get("generation") or 1) > _int(status, "observedGeneration"):
        return "Waiting for deployment spec update to be observed...", False
    progressing = next((c for c in status.get("conditions") or () if c.get("type") == "Progressing"), None)
    if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
        raise RolloutError(f'deployment "{name}" exceeded its progress deadline')
    updated, total, available = _int(status, "updatedReplicas"), _int(status, "replicas"), _int(status, "availableReplicas")
    if updated < replicas:
        return (f'Waiting for deployment "{name}" rollout to finish: {updated} out of {replicas} new replicas have been '
                "updated..."), False
    if total > updated:
        return f'Waiting for deployment "{name}" rollout to finish: {total - updated} old replicas are pending termination...', False
    if available < updated:
        return (f'Waiting for deployment "{name}" rollout to finish: {available} of {updated} updated replicas are '
                "available..."), False
    return f'deployment "{name}" successfully rolled out', True


def statefulset_status(manifest: dict, replicas: int) -> tuple[str, bool]:
    """StatefulSetStatusViewer.Status."""
    meta, spec, status = manifest.get("metadata") or {}, manifest.get("spec") or {}, manifest.get("status") or {}
    strategy = spec.get("updateStrategy") or {}
    if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
        raise RolloutError("rollout status is only available for RollingUpdate strategy type")
    observed = _int(status, "observedGeneration")
    if observed == 0 or int(meta.get("generation") or 1) > observed:
        return "Waiting for statefulset spec update to be observed...", False
    ready, updated = _int(status, "readyReplicas"), _int(status, "updatedReplicas")
    if ready < replicas:
        return f"Waiting for {replicas - ready} pods to be ready...", False
    rolling = strategy.get("rollingUpdate")
    if isinstance(rolling, dict):
        partition = rolling.get("partition")
        if isinstance(partition, int) and updated < replicas - partition:
            return (f"Waiting for partitioned roll out to finish: {updated} out of {replicas - partition} new pods "
                    "have been updated..."), False
        return f"partitioned roll out complete: {updated} new pods have been updated...", True
    if status.get("updateRevision") != status.get("currentRevision"):
        return (f"waiting for statefulset rolling update to complete {updated} pods at revision "
                f"{status.get('updateRevision')}..."), False
    return (f"statefulset rolling update complete {_int(status, 'currentReplicas')} pods at revision "
            f"{status.get('currentRevision')}..."), True
