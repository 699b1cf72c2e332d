"""`kubectl scale KIND/NAME --replicas N` on the simulated cluster: spec.replicas written, then the
workload controllers run once so the pods follow at once (beat would within a second)."""

from __future__ import annotations

from . import workloads
from .owned_objects import set_replicas

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
    if set_replicas(kind=kind, namespace=namespace, name=name, replicas=replicas) is None:
        return False
    workloads.sync_all()
    return True
