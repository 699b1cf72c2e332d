"""`kubectl scale KIND/NAME --replicas N` on the simulated cluster: spec.replicas written, then the
workload controllers run once so the pods follow at once (beat would within a second)."""

from __future__ import annotations

from django.db import transaction

from ..models import ClusterObject
from . import workloads

# kubectl's resource names -> (kind, how kubectl prints it)
SCALABLE = {}
for _kind, _printed, _names in (
        ("ReplicaSet", "replicaset.apps", ("replicaset", "replicasets", "rs", "replicaset.apps", "replicasets.apps")),
        ("StatefulSet", "statefulset.apps", ("statefulset", "statefulsets", "sts", "statefulset.apps",
                                             "statefulsets.apps")),
        ("Deployment", "deployment.apps", ("deployment", "deployments", "deploy", "deployment.apps",
                                           "deployments.apps")),
        ("ReplicationController", "replicationcontroller", ("replicationcontroller", "replicationcontrollers", "rc"))):
    for _name in _names:
        SCALABLE[_name] = (_kind, _printed)


def scale(*, kind: str, namespace: str, name: str, replicas: int) -> bool:
    """False when there is no such object."""
    with transaction.atomic():
        row = ClusterObject.objects.select_for_update().filter(kind=kind, namespace=namespace, name=name).first()
        if row is None:
            return False
        manifest = dict(row.manifest)
        manifest["spec"] = {**(manifest.get("spec") or {}), "replicas": replicas}
        row.manifest, row.replicas = manifest, replicas
        row.save(update_fields=["manifest", "replicas", "updated_at"])
    workloads.sync_all()
    return True
