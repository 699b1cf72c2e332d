"""The pod page's queue timeline: every move the scheduling queue made with the pod (which sub-queue it
entered, when, on which event or queueing hint), from the queue's own per-pod record (RedisQueue keeps it in a
capped Redis list the queue's Lua scripts append to; MemoryQueue in process), with what Postgres knows beside
it: when its last scheduling gate was removed, and the node its preemption nominated."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone as dt_timezone

from scheduler.engine.queue import TIMELINE_DELETED, VIA_HINT
from scheduler.engine.scheduling_gates import gates_of
from scheduler.models import Pod, Preemption
from scheduler.queue.queues import get_queue

# How each sub-queue reads on the page (upstream's names).
QUEUE_LABELS = {
    "active": "activeQ",
    "backoff": "backoffQ",
    "unschedulable": "unschedulablePods",
    "in_flight": "popped: being scheduled",
    "": "left the queue",
}

# What each event label means, for the title of its cell.
EVENT_TITLES = {
    "UnschedulablePodAdd": "the pod was added",
    "UnschedulablePodUpdate": "the pod changed",
    "UnschedulablePodUpdatePodLabel": "the pod's labels changed",
    "UnschedulablePodUpdatePodScaleDown": "the pod's requests were scaled down",
    "UnschedulablePodUpdatePodToleration": "the pod got a new toleration",
    "NodeDelete": "a node was deleted",
    "ScheduleAttemptFailure": "its scheduling attempt failed",
    "BackoffComplete": "its backoff ended",
    "PopFromBackoffQ": "popped from backoffQ while activeQ was empty (SchedulerPopFromBackoffQ)",
    "UnschedulableTimeout": "longer than podMaxInUnschedulablePodsDuration in unschedulablePods",
    "Popped": "popped from activeQ",
    "LeaseExpired": "its worker's lease ran out: given back",
    "Done": "bound, or no longer this scheduler's",
    "Deleted": "the pod was deleted",
}


@dataclass
class TimelineRow:
    at: datetime | None
    queue: str
    event: str
    title: str = ""
    via: str = ""
    detail: str = ""


def _when(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=dt_timezone.utc)


def queue_timeline(namespace: str, name: str, pod: Pod | None) -> list[TimelineRow]:
    """The rows, oldest first. The queue's record is by name: a pod deleted and created again under it starts
    after its predecessor's deletion mark (a deleted pod's page shows that pod's moves, up to its deletion)."""
    entries = get_queue().timeline(f"{namespace}/{name}")
    marks = [i for i, e in enumerate(entries) if e.queue == "" and e.event == TIMELINE_DELETED]
    if pod is not None and marks:
        entries = entries[marks[-1] + 1:]
    elif marks:  # this page's pod was deleted: its own moves, after any predecessor's
        entries = entries[(marks[-2] + 1 if len(marks) > 1 else 0):marks[-1] + 1]
    out = [TimelineRow(at=_when(e.at), queue=QUEUE_LABELS.get(e.queue, e.queue), event=e.event,
                       title=EVENT_TITLES.get(e.event, "a cluster event"),
                       via="queueing hint" if e.via == VIA_HINT else "") for e in entries]
    # The queue's clock and the database's may differ (tests move the queue's by hand): the queue's moves keep
    # their order, and each fact from the database goes where its time puts it among them (last without one).
    for fact in _facts(pod):
        index = len(out) if fact.at is None else next(
            (i for i, r in enumerate(out) if r.at is not None and r.at > fact.at), len(out))
        out.insert(index, fact)
    return out


def _facts(pod: Pod | None) -> list[TimelineRow]:
    if pod is None:
        return []
    facts = []
    gates = gates_of(pod.manifest)
    if gates:
        facts.append(TimelineRow(at=pod.created_at, queue="gated: not queued", event="SchedulingGated",
                                 title="PreEnqueue: SchedulingGates", detail="gates: " + ", ".join(gates)))
    elif pod.ungated_at is not None:
        facts.append(TimelineRow(at=pod.ungated_at, queue="", event="SchedulingGatesRemoved",
                                 title="its last scheduling gate was removed: queued"))
    if pod.nominated_node and not pod.node_name:
        preemption = Preemption.objects.filter(preemptor_uid=pod.uid).only("created_at").first() if pod.uid else None
        facts.append(TimelineRow(at=preemption.created_at if preemption else None, queue="", event="NominatedNode",
                                 title="status.nominatedNodeName: its preemption made room there",
                                 detail=f"nominated node {pod.nominated_node}"))
    return facts
