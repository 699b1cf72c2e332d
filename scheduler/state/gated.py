"""Pods held by SchedulingGates (upstream keeps them in unschedulablePods with Gated=true): read from the
database, which is where a gated pod lives here, so both queue implementations stay as they are."""

from __future__ import annotations

from django.db.models import Q

from ..engine import scheduling_gates
from ..models import Pod


def gated_pods(scheduler_names=None) -> Q:
    """Unplaced pods held as gated (their manifest still lists gates); with `scheduler_names`, only those of
    our profiles (the mirror also keeps other schedulers' pods, which the API server marks gated too)."""
    q = Q(node_name="", assumed_node="", scheduled_reason=scheduling_gates.REASON, manifest__spec__has_key="schedulingGates")
    return q & Q(scheduler_name__in=list(scheduler_names)) if scheduler_names is not None else q


def gated_count(scheduler_names=None) -> int:
    """scheduler_pending_pods{queue="gated"}."""
    return Pod.objects.filter(gated_pods(scheduler_names)).count()
