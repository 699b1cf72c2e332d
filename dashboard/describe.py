"""What `kubectl describe pod` prints, as data for a template: the spec summary and the Events rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from scheduler.engine import scheduling_gates
from scheduler.kubectl.printers import human_duration, pod_status
from scheduler.models import Event, Pod


@dataclass(frozen=True)
class EventRow:
    type: str
    reason: str
    age: str
    source: str
    message: str
    last_timestamp: datetime


def _since(ts: datetime | None, now: datetime) -> str:
    # As translateTimestampSince.
    if ts is None:
        return "<unknown>"
    return human_duration((now - ts).total_seconds())


def event_rows(events: list[Event], *, now: datetime) -> list[EventRow]:
    """As kubectl's DescribeEvents: oldest first; Age is "<last> (xN over <first>)" for a repeated event."""
    rows = []
    for e in sorted(events, key=lambda e: (e.last_timestamp, e.id)):
        first = _since(e.first_timestamp, now)
        age = f"{_since(e.last_timestamp, now)} (x{e.count} over {first})" if e.count > 1 else first
        rows.append(EventRow(e.type, e.reason, age, e.reporting_controller, e.message.strip(), e.last_timestamp))
    return rows


def _requests(container: dict) -> str:
    requests = ((container.get("resources") or {}).get("requests") or {})
    return ", ".join(f"{k}: {v}" for k, v in requests.items()) or "<none>"


def _toleration(t: dict) -> str:
    # As describe's printPodTolerationsMultiline: key[=value][:effect][ op=Exists][ for Ns].
    key = t.get("key") or ""
    out = key
    if t.get("value"):
        out += f"={t['value']}"
    if t.get("effect"):
        out += f":{t['effect']}"
    if t.get("operator") == "Exists" and not t.get("value"):
        out += " op=Exists" if out else "op=Exists"  # a bare Exists tolerates everything
    if t.get("tolerationSeconds") is not None:
        out += f" for {t['tolerationSeconds']}s"
    return out


def pod_summary(pod: Pod) -> list[tuple[str, object]]:
    """The describe fields that matter to scheduling, in describe's order and wording."""
    spec = pod.manifest.get("spec") or {}
    meta = pod.manifest.get("metadata") or {}
    selector = spec.get("nodeSelector") or {}
    containers = [(c.get("name", ""), c.get("image", ""), _requests(c)) for c in spec.get("containers") or []]
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity")
    condition = pod.scheduled_status or "<none>"
    if pod.scheduled_reason:
        condition += f" ({pod.scheduled_reason})"
    status = pod_status(pod)
    if status == scheduling_gates.REASON:
        status = pod.phase  # describe prints the phase; only `get`'s STATUS column reads SchedulingGated
    gates = [("Scheduling Gates", ", ".join(scheduling_gates.gates_of(pod.manifest)))] if scheduling_gates.gates_of(pod.manifest) else []
    return [
        ("Name", pod.name),
        ("Namespace", pod.namespace),
        ("Priority", pod.priority),
        ("Scheduler", pod.scheduler_name),
        ("Node", pod.node_name or (f"{pod.assumed_node} (assumed, binding)" if pod.assumed_node else "<none>")),
        ("Labels", ", ".join(f"{k}={v}" for k, v in (meta.get("labels") or {}).items()) or "<none>"),
        ("Status", status),
        ("PodScheduled", condition),
        ("Attempts", pod.attempts),
        ("Containers", containers),
        ("Node-Selectors", ", ".join(f"{k}={v}" for k, v in selector.items()) or "<none>"),
        ("Node affinity", "required and/or preferred terms set" if node_affinity else "<none>"),
        ("Tolerations", ", ".join(_toleration(t) for t in spec.get("tolerations") or []) or "<none>"),
        *gates,  # as describe: only when the pod has some
    ]
