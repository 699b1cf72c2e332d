"""A Deployment's status and conditions (sync.go calculateStatus, progress.go syncRolloutStatus,
checkPausedConditions): the counts summed over its ReplicaSets' statuses (as the ReplicaSet controller last
wrote them), Available when at least replicas - maxUnavailable pods are available, and Progressing as the
rollout goes (ReplicaSetUpdated, NewReplicaSetAvailable, ProgressDeadlineExceeded past
progressDeadlineSeconds without progress). Status fields are omitted when zero, as encoding/json's
omitempty leaves them out."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta

from django.utils.dateparse import parse_datetime

from .deployment_util import (MINIMUM_REPLICAS_AVAILABLE, MINIMUM_REPLICAS_UNAVAILABLE, NEW_RS_AVAILABLE, PAUSED,
                              REPLICA_SET_UPDATED, RESUMED, RS, TIMED_OUT, Deployment, deployment_complete,
                              has_progress_deadline, max_unavailable, replica_count, status_count)

AVAILABLE, PROGRESSING, REPLICA_FAILURE = "Available", "Progressing", "ReplicaFailure"


def rfc3339(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(status: dict, kind: str) -> dict | None:
    return next((c for c in status.get("conditions") or () if c.get("type") == kind), None)


def new_condition(kind: str, status: str, reason: str, message: str, now: datetime) -> dict:
    return {"type": kind, "status": status, "lastUpdateTime": rfc3339(now), "lastTransitionTime": rfc3339(now),
            "reason": reason, "message": message}


def set_condition(status: dict, cond: dict) -> None:
    """SetDeploymentCondition: nothing when one of the type has the same status and reason; the transition
    time kept when only the reason changes."""
    current = condition(status, cond["type"])
    if current is not None and current["status"] == cond["status"] and current.get("reason") == cond.get("reason"):
        return
    if current is not None and current["status"] == cond["status"]:
        cond = {**cond, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_condition(status, cond["type"])
    status.setdefault("conditions", []).append(cond)


def remove_condition(status: dict, kind: str) -> None:
    kept = [c for c in status.get("conditions") or () if c.get("type") != kind]
    if kept:
        status["conditions"] = kept
    else:
        status.pop("conditions", None)


def calculate_status(all_rses: list[RS | None], new: RS | None, d: Deployment, now: datetime) -> dict:
    available = status_count(all_rses, "availableReplicas")
    total = replica_count(all_rses)
    counts = {"observedGeneration": d.generation,
              "replicas": status_count(all_rses, "replicas"),
              "updatedReplicas": status_count([new], "replicas"),
              "readyReplicas": status_count(all_rses, "readyReplicas"),
              "availableReplicas": available,
              "unavailableReplicas": max(0, total - available)}
    status = {k: v for k, v in counts.items() if v}
    # DeploymentReplicaSetTerminatingReplicas (beta, on): a pointer, so 0 is written; nil when one set has none.
    terminating = [rs.status.get("terminatingReplicas") for rs in all_rses if rs is not None]
    if all(isinstance(t, int) for t in terminating):
        status["terminatingReplicas"] = sum(terminating)
    for c in d.status.get("conditions") or ():
        status.setdefault("conditions", []).append(copy.deepcopy(c))
    if d.collision_count is not None:
        status["collisionCount"] = d.collision_count
    if available >= d.replicas - max_unavailable(d):
        set_condition(status, new_condition(AVAILABLE, "True", MINIMUM_REPLICAS_AVAILABLE,
                                            "Deployment has minimum availability.", now))
    else:
        set_condition(status, new_condition(AVAILABLE, "False", MINIMUM_REPLICAS_UNAVAILABLE,
                                            "Deployment does not have minimum availability.", now))
    return status


def _progressing(d: Deployment, new_status: dict) -> bool:
    """DeploymentProgressing: more updated, ready or available pods, or fewer old ones, than last written."""
    old = d.status

    def n(s, k):
        return int(s.get(k) or 0)
    return (n(new_status, "updatedReplicas") > n(old, "updatedReplicas")
            or n(new_status, "replicas") - n(new_status, "updatedReplicas") < n(old, "replicas") - n(old, "updatedReplicas")
            or n(new_status, "readyReplicas") > n(old, "readyReplicas")
            or n(new_status, "availableReplicas") > n(old, "availableReplicas"))


def _timed_out(d: Deployment, new_status: dict, now: datetime) -> bool:
    """DeploymentTimedOut: no progress reported for progressDeadlineSeconds."""
    if not has_progress_deadline(d):
        return False
    cond = condition(new_status, PROGRESSING)
    if cond is None or cond.get("reason") == NEW_RS_AVAILABLE:
        return False
    if cond.get("reason") == TIMED_OUT:
        return True
    since = parse_datetime(str(cond.get("lastUpdateTime") or ""))
    return since is not None and since + timedelta(seconds=d.progress_deadline) < now


def rollout_status(all_rses: list[RS | None], new: RS | None, d: Deployment, now: datetime) -> dict:
    """syncRolloutStatus: the status with the Progressing and ReplicaFailure conditions brought up to date."""
    status = calculate_status(all_rses, new, d, now)
    if not has_progress_deadline(d):
        remove_condition(status, PROGRESSING)
    current = condition(d.status, PROGRESSING)
    complete_before = (int(status.get("replicas") or 0) == int(status.get("updatedReplicas") or 0)
                       and current is not None and current.get("reason") == NEW_RS_AVAILABLE)
    if has_progress_deadline(d) and not complete_before:
        subject = f'ReplicaSet "{new.name}"' if new is not None else f'Deployment "{d.name}"'
        if deployment_complete(d, status):
            set_condition(status, new_condition(PROGRESSING, "True", NEW_RS_AVAILABLE,
                                                f"{subject} has successfully progressed.", now))
        elif _progressing(d, status):
            cond = new_condition(PROGRESSING, "True", REPLICA_SET_UPDATED, f"{subject} is progressing.", now)
            if current is not None:
                if current["status"] == "True":
                    cond["lastTransitionTime"] = current.get("lastTransitionTime")
                remove_condition(status, PROGRESSING)
            set_condition(status, cond)
        elif _timed_out(d, status, now):
            set_condition(status, new_condition(PROGRESSING, "False", TIMED_OUT,
                                                f"{subject} has timed out progressing.", now))
    failures = [c for rs in ([new] if new is not None else []) for c in rs.status.get("conditions") or ()
                if c.get("type") == REPLICA_FAILURE]
    if not failures:
        failures = [c for rs in all_rses if rs is not None for c in rs.status.get("conditions") or ()
                    if c.get("type") == REPLICA_FAILURE]
    if failures:
        c = failures[0]
        set_condition(status, {"type": c["type"], "status": c["status"],
                               "lastUpdateTime": c.get("lastTransitionTime"),
                               "lastTransitionTime": c.get("lastTransitionTime"),
                               "reason": c.get("reason"), "message": c.get("message")})
    else:
        remove_condition(status, REPLICA_FAILURE)
    return status


def paused_conditions(d: Deployment, now: datetime) -> bool:
    """checkPausedConditions: Progressing Unknown DeploymentPaused / DeploymentResumed; True when it changed."""
    if not has_progress_deadline(d):
        return False
    cond = condition(d.status, PROGRESSING)
    if cond is not None and cond.get("reason") == TIMED_OUT:
        return False
    paused_before = cond is not None and cond.get("reason") == PAUSED
    if d.paused and not paused_before:
        set_condition(d.status, new_condition(PROGRESSING, "Unknown", PAUSED, "Deployment is paused", now))
        return True
    if not d.paused and paused_before:
        set_condition(d.status, new_condition(PROGRESSING, "Unknown", RESUMED, "Deployment is resumed", now))
        return True
    return False
