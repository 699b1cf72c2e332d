"""Pods held by SchedulingGates (upstream keeps them in unschedulablePods with Gated=true): read from the
database, which is where a gated pod lives here, so both queue implementations stay as they are."""

from __future__ import annotations

from django.db.models import Q

from ..engine import scheduling_gates
from ..models import Pod


def gated_pods() -> Q:
    """Unplaced pods the loop has held as gated (their manifest still lists gates)."""
    return Q(node_name="", assumed_node="", scheduled_reason=scheduling_gates.REASON,
             manifest__spec__has_key="schedulingGates")


def gated_count() -> int:
    """scheduler_pending_pods{queue="gated"}."""
    return Pod.objects.filter(gated_pods()).count()
