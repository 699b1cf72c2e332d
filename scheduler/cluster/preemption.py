"""Preemption's API calls on the simulated cluster (upstream's prepareCandidate): each victim gets the
DisruptionTarget condition (PreemptionByScheduler) and a "Preempted" event naming the preemptor, then is
deleted, its room given back; its controller, if any, recreates it.

Idempotent (the task is acked late and may run twice): a victim already gone, or replaced by another pod
under its name, is skipped; nothing is done for a preemptor that is gone or nominated elsewhere since.
"""

from __future__ import annotations

from ..models import Pod
from ..state.events import EventSpec
from .disruption import evict_many

PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def victim_condition_message(scheduler_name: str) -> str:
    # As preemption.go: the preemptor's scheduler name.
    return f"{scheduler_name}: preempting to accommodate a higher priority pod"


def preempted_event(victim: dict, preemptor: dict, node: str) -> EventSpec:
    """As Eventf(victim, preemptor, Normal, "Preempted", "Preempting", "Preempted by pod %v on node %v")."""
    return EventSpec("Normal", "Preempted", f"Preempted by pod {preemptor['uid']} on node {node}", "Pod",
                     victim["namespace"], victim["name"], victim.get("uid", ""), action="Preempting",
                     reporting_controller=preemptor.get("scheduler") or "default-scheduler")


def still_preempting(job: dict) -> bool:
    """Whether the preemptor still waits for this node: it exists (same uid), is not placed, and is
    nominated there."""
    p = job["preemptor"]
    return Pod.objects.filter(namespace=p["namespace"], name=p["name"], uid=p["uid"], node_name="",
                              assumed_node="", nominated_node=job["node"]).exists()


def preempt_victims(job: dict) -> list[str]:
    """Evict the job's victims, all in one transaction; the keys of those evicted now."""
    if not still_preempting(job):
        return []
    preemptor, node = job["preemptor"], job["node"]
    message = victim_condition_message(preemptor.get("scheduler") or "default-scheduler")
    return evict_many(job["victims"], reason=PREEMPTION_BY_SCHEDULER, message=message,
                      events=lambda v: [preempted_event(v, preemptor, node)])
