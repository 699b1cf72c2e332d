"""The node lifecycle controller's tainting passes (pkg/controller/nodelifecycle): a node's conditions and
spec.unschedulable become NoSchedule taints (doNoScheduleTaintingPass), its Ready condition False/Unknown
the not-ready/unreachable NoExecute taint with timeAdded (doNoExecuteTaintingPass), and recovery lifts
them. `node_fail` and `node_recover` stand in for the kubelet posting its status (or the controller
marking it Unknown once the kubelet stopped posting, past node-monitor-grace-period)."""

from __future__ import annotations

from datetime import datetime, timezone as dt_timezone

from django.db import transaction
from django.db.models import Q

from ..cluster.services import node_manifest_update
from ..models import Node
from ..telemetry import live

CONTROLLER = "node-controller"
NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "NoExecute"
# As nodeConditionToTaintKeyStatusMap: condition type -> {status -> taint key}.
CONDITION_TAINTS = {
    "Ready": {"False": NOT_READY, "Unknown": UNREACHABLE},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
_TAINT_KEYS = {key for by_status in CONDITION_TAINTS.values() for key in by_status.values()}
# What the kubelet (or, for Unknown, the node controller's tryUpdateNodeHealth) writes on the Ready condition.
READY_STATUS = {
    "True": ("KubeletReady", "kubelet is posting ready status"),
    "False": ("KubeletNotReady", "container runtime is down"),
    "Unknown": ("NodeStatusUnknown", "Kubelet stopped posting node status."),
}


def _rfc3339(now: datetime) -> str:
    return now.astimezone(dt_timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _set_ready(manifest: dict, status: str, now: datetime) -> None:
    conditions = manifest.setdefault("status", {}).setdefault("conditions", [])
    old = next((c for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"), None)
    reason, message = READY_STATUS[status]
    ready = {"type": "Ready", "status": status, "reason": reason, "message": message,
             "lastHeartbeatTime": _rfc3339(now),
             "lastTransitionTime": old.get("lastTransitionTime") if old and old.get("status") == status else _rfc3339(now)}
    if old is not None and {k: v for k, v in old.items() if k != "lastHeartbeatTime"} == \
            {k: v for k, v in ready.items() if k != "lastHeartbeatTime"}:
        return  # nothing new: keep the row as it is
    conditions[:] = [c for c in conditions if c is not old] + [ready]


def ready_status(manifest: dict) -> str:
    """The Ready condition's status; a node that posts no conditions (the simulated ones) counts as Ready."""
    for c in (manifest.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == "Ready":
            return str(c.get("status") or "Unknown")
    return "True"


def node_set_ready(*, name: str, status: str, now: datetime | None = None) -> bool | None:
    """The node's Ready condition set to True, False or Unknown, then tainted at once (one monitor pass)."""
    now = now or datetime.now(dt_timezone.utc)
    changed = node_manifest_update(name=name, mutate=lambda m: _set_ready(m, status, now))
    if changed is None:
        return None
    if changed:
        state = {"True": "Ready", "False": "NotReady", "Unknown": "Unreachable"}[status]
        transaction.on_commit(lambda: live.nodes_changed([{"name": name, "state": state}]))
    return bool(monitor(names=[name], now=now)) or changed


def desired_taints(manifest: dict, now: datetime) -> list[dict]:
    """The node's taints after both passes: others' taints kept, condition taints as the conditions say."""
    spec = manifest.get("spec") or {}
    taints = [t for t in spec.get("taints") or () if isinstance(t, dict)]
    ours = [t for t in taints if (t.get("key") in _TAINT_KEYS or t.get("key") == UNSCHEDULABLE)
            and t.get("effect") == NO_SCHEDULE]
    want_no_schedule = []
    for c in (manifest.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict) and c.get("type") in CONDITION_TAINTS:
            key = CONDITION_TAINTS[c["type"]].get(str(c.get("status")))
            if key:
                want_no_schedule.append(key)
    if spec.get("unschedulable"):
        want_no_schedule.append(UNSCHEDULABLE)
    kept = [t for t in taints if t not in ours or t.get("key") in want_no_schedule]
    have = {t.get("key") for t in ours}
    added = [{"key": key, "effect": NO_SCHEDULE} for key in want_no_schedule if key not in have]
    # NoExecute: not-ready xor unreachable, swapped as the Ready condition changes (swapNodeControllerTaint).
    ready = ready_status(manifest)
    want_exec = {"False": NOT_READY, "Unknown": UNREACHABLE}.get(ready)
    result = [t for t in kept + added
              if not (t.get("effect") == NO_EXECUTE and t.get("key") in (NOT_READY, UNREACHABLE)
                      and t.get("key") != want_exec)]
    if want_exec and not any(t.get("key") == want_exec and t.get("effect") == NO_EXECUTE for t in result):
        result.append({"key": want_exec, "effect": NO_EXECUTE, "timeAdded": _rfc3339(now)})
    return result


def _retaint(manifest: dict, now: datetime) -> None:
    taints = desired_taints(manifest, now)
    spec = manifest.setdefault("spec", {})
    if taints:
        spec["taints"] = taints
    else:
        spec.pop("taints", None)


def may_need_taints() -> Q:
    """The nodes desired_taints may change: those with conditions, taints or spec.unschedulable."""
    return (Q(manifest__status__has_key="conditions") | Q(manifest__spec__has_key="taints")
            | Q(manifest__spec__has_key="unschedulable"))


def monitor(*, names: list[str] | None = None, now: datetime | None = None) -> list[str]:
    """One pass over the nodes (upstream's nodeMonitorPeriod, 5 s, is the beat period): the nodes retainted."""
    now = now or datetime.now(dt_timezone.utc)
    rows = Node.objects.all() if names is None else Node.objects.filter(name__in=names)
    # A node with no conditions, no taints and no spec.unschedulable wants no taint and has none: left out in
    # the query, so a pass over a large healthy cluster decodes no manifest (50,000 nodes every 5 s otherwise).
    rows = rows.filter(may_need_taints())
    changed = []
    for name, manifest in rows.values_list("name", "manifest"):
        spec = manifest.get("spec") or {}
        if desired_taints(manifest, now) == [t for t in spec.get("taints") or () if isinstance(t, dict)]:
            continue
        if node_manifest_update(name=name, mutate=lambda m: _retaint(m, now)):
            changed.append(name)
    return changed
