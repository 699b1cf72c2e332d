"""Preemption's API calls on a real cluster, made by the lease holder's committer (upstream's
prepareCandidate): the preemptor's status.nominatedNodeName patched, then for each victim the
DisruptionTarget condition patched on its status, the pod deleted (its uid as a precondition, so a pod
recreated under the name is never hit), and the "Preempted" event posted, regarding the victim and
related to the preemptor.

Idempotent (a job may be taken again by the next leader): a victim already gone (404) or replaced (409 on
the uid precondition) counts as done; nothing happens for a preemptor gone or nominated elsewhere since.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

from ..cluster.preemption import PREEMPTION_BY_SCHEDULER, still_preempting, victim_condition_message
from .client import ApiError, Backoff, call
from .events import STRATEGIC_MERGE_PATCH, pod_reference

log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def preempt_through_api(core, recorder, job: dict) -> list[str]:
    """The job's API calls; the keys of the victims deleted now."""
    if not still_preempting(job):
        return []
    p, node = job["preemptor"], job["node"]
    backoff = Backoff(attempts=4)
    try:
        call(core.patch_namespaced_pod_status, p["name"], p["namespace"],
             {"metadata": {"uid": p["uid"]}, "status": {"nominatedNodeName": node}},
             _content_type=STRATEGIC_MERGE_PATCH, backoff=backoff)
    except ApiError as exc:
        if exc.status in (404, 409):
            return []  # the preemptor is gone (or replaced): its victims stay
        raise
    preemptor_ref = pod_reference(p["namespace"], p["name"], p["uid"])
    message = victim_condition_message(p.get("scheduler") or "default-scheduler")
    deleted = []
    for v in job["victims"]:
        condition = {"type": "DisruptionTarget", "status": "True", "reason": PREEMPTION_BY_SCHEDULER,
                     "message": message, "lastTransitionTime": _now()}
        try:
            call(core.patch_namespaced_pod_status, v["name"], v["namespace"],
                 {"metadata": {"uid": v["uid"]}, "status": {"conditions": [condition]}},
                 _content_type=STRATEGIC_MERGE_PATCH, backoff=backoff)
            call(core.delete_namespaced_pod, v["name"], v["namespace"],
                 body={"preconditions": {"uid": v["uid"]}}, backoff=backoff)
        except ApiError as exc:
            if exc.status in (404, 409):
                continue  # already gone, or another pod under the name now
            raise
        deleted.append(f"{v['namespace']}/{v['name']}")
        recorder.eventf(pod_reference(v["namespace"], v["name"], v["uid"]), type="Normal", reason="Preempted",
                        action="Preempting", note=f"Preempted by pod {p['uid']} on node {node}",
                        reporting_controller=p.get("scheduler") or "default-scheduler", related=preemptor_ref)
    for c in job.get("cleared") or ():
        # As prepareCandidate: lower-priority pods nominated to the node lose their nomination.
        try:
            call(core.patch_namespaced_pod_status, c["name"], c["namespace"],
                 {"metadata": {"uid": c["uid"]}, "status": {"nominatedNodeName": None}},
                 _content_type=STRATEGIC_MERGE_PATCH, backoff=backoff)
        except ApiError as exc:
            if exc.status not in (404, 409):
                log.warning("could not clear the nomination of %s/%s: %s", c["namespace"], c["name"], exc)
    return deleted
