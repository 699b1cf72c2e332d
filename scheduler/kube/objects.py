"""Namespaces, Services, ReplicationControllers, ReplicaSets, StatefulSets, PriorityClasses and
PodDisruptionBudgets mirrored (list + watch)
into the ClusterObject table: InterPodAffinity's namespaceSelector reads the namespaces' labels, and
PodTopologySpread's default constraints the selectors of the Services and controllers of a pod.

Read only, and only what the scheduler reads: the metadata's name, namespace, uid and labels, and
spec.selector / spec.replicas. The API server has validated them; they are stored as it has them.
"""

from __future__ import annotations

import logging

from django.db import transaction

from ..cluster.objects import cluster_object_upsert_mirrored
from ..manifests.cluster_objects import (KINDS, NAMESPACE, POD_DISRUPTION_BUDGET, PRIORITY_CLASS, REPLICA_SET,
                                        REPLICATION_CONTROLLER, SERVICE, STATEFUL_SET)
from ..models import ClusterObject
from .mirror import MIRROR_LOCK, _isolated, _usable_connection

log = logging.getLogger(__name__)

# kind -> (reflector name, API class name, list-for-all-namespaces method)
# kind -> (the reflector's name, the collection's path across namespaces)
WATCHED = {
    NAMESPACE: ("namespaces", "/api/v1/namespaces"),
    SERVICE: ("services", "/api/v1/services"),
    REPLICATION_CONTROLLER: ("replicationcontrollers", "/api/v1/replicationcontrollers"),
    REPLICA_SET: ("replicasets", "/apis/apps/v1/replicasets"),
    STATEFUL_SET: ("statefulsets", "/apis/apps/v1/statefulsets"),
}
# ---- preemption's kinds: what Priority admission resolved (shown) and what DefaultPreemption reads ----
WATCHED[PRIORITY_CLASS] = ("priorityclasses", "/apis/scheduling.k8s.io/v1/priorityclasses")
# PodDisruptionBudgets: policy/v1 (Kubernetes 1.21+); policy/v1beta1 only where the API server has no v1
# (the 1.20 loopback apiserver of the tests). v1beta1's empty selector matches no pod, which is also how
# preemption reads an empty one, so both read the same here.
PDB_RESOURCE = "poddisruptionbudgets"
# ---- end of preemption's kinds ----


def _fields(kind: str, obj: dict) -> dict:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    selector = spec.get("selector") if kind != NAMESPACE else None
    replicas = spec.get("replicas") if kind in (REPLICA_SET, STATEFUL_SET, REPLICATION_CONTROLLER) else None
    manifest = {"apiVersion": KINDS[kind][0], "kind": kind,
                "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "labels") if k in meta}}
    if kind == PRIORITY_CLASS:
        selector = None
        manifest.update({k: obj[k] for k in ("value", "globalDefault", "preemptionPolicy", "description") if k in obj})
    elif kind == POD_DISRUPTION_BUDGET:
        manifest["spec"] = {k: spec[k] for k in ("selector", "minAvailable", "maxUnavailable") if k in spec}
        manifest["status"] = obj.get("status") or {}  # the cluster's disruption controller keeps it
    elif kind != NAMESPACE:
        manifest["spec"] = {k: spec[k] for k in ("selector", "replicas") if k in spec}
    return {"namespace": (meta.get("namespace") or "") if KINDS[kind][1] else "", "name": meta.get("name") or "",
            "uid": meta.get("uid") or "", "labels": labels, "selector": selector if isinstance(selector, dict) else None,
            "replicas": replicas if isinstance(replicas, int) else None, "manifest": manifest}


class ObjectStore:
    """Reflector store for one kind of ClusterObject."""

    def __init__(self, kind: str):
        self.kind = kind

    def replace(self, items: list[dict]) -> None:
        _usable_connection()
        with MIRROR_LOCK:
            listed = set()
            for obj in items:
                f = _fields(self.kind, obj)
                listed.add((f["namespace"], f["name"]))
                _isolated(self.kind, obj, lambda f=f: cluster_object_upsert_mirrored(kind=self.kind, **f))
            with transaction.atomic():
                for pk, namespace, name in ClusterObject.objects.filter(kind=self.kind).values_list("pk", "namespace", "name"):
                    if (namespace, name) not in listed:
                        ClusterObject.objects.filter(pk=pk).delete()

    def apply(self, event_type: str, obj: dict) -> None:
        _usable_connection()
        with MIRROR_LOCK:
            f = _fields(self.kind, obj)
            if event_type == "DELETED":
                _isolated(self.kind, obj, lambda: ClusterObject.objects.filter(
                    kind=self.kind, namespace=f["namespace"], name=f["name"]).delete())
            else:
                _isolated(self.kind, obj, lambda: cluster_object_upsert_mirrored(kind=self.kind, **f))


def reflectors(api_client, *, stop, watch_timeout=None) -> list:
    """One Reflector per watched kind (listed and watched by path: kube/client.py's lister)."""
    from .client import lister
    from .reflector import Reflector

    out = []
    for kind, (name, path) in WATCHED.items():
        out.append(Reflector(name, lister(api_client, path), ObjectStore(kind), kind=kind, stop=stop,
                             watch_timeout=watch_timeout))
    out.append(Reflector(PDB_RESOURCE, pdb_lister(api_client), ObjectStore(POD_DISRUPTION_BUDGET),
                         kind=POD_DISRUPTION_BUDGET, stop=stop, watch_timeout=watch_timeout))
    return out


def pdb_lister(api_client):
    """A list (and watch) function for the budgets of every namespace: policy/v1, or policy/v1beta1 once
    the API server answered 404 for v1 (found at the first call, not at start: the API server may not be
    up yet)."""
    from kubernetes.client.exceptions import ApiException

    from .client import lister

    version = ["v1"]

    def list_pdbs(**kwargs):
        try:
            return lister(api_client, f"/apis/policy/{version[0]}/{PDB_RESOURCE}")(**kwargs)
        except ApiException as exc:
            if exc.status != 404 or version[0] != "v1":
                raise
            version[0] = "v1beta1"
            log.info("the API server has no policy/v1 PodDisruptionBudgets: reading policy/v1beta1")
            return lister(api_client, f"/apis/policy/{version[0]}/{PDB_RESOURCE}")(**kwargs)

    return list_pdbs
