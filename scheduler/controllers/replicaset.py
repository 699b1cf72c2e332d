"""The ReplicaSet controller (pkg/controller/replicaset): claim the active pods its selector matches
(adopting orphans, releasing pods whose labels left it: claims.py), keep spec.replicas of them, creating
from the template (SuccessfulCreate "Created pod: NAME"; a template the API server refuses is FailedCreate
"Error creating: ..." and the ReplicaFailure condition) or deleting the least useful first
(SuccessfulDelete "Deleted pod: NAME", ranked as ActivePodsWithRanks), then write its status (replicas,
fullyLabeledReplicas, readyReplicas, availableReplicas after minReadySeconds, terminatingReplicas,
observedGeneration). Upstream's ReplicationController manager is this same controller run over
ReplicationControllers (replication/replication_controller.go): see replication.py."""

from __future__ import annotations

import functools
import math
from datetime import datetime, timezone as dt_timezone

from ..engine.labels import selector_from_set
from ..manifests.errors import ManifestError
from ..models import REPLICA_SET, ClusterObject, Event
from ..state.events import events_record
from .claims import claim_pods, selector_of
from .deployment_status import rfc3339
from .owned_objects import generation, status_of, write_status
from .pods import (OwnedPod, create_pods, delete_pods, generate_name, is_active, namespace_pods, owner_event,
                   pod_from_template)

CONTROLLER = "replicaset-controller"
BURST_REPLICAS = 500  # a sync creates or deletes at most this many pods (upstream's burstReplicas)
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def _log_rank_diff(t1: datetime, t2: datetime, now: datetime) -> int:
    """logarithmicRankDiff: the ages' floor(log2(nanoseconds)) compared (LogarithmicScaleDown, GA)."""
    def rank(t: datetime) -> int:
        d = round((now - t).total_seconds() * 1e9)
        return int(math.log2(d)) if d > 0 else -1
    return rank(t1) - rank(t2)


def _after_or_zero(t1: datetime | None, t2: datetime | None) -> bool:
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _less(a: tuple[OwnedPod, int], b: tuple[OwnedPod, int], now: datetime) -> bool:
    """ActivePodsWithRanks.Less: whether a is deleted before b."""
    (p, rank_p), (q, rank_q) = a, b
    if p.node_name != q.node_name and (not p.node_name or not q.node_name):
        return not p.node_name  # 1. unassigned first
    if _PHASE_ORDINAL.get(p.phase, 0) != _PHASE_ORDINAL.get(q.phase, 0):
        return _PHASE_ORDINAL.get(p.phase, 0) < _PHASE_ORDINAL.get(q.phase, 0)  # 2. Pending < Unknown < Running
    if p.ready != q.ready:
        return not p.ready  # 3. not ready first
    if p.deletion_cost != q.deletion_cost:
        return p.deletion_cost < q.deletion_cost  # 4. lower pod-deletion-cost first
    if rank_p != rank_q:
        return rank_p > rank_q  # 5. doubled up first
    if p.ready and q.ready and p.ready_at != q.ready_at:  # 6. ready for less time first
        diff = _log_rank_diff(p.ready_at, q.ready_at, now)
        return p.uid < q.uid if diff == 0 else diff < 0
    # 7. restart counts: the simulated containers never restart.
    if p.created_at != q.created_at:  # 8. newer first
        diff = _log_rank_diff(p.created_at, q.created_at, now)
        return p.uid < q.uid if diff == 0 else diff < 0
    return False


def pods_to_delete(pods: list[OwnedPod], related: list[OwnedPod], diff: int, now: datetime) -> list[OwnedPod]:
    """getPodsToDelete: ranked by the related pods (of the sets with the same controller) on each one's node."""
    if diff >= len(pods):
        return pods[:diff]
    on_node: dict[str, int] = {}
    for p in related:
        if is_active(p):
            on_node[p.node_name] = on_node.get(p.node_name, 0) + 1
    ranked = [(p, on_node.get(p.node_name, 0)) for p in pods]

    def compare(a, b) -> int:
        return -1 if _less(a, b, now) else (1 if _less(b, a, now) else 0)
    ranked.sort(key=functools.cmp_to_key(compare))
    return [p for p, _ in ranked[:diff]]


def _related_pods(rs: ClusterObject, pods: list[OwnedPod]) -> list[OwnedPod]:
    """getIndirectlyRelatedPods: the pods the selectors of the sets sharing this one's controller match."""
    from .pods import controller_of

    owner = (controller_of(rs.manifest) or {}).get("uid")
    if not owner:
        return []
    seen, out = set(), []
    for other in ClusterObject.objects.filter(kind=rs.kind, namespace=rs.namespace):
        if (controller_of(other.manifest) or {}).get("uid") != owner:
            continue
        selector = selector_of(other)
        for p in pods:
            if p.uid not in seen and selector.matches(p.labels):
                seen.add(p.uid)
                out.append(p)
    return out


def _status(rs: ClusterObject, active: list[OwnedPod], terminating: int, error: str, diff: int,
            now: datetime) -> dict:
    """calculateStatus, with the ReplicaFailure condition set on an error and removed without one."""
    tmpl_labels = ((rs.manifest.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
    template_selector = selector_from_set(tmpl_labels)
    min_ready = int((rs.manifest.get("spec") or {}).get("minReadySeconds") or 0)
    old = status_of(rs)
    status = {"replicas": len(active)}
    counts = {"fullyLabeledReplicas": sum(template_selector.matches(p.labels) for p in active),
              "readyReplicas": sum(p.ready for p in active),
              "availableReplicas": sum(p.available(min_ready, now) for p in active)}
    status.update({k: v for k, v in counts.items() if v})
    status["terminatingReplicas"] = terminating  # DeploymentReplicaSetTerminatingReplicas (beta, on)
    status["observedGeneration"] = generation(rs)
    conditions = [c for c in old.get("conditions") or () if isinstance(c, dict)]
    failure = next((c for c in conditions if c.get("type") == "ReplicaFailure"), None)
    if error and failure is None:
        reason = "FailedCreate" if diff < 0 else ("FailedDelete" if diff > 0 else "")
        conditions.append({"type": "ReplicaFailure", "status": "True", "lastTransitionTime": rfc3339(now),
                           "reason": reason, "message": error})
    elif not error and failure is not None:
        conditions = [c for c in conditions if c is not failure]
    if conditions:
        status["conditions"] = conditions
    return status


def sync(rs: ClusterObject, controller: str = CONTROLLER, now: datetime | None = None) -> dict:
    """One syncReplicaSet: the pods created and deleted (names)."""
    now = now or datetime.now(dt_timezone.utc)
    selector = selector_of(rs)
    all_pods = namespace_pods(rs.namespace)
    pods = claim_pods(rs, [p for p in all_pods if is_active(p)], lambda p: selector.matches(p.labels))
    terminating = sum(1 for p in all_pods if p.deleting and p.controller_uid == rs.uid and selector.matches(p.labels))
    want = rs.replicas if rs.replicas is not None else 1
    diff = len(pods) - want
    created, deleted, error = [], [], ""
    if diff < 0:
        prefix = f"{rs.name}-"
        manifests = [pod_from_template(rs, generate_name(prefix), generate_name=prefix)
                     for _ in range(min(-diff, BURST_REPLICAS))]
        try:
            create_pods(rs, manifests)
        except ManifestError as e:
            # FailedCreate: the template is refused; said on the owner, tried again next sync.
            error = str(e.problems[0])
            events_record([owner_event(rs, "FailedCreate", f"Error creating: {error}", controller, Event.WARNING)])
        else:
            created = [m["metadata"]["name"] for m in manifests]
            events_record([owner_event(rs, "SuccessfulCreate", f"Created pod: {name}", controller)
                           for name in created])
    elif diff > 0:
        condemned = pods_to_delete(pods, _related_pods(rs, all_pods), min(diff, BURST_REPLICAS), now)
        deleted = delete_pods(condemned)
        events_record([owner_event(rs, "SuccessfulDelete", f"Deleted pod: {name}", controller) for name in deleted])
    # As upstream, the status counts the pods this sync started from; its creations show at the next one.
    write_status(rs, _status(rs, pods, terminating, error, diff, now))
    out = {"created": created, "deleted": deleted}
    if error:
        out["error"] = error
    return out


def sync_kind(kind: str, controller: str, now: datetime | None = None) -> dict:
    out = {}
    for rs in ClusterObject.objects.filter(kind=kind):
        result = sync(rs, controller, now)
        if result["created"] or result["deleted"] or result.get("error"):
            out[f"{rs.namespace}/{rs.name}"] = result
    return out


def sync_all(now: datetime | None = None) -> dict:
    return sync_kind(REPLICA_SET, CONTROLLER, now)
