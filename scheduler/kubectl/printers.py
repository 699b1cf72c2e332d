"""What `kubectl get` prints, from our rows: tables (default and -o wide) and v1 objects (-o json).

Objects carry what kube-scheduler leaves on them: spec.nodeName, status.phase and the
PodScheduled condition.
"""

from __future__ import annotations

import copy
import json
import sys

import yaml
from datetime import datetime, timezone as dt_timezone

from django.core.management.base import BaseCommand, CommandError

from ..engine import scheduling_gates
from ..models import Event, Node, Pod


def _rfc3339(dt: datetime | None) -> str | None:
    return dt.astimezone(dt_timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if dt else None


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


# As cli-runtime's printers.GetNewTabWriter: text/tabwriter with minwidth 6, padding 3, ' '.
TABWRITER_MIN_WIDTH = 6
TABWRITER_PADDING = 3


def table(headers: list[str], rows: list[list[str]]) -> str:
    """kubectl's column layout: cells are tab-terminated except the last, so every column but
    the last is padded to max(widest cell + 3, 6) and the last one is not padded at all."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]
    widths = [max(w + TABWRITER_PADDING, TABWRITER_MIN_WIDTH) for w in widths]
    lines = []
    for row in [headers, *rows]:
        lines.append("".join(c.ljust(w) for c, w in zip(row[:-1], widths)) + row[-1])
    return "\n".join(lines)


class _GoYamlEmitter(yaml.emitter.Emitter):
    """Where PyYAML would single-quote a scalar (one that would read back as another type, or cannot be
    plain), go-yaml double-quotes it: `resourceVersion: ""`, `creationTimestamp: "2026-12-01T10:00:00Z"`."""

    def choose_scalar_style(self):
        style = super().choose_scalar_style()
        return '"' if style == "'" else style


class _GoYamlDumper(_GoYamlEmitter, yaml.serializer.Serializer, yaml.representer.SafeRepresenter,
                    yaml.resolver.Resolver):
    def __init__(self, stream, **kwargs):
        _GoYamlEmitter.__init__(self, stream, width=kwargs.get("width"), allow_unicode=True)
        yaml.serializer.Serializer.__init__(self)
        yaml.representer.SafeRepresenter.__init__(self, sort_keys=True)
        yaml.resolver.Resolver.__init__(self)


def go_yaml(obj) -> str:
    """As kubectl -o yaml (sigs.k8s.io/yaml: the JSON re-read as YAML, so map keys sorted; lists not indented
    under their key; no line wrapping)."""
    return yaml.dump(obj, Dumper=_GoYamlDumper, default_flow_style=False, width=2**31 - 1)


def go_json(obj) -> str:
    """As kubectl -o json (Go's json.MarshalIndent, 4 spaces): UTF-8 kept, <, > and & escaped."""
    text = json.dumps(obj, indent=4, ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


class KubectlError(CommandError):
    """A failure the command has already explained on stderr, as kubectl does: from the command
    line, the optional summary is printed as `error: ...` (no "CommandError:") and the exit status
    is 1; from call_command it is raised like any CommandError."""

    def __init__(self, summary: str = ""):
        super().__init__(summary, returncode=1)
        self.summary = summary


class KubectlCommand(BaseCommand):
    def execute(self, *args, **options):
        try:
            return super().execute(*args, **options)
        except KubectlError as e:
            if not getattr(self, "_called_from_command_line", False) or options.get("traceback"):
                raise
            if e.summary:
                self.stderr.write(f"error: {e.summary}")
            sys.exit(e.returncode)


# ---- pods -------------------------------------------------------------------------------

def pod_status(pod: Pod) -> str:
    # As printPod: the phase, or Terminating once a deletionTimestamp is set on a non-terminal pod.
    # A PodScheduled condition with reason SchedulingGated reads SchedulingGated (before Terminating, as printPod).
    if pod.deleting and pod.phase not in ("Succeeded", "Failed"):
        return "Terminating"
    if pod.scheduled_status == "False" and pod.scheduled_reason == scheduling_gates.REASON:
        return scheduling_gates.REASON
    return pod.phase


def _sidecar(container: dict) -> bool:
    # As podutil.IsRestartableInitContainer: an init container with restartPolicy Always.
    return isinstance(container, dict) and container.get("restartPolicy") == "Always"


def pod_ready(pod: Pod) -> str:
    """READY as printPod: regular containers plus sidecars; in the simulation a bound pod's
    containers are all running and ready (there is no kubelet to say otherwise)."""
    spec = pod.manifest.get("spec") or {}
    total = len(spec.get("containers") or []) + sum(1 for c in spec.get("initContainers") or [] if _sidecar(c))
    ready = total if pod.phase == Pod.RUNNING and not pod.deleting else 0
    return f"{ready}/{total}"


def pod_readiness_gates(pod: Pod, conditions: list[dict]) -> str:
    gates = (pod.manifest.get("spec") or {}).get("readinessGates") or []
    if not gates:
        return "<none>"
    true = {c.get("type") for c in conditions if c.get("status") == "True"}
    return f"{sum(1 for g in gates if isinstance(g, dict) and g.get('conditionType') in true)}/{len(gates)}"


def pod_object(pod: Pod) -> dict:
    obj = copy.deepcopy(pod.manifest)
    obj.setdefault("apiVersion", "v1")
    obj.setdefault("kind", "Pod")
    spec = obj.setdefault("spec", {})
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    status = {"phase": pod.phase}
    if pod.nominated_node:
        status["nominatedNodeName"] = pod.nominated_node
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
        row = [pod.name, pod_ready(pod), pod_status(pod), "0", human_duration((now - pod.created_at).total_seconds())]
        if wide:
            nominated = pod.nominated_node or ((pod.manifest.get("status") or {}).get("nominatedNodeName")) or "<none>"
            conditions = [{"type": "PodScheduled", "status": pod.scheduled_status}] if pod.scheduled_status else []
            row += ["<none>", pod.node_name or "<none>", nominated, pod_readiness_gates(pod, conditions)]
        if all_namespaces:
            row = [pod.namespace, *row]
        rows.append(row)
    return table(headers, rows)


# ---- nodes ------------------------------------------------------------------------------

def node_status(node: Node) -> str:
    """As printNode: Ready or NotReady from the Ready condition, then SchedulingDisabled.

    kubectl says Unknown for a node without a Ready condition; a simulated node with no
    conditions is ready by construction, so it reads Ready.
    """
    conditions = (node.manifest.get("status") or {}).get("conditions") or []
    ready = [c for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"]
    status = ["Ready" if not ready or ready[-1].get("status") == "True" else "NotReady"]
    if node.unschedulable:
        status.append("SchedulingDisabled")
    return ",".join(status)


def node_roles(labels: dict) -> str:
    # As findNodeRoles: node-role.kubernetes.io/<role> keys and the kubernetes.io/role value, sorted.
    roles = set()
    for key, value in labels.items():
        if key.startswith("node-role.kubernetes.io/") and key[len("node-role.kubernetes.io/"):]:
            roles.add(key[len("node-role.kubernetes.io/"):])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


def _node_address(node: Node, kind: str) -> str:
    for address in (node.manifest.get("status") or {}).get("addresses") or []:
        if isinstance(address, dict) and address.get("type") == kind:
            return str(address.get("address"))
    return "<none>"


def node_object(node: Node) -> dict:
    obj = copy.deepcopy(node.manifest)
    obj.setdefault("apiVersion", "v1")
    obj.setdefault("kind", "Node")
    return obj


def _cpu(m: int) -> str:
    return f"{m // 1000}" if m % 1000 == 0 else f"{m}m"


def _mem(b: int) -> str:
    # As resource.Quantity.String() for BinarySI bytes: the largest exact power-of-1024 suffix,
    # else the plain number (below 1Ki always plain).
    if b < 1024:
        return str(b)
    for unit, size in (("Ei", 1 << 60), ("Pi", 1 << 50), ("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if b % size == 0:
            return f"{b // size}{unit}"
    return str(b)


NODE_HEADERS = ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
NODE_WIDE_HEADERS = ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]
# Ours, after kubectl's columns (as `-L` label columns are): what the scheduler sees.
NODE_USAGE_HEADERS = ["CPU(REQ/ALLOC)", "MEMORY(REQ/ALLOC)", "PODS(REQ/ALLOC)"]
NODE_EXTRA_WIDE_HEADERS = ["TAINTS", "ZONE"]


def _taint(t: dict) -> str:
    value = t.get("value")
    return f"{t.get('key')}{'=' + str(value) if value else ''}:{t.get('effect')}"


def nodes_table(nodes: list[Node], *, wide: bool, now: datetime) -> str:
    headers = NODE_HEADERS + (NODE_WIDE_HEADERS if wide else []) + NODE_USAGE_HEADERS
    if wide:
        headers += NODE_EXTRA_WIDE_HEADERS
    rows = []
    for node in nodes:
        labels = (node.manifest.get("metadata") or {}).get("labels") or {}
        info = (node.manifest.get("status") or {}).get("nodeInfo") or {}
        # As printNode: VERSION is kubeletVersion as it is, empty when unset.
        row = [node.name, node_status(node), node_roles(labels), human_duration((now - node.created_at).total_seconds()),
               str(info.get("kubeletVersion") or "")]
        if wide:
            row += [_node_address(node, "InternalIP"), _node_address(node, "ExternalIP"),
                    str(info.get("osImage") or "<unknown>"), str(info.get("kernelVersion") or "<unknown>"),
                    str(info.get("containerRuntimeVersion") or "<unknown>")]
        row += [f"{_cpu(node.req_cpu)}/{_cpu(node.alloc_cpu)}", f"{_mem(node.req_memory)}/{_mem(node.alloc_memory)}",
                f"{node.req_pods}/{node.alloc_pods}"]
        if wide:
            taints = [t for t in (node.manifest.get("spec") or {}).get("taints") or [] if isinstance(t, dict)]
            row += [",".join(_taint(t) for t in taints) or "<none>", labels.get("topology.kubernetes.io/zone", "<none>")]
        rows.append(row)
    return table(headers, rows)


# ---- events -----------------------------------------------------------------------------

def event_namespace(e: Event) -> str:
    # Events about cluster-scoped objects (nodes) live in the default namespace, as upstream's recorder puts them.
    return e.involved_namespace or "default"


def event_name(e: Event) -> str:
    # As the event recorder's names: the object's name, a dot and a unique hex suffix.
    return f"{e.involved_name}.{e.pk:x}"


def event_object(e: Event) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": event_name(e), "namespace": event_namespace(e)},
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
            row = [last, e.type, e.reason, obj, "", e.reporting_controller, e.message.strip(),
                   human_duration((now - e.first_timestamp).total_seconds()), str(e.count), event_name(e)]
        else:
            row = [last, e.type, e.reason, obj, e.message.strip()]
        if all_namespaces:
            row = [event_namespace(e), *row]
        rows.append(row)
    return table(headers, rows)


def v1_list(items: list[dict]) -> dict:
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
