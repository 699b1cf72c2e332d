"""Preemption's second half, as upstream's async preemption (prepareCandidateAsync): the scheduling
cycle chose the node and the victims and nominated the preemptor (schedule.py); this task, sent by name
after that batch committed, has the backend evict the victims, then activates the preemptor, which
binds once the room is free (the nominator keeps lower-priority pods off it meanwhile).

A worker dying mid-task loses nothing: the task is acked late and idempotent (victims by uid), and
the preemptor, still nominated, simply preempts again at its next attempt.
"""

from __future__ import annotations

import logging

from ..backends import get_backend
from ..queue import preempting
from ..queue.kick import kick
from ..queue.queues import get_queue

log = logging.getLogger(__name__)


def run_preempt(job: dict) -> dict:
    p = job["preemptor"]
    try:
        evicted = get_backend().preempt(job)
    except BaseException:
        preempting.clear(p["uid"])  # it may retry (and preempt again) at once
        raise
    if evicted is None:
        # Handed to whoever talks to the cluster (the kubernetes backend's leader, which clears the mark):
        # the victims' deletions, seen by the mirror, move the preemptor then.
        return {"victims": 0, "deferred": True}
    preempting.clear(p["uid"])
    # As the async preemption's end: the preemptor is activated (the victims' deletions also move it).
    get_queue().update(f"{p['namespace']}/{p['name']}", int(p.get("priority") or 0))
    kick()
    if evicted:
        log.info("pod %s/%s preempted %s on node %s", p["namespace"], p["name"], ", ".join(evicted), job["node"])
    return {"victims": len(evicted)}
