"""The workload controllers in one pass (the beat task and `scale` call it): Deployments first (they write
ReplicaSets), then ReplicaSets, ReplicationControllers and StatefulSets (they write pods)."""

from __future__ import annotations

import logging

from . import deployment, replicaset, replication, statefulset
from .exclusive import exclusive

log = logging.getLogger(__name__)

CONTROLLERS = [deployment, replicaset, replication, statefulset]


def sync_all(now=None, wait: float = 10.0) -> dict:
    """What the pass did, by controller; {} when nothing was left to do. One pass at a time (exclusive.py).
    `now` (default: the wall's) is what availability (minReadySeconds) and progress deadlines are measured
    against: the pods' ready times are the wall's. `wait` 0: skip when another process is running the pass
    (a scenario's control plane must not stall its clock behind beat's pass, which does the same work)."""
    out = {}
    with exclusive("workloads", wait=wait) as held:
        if not held:
            if wait:
                log.warning("workload controllers: another pass held the lock too long; skipped")
            return {"skipped": True}
        for controller in CONTROLLERS:
            got = controller.sync_all(now)
            if got:
                out[controller.CONTROLLER] = got
    return out
