"""The workload controllers in one pass (the beat task and `scale` call it): Deployments first (they write
ReplicaSets), then ReplicaSets, ReplicationControllers and StatefulSets (they write pods)."""

from __future__ import annotations

from . import deployment, replicaset, replication, statefulset

CONTROLLERS = [deployment, replicaset, replication, statefulset]


def sync_all() -> dict:
    out = {}
    for controller in CONTROLLERS:
        got = controller.sync_all()
        if got:
            out[controller.CONTROLLER] = got
    return out
