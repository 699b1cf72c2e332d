"""Preemption's second half, as upstream's async preemption (prepareCandidateAsync): the scheduling
cycle chose the node and the victims and nominated the preemptor (schedule.py); this task, sent by name
after that batch committed, has the backend evict the victims, then activates the preemptor, which
binds once the room is free (the nominator keeps lower-priority pods off it meanwhile).

A worker dying mid-task loses nothing: the task is acked late and idempotent (victims by uid), the preemption
stays recorded (state/preemptions.py) and the preemptor held while a victim is there, and the reconciler sends
the task again.
"""

from __future__ import annotations

import logging

from ..backends import get_backend
from ..queue.kick import kick
from ..queue.queues import get_queue
from ..state.preemptions import preemption_done

log = logging.getLogger(__name__)


def run_preempt(job: dict) -> dict:
    p = job["preemptor"]
    try:
        evicted = get_backend().preempt(job)
    except BaseException:
        preemption_done(job)  # it may retry (and preempt again) at once, as upstream's goroutine failing
        get_queue().update(f"{p['namespace']}/{p['name']}", int(p.get("priority") or 0))
        raise
    if evicted is None:
        # Handed to whoever talks to the cluster (the kubernetes backend's leader, which ends the preemption):
        # the victims' deletions, seen by the mirror, move the preemptor then.
        return {"victims": 0, "deferred": True}
    preemption_done(job)
    # As the async preemption's end: the preemptor is activated (the victims' deletions also move it).
    get_queue().update(f"{p['namespace']}/{p['name']}", int(p.get("priority") or 0))
    kick()
    if evicted:
        log.info("pod %s/%s preempted %s on node %s", p["namespace"], p["name"], ", ".join(evicted), job["node"])
    return {"victims": len(evicted)}
