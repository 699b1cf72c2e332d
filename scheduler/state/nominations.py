"""Nominated nodes (status.nominatedNodeName) as the loop writes them after a PostFilter, and the
job a preemption hands to the preempt task."""

from __future__ import annotations

import copy

from django.db import transaction
from django.utils import timezone

from ..engine.pods import PodSpec
from ..models import Pod


def nominations_write(pairs: list[tuple[int, str]], *, in_manifest: bool = True) -> None:
    """Set (or, with "", clear) these pods' nominated node, column and (`in_manifest`) status.nominatedNodeName
    alike, in the caller's transaction; never on a pod that is placed meanwhile.

    On a mirrored cluster the manifest is the API server's copy and stays so (`in_manifest` False): it gets the
    nomination when the leader's patch comes back, and the mirror tells a nomination the API server removed from
    one it never had by comparing that copy with the next (kube/mirror.py)."""
    wanted = dict(pairs)
    with transaction.atomic():
        for pod in Pod.objects.select_for_update().filter(pk__in=wanted, node_name="", assumed_node="").order_by("pk"):
            node = wanted[pod.pk]
            if pod.nominated_node == node:
                continue
            # updated_at moves as with any change of the pod: workers read its spec (nominatedNodeName) again.
            changes = {"nominated_node": node, "updated_at": timezone.now()}
            if in_manifest:
                manifest = copy.deepcopy(pod.manifest)
                status = manifest.setdefault("status", {})
                if node:
                    status["nominatedNodeName"] = node
                else:
                    status.pop("nominatedNodeName", None)
                changes["manifest"] = manifest
            Pod.objects.filter(pk=pod.pk).update(**changes)


def preemption_job(pod: Pod, node: str, victims: tuple[PodSpec, ...], attempt: int | None,
                   cleared: tuple[int, ...] = ()) -> dict:
    """What the preempt task needs, JSON-safe: the preemptor, its nominated node and the victims by uid
    (a victim recreated under the same name is another pod, never deleted for this preemption)."""
    return {"preemptor": {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid,
                          "scheduler": pod.scheduler_name, "priority": pod.priority},
            "node": node, "attempt": attempt,
            "victims": [{"namespace": v.namespace, "name": v.name, "uid": v.uid} for v in victims],
            # Lower-priority pods nominated to that node, their nomination cleared (the cluster's too).
            "cleared": [{"namespace": ns, "name": name, "uid": uid} for ns, name, uid in
                        Pod.objects.filter(pk__in=cleared).values_list("namespace", "name", "uid")] if cleared else []}
