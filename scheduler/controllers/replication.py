"""The ReplicationController manager: upstream runs the ReplicaSet controller over ReplicationControllers
(pkg/controller/replication), so the same sync here, its events under its own name. Its pods' owner
reference is v1 ReplicationController; its selector is a plain map."""

from __future__ import annotations

from ..models import REPLICATION_CONTROLLER
from . import replicaset

CONTROLLER = "replication-controller"


def sync_all(now=None) -> dict:
    return replicaset.sync_kind(REPLICATION_CONTROLLER, CONTROLLER, now)
