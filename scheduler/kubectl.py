"""What `kubectl get` prints, from our rows: tables (default and -o wide) and v1 objects (-o json).

Objects carry what kube-scheduler leaves on them: spec.nodeName, status.phase and the
PodScheduled condition.
"""

from __future__ import annotations

import copy
from datetime import datetime

from django.utils import timezone

from .models import Event, Node, Pod


def _rfc3339(dt: datetime | None) -> str | None:
    return dt.astimezone(timezone.UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if dt else None


def human_duration(seconds: float) -> str:
    """As k8s.io/apimachinery duration.HumanDuration (the AGE column)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60 * 2:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rem = s % 60
        return f"{minutes}m{rem}s" if rem else f"{minutes}m"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rem = minutes % 60
        return f"{hours}h{rem}m" if rem else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rem = hours % 24
        return f"{hours // 24}d{rem}h" if rem else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24
        rem = days % 365
        return f"{days // 365}y{rem}d" if rem else f"{days // 365}y"
    return f"{hours // 24 // 365}y"


def table(headers: list[str], rows: list[list[str]]) -> str:
    """kubectl's column layout: left-aligned, three spaces between columns."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]
    lines = []
    for row in [headers, *rows]:
        cells = [c.ljust(w) for c, w in zip(row, widths)]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines)


# ---- pods -------------------------------------------------------------------------------

def pod_status(pod: Pod) -> str:
    if pod.deleting:
        return "Terminating"
    return pod.phase


def pod_object(pod: Pod) -> dict:
    obj = copy.deepcopy(pod.manifest)
    obj.setdefault("apiVersion", "v1")
    obj.setdefault("kind", "Pod")
    spec = obj.setdefault("spec", {})
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    status = {"phase": pod.phase}
    if pod.scheduled_status:
        condition = {"type": "PodScheduled", "status": pod.scheduled_status,
                     "lastProbeTime": None, "lastTransitionTime": _rfc3339(pod.scheduled_transition_at or pod.bound_at)}
        if pod.scheduled_reason:
            condition["reason"] = pod.scheduled_reason
        if pod.scheduled_message:
            condition["message"] = pod.scheduled_message
        status["conditions"] = [condition]
    obj["status"] = status
    return obj


def pods_table(pods: list[Pod], *, all_namespaces: bool, wide: bool, now: datetime) -> str:
    headers = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    if wide:
        headers += ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
    if all_namespaces:
        headers = ["NAMESPACE", *headers]
    rows = []
    for pod in pods:
        containers = len((pod.manifest.get("spec") or {}).get("containers") or [])
        ready = containers if pod.phase == Pod.RUNNING and not pod.deleting else 0
        row = [pod.name, f"{ready}/{containers}", pod_status(pod), "0", human_duration((now - pod.created_at).total_seconds())]
        if wide:
            row += ["<none>", pod.node_name or "<none>", "<none>", "<none>"]
        if all_namespaces:
            row = [pod.namespace, *row]
        rows.append(row)
    return table(headers, rows)


# ---- nodes ------------------------------------------------------------------------------

def node_status(node: Node) -> str:
    return "Ready,SchedulingDisabled" if node.unschedulable else "Ready"


def node_object(node: Node) -> dict:
    obj = copy.deepcopy(node.manifest)
    obj.setdefault("apiVersion", "v1")
    obj.setdefault("kind", "Node")
    return obj


def _cpu(m: int) -> str:
    return f"{m // 1000}" if m % 1000 == 0 else f"{m}m"


def _mem(b: int) -> str:
    for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if b >= size and b % size == 0:
            return f"{b // size}{unit}"
    if b >= 1 << 30:
        return f"{b / (1 << 30):.1f}Gi"
    if b >= 1 << 20:
        return f"{b / (1 << 20):.0f}Mi"
    return str(b)


def nodes_table(nodes: list[Node], *, wide: bool, now: datetime) -> str:
    headers = ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "CPU(REQ/ALLOC)", "MEMORY(REQ/ALLOC)", "PODS(REQ/ALLOC)"]
    if wide:
        headers += ["TAINTS", "ZONE"]
    rows = []
    for node in nodes:
        labels = (node.manifest.get("metadata") or {}).get("labels") or {}
        roles = ",".join(sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))) or "<none>"
        version = ((node.manifest.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion") or "<none>"
        row = [node.name, node_status(node), roles, human_duration((now - node.created_at).total_seconds()), version,
               f"{_cpu(node.req_cpu)}/{_cpu(node.alloc_cpu)}", f"{_mem(node.req_memory)}/{_mem(node.alloc_memory)}",
               f"{node.req_pods}/{node.alloc_pods}"]
        if wide:
            taints = (node.manifest.get("spec") or {}).get("taints") or []
            row += [",".join(f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}" for t in taints) or "<none>",
                    labels.get("topology.kubernetes.io/zone", "<none>")]
        rows.append(row)
    return table(headers, rows)


# ---- events -----------------------------------------------------------------------------

def event_object(e: Event) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{e.involved_name}.{e.pk:x}", "namespace": e.involved_namespace or "default"},
        "involvedObject": {"kind": e.involved_kind, "namespace": e.involved_namespace, "name": e.involved_name,
                           "uid": e.involved_uid, "apiVersion": "v1"},
        "type": e.type,
        "reason": e.reason,
        "action": e.action,
        "message": e.message,
        "count": e.count,
        "firstTimestamp": _rfc3339(e.first_timestamp),
        "lastTimestamp": _rfc3339(e.last_timestamp),
        "source": {"component": e.reporting_controller},
        "reportingComponent": e.reporting_controller,
        "reportingInstance": "",
    }


def events_table(events: list[Event], *, all_namespaces: bool, wide: bool, now: datetime) -> str:
    headers = ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    if wide:
        headers = ["LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN", "COUNT", "NAME"]
    if all_namespaces:
        headers = ["NAMESPACE", *headers]
    rows = []
    for e in events:
        last = human_duration((now - e.last_timestamp).total_seconds())
        obj = f"{e.involved_kind.lower()}/{e.involved_name}"
        if wide:
            row = [last, e.type, e.reason, obj, "", e.reporting_controller, e.message,
                   human_duration((now - e.first_timestamp).total_seconds()), str(e.count), f"{e.involved_name}.{e.pk:x}"]
        else:
            row = [last, e.type, e.reason, obj, e.message]
        if all_namespaces:
            row = [e.involved_namespace, *row]
        rows.append(row)
    return table(headers, rows)


def v1_list(items: list[dict]) -> dict:
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
