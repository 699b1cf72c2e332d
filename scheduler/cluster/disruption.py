"""Taking a running pod away as the control plane does: the DisruptionTarget condition written first
(as upstream's controllers patch the pod's status before they delete it), then the pod deleted and its
room given back. PodGC, the taint eviction controller and `drain` (the Eviction API) all go through here.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from ..models import ClusterEvent, Pod
from ..queue import hints
from ..state.events import EventSpec, events_record
from ..state.reservations import release_assumed, release_node_usage, row_usage
from ..state.sql import update_from_values
from ..telemetry import live
from .services import pod_delete

DISRUPTION_TARGET = "DisruptionTarget"
# The reasons upstream writes on the condition (k8s.io/api/core/v1 and the controllers that set them).
DELETION_BY_POD_GC = "DeletionByPodGC"
DELETION_BY_TAINT_MANAGER = "DeletionByTaintManager"
EVICTION_BY_EVICTION_API = "EvictionByEvictionAPI"
TERMINATION_BY_KUBELET = "TerminationByKubelet"


def set_disruption_target(pod: Pod, reason: str, message: str, *, mark_failed: bool = False, now=None) -> None:
    """Write the DisruptionTarget condition (and, as PodGC, phase Failed) on the row, as apipod.UpdatePodCondition:
    the condition replaces one of its type, its transition time kept when the status does not change."""
    pod.manifest = with_disruption_target(pod, reason, message, mark_failed=mark_failed, now=now)
    Pod.objects.filter(pk=pod.pk).update(manifest=pod.manifest)


def with_disruption_target(pod: Pod, reason: str, message: str, *, mark_failed: bool = False, now=None) -> dict:
    """The pod's manifest with the DisruptionTarget condition set (set_disruption_target's change, not written)."""
    now = now or timezone.now()
    manifest = copy.deepcopy(pod.manifest)
    status = manifest.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    old = next((c for c in conditions if c.get("type") == DISRUPTION_TARGET), None)
    condition = {"type": DISRUPTION_TARGET, "status": "True", "reason": reason, "message": message,
                 "lastTransitionTime": (old.get("lastTransitionTime") if old and old.get("status") == "True"
                                        else now.strftime("%Y-%m-%dT%H:%M:%SZ"))}
    status["conditions"] = [c for c in conditions if c is not old] + [condition]
    if mark_failed and pod.phase not in ("Succeeded", "Failed"):
        status["phase"] = "Failed"
    return manifest


def evict(*, namespace: str, name: str, reason: str, message: str, mark_failed: bool = False,
          events: list[EventSpec] = (), now=None, uid: str | None = None) -> bool:
    """Condition, events and deletion in one transaction; False when the pod is already gone (or, given
    `uid`, replaced by another pod of that name).

    The simulated cluster has no kubelet to wait for, so the deletion is immediate whatever the grace
    period (as `kubectl delete --grace-period=0 --force`)."""
    with transaction.atomic():
        pod = Pod.objects.select_for_update().filter(namespace=namespace, name=name).first()
        if pod is None or (uid is not None and pod.uid != uid):
            return False  # gone, or another pod under the name now (`uid`: only that one may go)
        set_disruption_target(pod, reason, message, mark_failed=mark_failed, now=now)
        events_record(list(events), now=now)
        node_name = pod.node_name or pod.assumed_node
        pod_delete(namespace=namespace, name=name)
        transaction.on_commit(lambda: live.pods_disrupted([{"namespace": namespace, "name": name, "node": node_name,
                                                             "reason": reason, "message": message}]))
    return True


def evict_many(pods: list[dict], *, reason: str, message: str, events: Callable[[dict], list[EventSpec]],
               now=None) -> list[str]:
    """evict for several pods, each named by its uid (a pod recreated under a name is another pod, never taken),
    in one transaction of a few set-based statements whatever their number: the conditions, the events (from
    `events(pod)`), the deletions with their rooms given back. The keys of those evicted (the others are gone)."""
    now = now or timezone.now()
    by_uid = {p["uid"]: p for p in pods if p.get("uid")}
    if not by_uid:
        return []
    with transaction.atomic():
        # In primary key order, as every other writer locks pod rows: no deadlock between two evictions.
        rows = list(Pod.objects.select_for_update().filter(uid__in=by_uid).order_by("pk"))
        if not rows:
            return []
        update_from_values(Pod, ["manifest"], [(row.pk, with_disruption_target(row, reason, message, now=now))
                                               for row in rows])
        events_record([e for row in rows for e in events(by_uid[row.uid])], now=now)
        bound, deleted = [], []
        for row in rows:
            usage = row_usage(row)
            if row.node_name:
                release_node_usage(node_name=row.node_name, usage=usage)  # a node gone meanwhile: nothing to give
                bound.append(row.key)
                deleted.append((row.manifest, row.node_name))
            elif row.assumed_node:
                release_assumed(pod_id=row.pk, node_name=row.assumed_node, usage=usage)
        Pod.objects.filter(pk__in=[row.pk for row in rows]).delete()
        if bound:
            ClusterEvent.objects.bulk_create([ClusterEvent(kind=ClusterEvent.ASSIGNED_POD_DELETE, object_name=key)
                                              for key in bound])
        keys = [row.key for row in rows]
        disrupted = [{"namespace": row.namespace, "name": row.name, "node": row.node_name or row.assumed_node,
                      "reason": reason, "message": message} for row in rows]

        def publish():
            from ..queue.queues import get_queue

            queue = get_queue()
            for key in keys:
                queue.delete(key)
            if bound:  # one hinted move for all of them (AssignedPodDelete; pod_delete moves once per pod)
                hints.move_after_events(queue, lambda: [hints.deleted_pod(*d) for d in deleted],
                                        {ClusterEvent.ASSIGNED_POD_DELETE})
            live.pods_disrupted(disrupted)

        transaction.on_commit(publish)
    return keys


EVICTION_API_MESSAGE = "Eviction API: evicting"
# What the Eviction API answers (429) when a PodDisruptionBudget forbids the eviction.
PDB_VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


def eviction_allowed(pod: Pod) -> bool:
    """Whether the Eviction API would let this pod go now: no PodDisruptionBudget selecting it (an empty
    or nil selector selects nothing here, as the eviction subresource reads them) is out of disruptions.
    Spending one is implicit: the budget's status is computed from the pods (state/budgets.py)."""
    from ..engine.preemption.pdb import pdb_matches
    from ..state.budgets import live_budgets

    labels = (pod.manifest.get("metadata") or {}).get("labels") or {}
    return all(b.disruptions_allowed > 0 for b in live_budgets() if pdb_matches(b, pod.namespace, labels, pod.name))
