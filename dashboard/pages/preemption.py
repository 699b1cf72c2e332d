"""What the pages show of preemption: an attempt's PostFilter outcome (the nominated node, the victims
and the candidates weighed, as engine/explain.preemption stored it in the attempt's trace), and who
preempted a pod (its "Preempted" event names the preemptor's uid)."""

from __future__ import annotations

import re

from scheduler.models import Attempt, Event, Pod

_PREEMPTED = re.compile(r"^Preempted by pod (\S+) on node (\S+)$")


def _pod_link(key: str) -> dict:
    namespace, _, name = key.partition("/")
    return {"key": key, "namespace": namespace, "name": name}


def attempt_preemption(trace: dict | None) -> dict | None:
    """The attempt's preemption outcome for the template, victims as links; None when PostFilter did not run."""
    outcome = (trace or {}).get("preemption")
    if not outcome:
        return None
    return {**outcome,
            "victim_links": [_pod_link(v) for v in outcome.get("victims") or ()],
            "candidates": [{**c, "victim_links": [_pod_link(v) for v in c.get("victims") or ()]}
                           for c in outcome.get("candidates") or ()],
            "cleared_links": [_pod_link(v) for v in outcome.get("cleared_nominations") or ()]}


def preempted_by(namespace: str, name: str) -> dict | None:
    """The preemptor of this (victim) pod, from its Preempted event: its key when it is known, its uid, the
    node, and the attempt that chose the victim."""
    event = (Event.objects.filter(involved_kind="Pod", involved_namespace=namespace, involved_name=name,
                                  reason="Preempted").order_by("-last_timestamp").first())
    if event is None:
        return None
    m = _PREEMPTED.match(event.message)
    if m is None:
        return None
    uid, node = m.groups()
    key = None
    row = Pod.objects.filter(uid=uid).values_list("namespace", "name").first()
    attempt = (Attempt.objects.filter(pod_uid=uid, trace__preemption__nominated=node).order_by("-started_at")
               .only("pk", "namespace", "pod_name").first())
    if row is not None:
        key = f"{row[0]}/{row[1]}"
    elif attempt is not None:
        key = f"{attempt.namespace}/{attempt.pod_name}"
    return {"uid": uid, "node": node, "preemptor": _pod_link(key) if key else None,
            "attempt": attempt.pk if attempt is not None else None, "when": event.last_timestamp}
