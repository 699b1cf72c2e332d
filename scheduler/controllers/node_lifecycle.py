"""The node lifecycle controller's tainting passes (pkg/controller/nodelifecycle): a node's conditions and
spec.unschedulable become NoSchedule taints (doNoScheduleTaintingPass), its Ready condition False/Unknown
the not-ready/unreachable NoExecute taint with timeAdded (doNoExecuteTaintingPass), and recovery lifts
them. `node_fail` and `node_recover` stand in for the kubelet posting its status (or the controller
marking it Unknown once the kubelet stopped posting, past node-monitor-grace-period)."""

from __future__ import annotations

import json
from datetime import datetime, timezone as dt_timezone

from django.db import connection, transaction
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL

from ..cluster.services import node_manifest_update
from ..models import Event, Node, Pod
from ..state.events import EventSpec, events_record
from ..telemetry import live
from . import memory

CONTROLLER = "node-controller"
KUBELET = "kubelet"
_KNOWN = "node-lifecycle-known"  # node name -> when a monitor pass first saw it (upstream's knownNodeSet)
_KNOWN_SET = "node-lifecycle-known-set"  # the node set's fingerprint when _KNOWN was last brought in line with it
_JUDGED = "node-lifecycle-judged"  # "since": every node written before it was judged by a whole pass that ended
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


def node_event(name: str, uid: str, reason: str, message: str, controller: str,
               type: str = Event.NORMAL) -> EventSpec:
    return EventSpec(type=type, reason=reason, message=message, kind="Node", namespace="", name=name, uid=uid,
                     reporting_controller=controller)


def status_change(name: str, uid: str, new_status: str, controller: str) -> EventSpec:
    """As RecordNodeStatusChange / the kubelet's recordNodeStatusEvent."""
    return node_event(name, uid, new_status, f"Node {name} status is now: {new_status}", controller)


def _set_pods_ready(node_name: str, ready: bool, now: datetime) -> list[str]:
    """MarkPodsNotReady (ready=False), or the kubelet posting its pods Ready again: the Ready condition of each
    bound pod of the node written as apipod.UpdatePodCondition does. The pods changed, by name."""
    changed = []
    stamp = _rfc3339(now)
    for pk, namespace, name, manifest in Pod.objects.filter(node_name=node_name, deleting=False).values_list(
            "pk", "namespace", "name", "manifest"):
        conditions = [c for c in (manifest.get("status") or {}).get("conditions") or () if isinstance(c, dict)]
        old = next((c for c in conditions if c.get("type") == "Ready"), None)
        if ready and (old is None or old.get("status") == "True"):
            continue  # Ready since its binding, or already again
        if not ready and old is not None and old.get("status") == "False":
            continue
        cond = {"type": "Ready", "status": "True" if ready else "False", "lastProbeTime": None,
                "lastTransitionTime": stamp}
        manifest = {**manifest, "status": {**(manifest.get("status") or {}),
                                          "conditions": [c for c in conditions if c is not old] + [cond]}}
        Pod.objects.filter(pk=pk).update(manifest=manifest)
        changed.append((namespace, name))
    return changed


def node_set_ready(*, name: str, status: str, now: datetime | None = None) -> bool | None:
    """The node's Ready condition set to True, False or Unknown, then tainted at once (one monitor pass); the
    events as the kubelet and the node controller leave them (stamped at the wall's time)."""
    now = now or datetime.now(dt_timezone.utc)
    row = Node.objects.filter(name=name).values_list("manifest", flat=True).first()
    if row is None:
        return None
    before = ready_status(row)
    uid = str((row.get("metadata") or {}).get("uid") or "")
    with transaction.atomic():
        changed = node_manifest_update(name=name, mutate=lambda m: _set_ready(m, status, now))
        if changed is None:
            return None
        events = []
        if changed and status != before:
            if status == "False":
                events.append(status_change(name, uid, "NodeNotReady", KUBELET))
            elif status == "True":
                events.append(status_change(name, uid, "NodeReady", KUBELET))
                _set_pods_ready(name, True, datetime.now(dt_timezone.utc))
            elif before == "True":  # Unknown, from Ready: the node controller's transition
                events.append(status_change(name, uid, "NodeNotReady", CONTROLLER))
                marked = _set_pods_ready(name, False, datetime.now(dt_timezone.utc))
                events += [EventSpec(type=Event.WARNING, reason="NodeNotReady", message="Node is not ready",
                                     kind="Pod", namespace=ns, name=pod_name, reporting_controller=CONTROLLER)
                           for ns, pod_name in marked]
        events_record(events)
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


NAMES_PER_QUERY = 10_000


def _register(names: set[str], now: datetime) -> None:
    """A whole pass: RegisteredNode for the nodes it sees first, RemovingNode for those it knew and are gone.
    Reads only the names, and the uid of a node seen first: a pass over 50,000 known nodes decodes nothing."""
    known = memory.recall(_KNOWN)
    added = sorted(names - set(known))
    removed = sorted(set(known) - names)
    uids = {}
    for i in range(0, len(added), NAMES_PER_QUERY):  # a first pass over 100,000 nodes: within 65,535 parameters
        uids.update(Node.objects.filter(name__in=added[i:i + NAMES_PER_QUERY]).values_list("name", "manifest__metadata__uid"))
    events = [node_event(name, str(uids.get(name) or ""), "RegisteredNode",
                         f"Node {name} event: Registered Node {name} in Controller", CONTROLLER) for name in added]
    events += [node_event(name, "", "RemovingNode", f"Node {name} event: Removing Node {name} from Controller",
                          CONTROLLER) for name in removed]
    events_record(events)
    memory.remember(_KNOWN, {name: now.timestamp() for name in added})
    memory.forget(_KNOWN, removed)


def _node_set_fingerprint() -> dict[str, float] | None:
    """What changes whenever a node is added or removed, in one aggregate (Postgres; None elsewhere): how many
    nodes, the newest row id (ids are never handed out again, so a node removed and another added moves it)
    and the sum of the names' hashes. A pass whose fingerprint is the one recorded with the known set needs
    neither every node's name nor the known set (50,000 of each, 0.4-0.5 s of a worker's CPU every
    5 s at 50,000 nodes)."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*), coalesce(max(id), 0), coalesce(sum(hashtext(name)::bigint), 0) "
                       f"FROM {Node._meta.db_table}")
        count, newest, hashes = cursor.fetchone()
    # (exact as floats, which the controller memory holds: each sum stays far below 2**53)
    return {"count": float(count), "newest": float(newest), "hashes": float(hashes)}


def _register_if_changed(now: datetime) -> None:
    """_register over every node, unless the node set is the one the last registering pass saw."""
    fingerprint = _node_set_fingerprint()
    if fingerprint is not None and memory.recall(_KNOWN_SET) == fingerprint:
        return
    _register(set(Node.objects.values_list("name", flat=True)), now)
    if fingerprint is not None:
        memory.remember(_KNOWN_SET, fingerprint)


def may_need_taints():
    """The nodes desired_taints may change: those with taints or spec.unschedulable, and those with a condition
    that may want a taint. On Postgres a condition that cannot (a Ready one whose status is the string "True", a
    pressure one whose status is a string other than "True", a type no taint follows) is told apart in the
    query: a healthy node posting conditions is left out, as one posting none (50,000 Ready nodes decoded in
    Python were 1.1-1.7 s of a worker's CPU every 5 s). What the query cannot judge (a status that is not a
    string, conditions that are not a list) it leaves to desired_taints."""
    taints_or_cordon = Q(manifest__spec__has_key="taints") | Q(manifest__spec__has_key="unschedulable")
    if connection.vendor != "postgresql":
        return taints_or_cordon | Q(manifest__status__has_key="conditions")
    return taints_or_cordon | Q(RawSQL(_CONDITION_MAY_TAINT, [], output_field=BooleanField()))


_PRESSURE_TYPES = sorted(t for t in CONDITION_TAINTS if t != "Ready")
assert all(set(CONDITION_TAINTS[t]) == {"True"} for t in _PRESSURE_TYPES)  # what the query below takes for granted
_CONDITION_MAY_TAINT = f"""
CASE
  WHEN jsonb_typeof("scheduler_node"."manifest"->'status'->'conditions') IS NULL THEN false
  WHEN jsonb_typeof("scheduler_node"."manifest"->'status'->'conditions') = 'null' THEN false
  WHEN jsonb_typeof("scheduler_node"."manifest"->'status'->'conditions') <> 'array' THEN true
  ELSE EXISTS (
    SELECT 1 FROM jsonb_array_elements("scheduler_node"."manifest"->'status'->'conditions') AS c(e)
    WHERE jsonb_typeof(e) = 'object' AND CASE
      WHEN e->'type' = '"Ready"' THEN e->'status' IS DISTINCT FROM '"True"'
      WHEN e->'type' IN ({", ".join(f"'{json.dumps(t)}'" for t in _PRESSURE_TYPES)})
        THEN jsonb_typeof(e->'status') IS DISTINCT FROM 'string' OR e->>'status' = 'True'
      ELSE false END)
END
"""


def monitor(*, names: list[str] | None = None, now: datetime | None = None) -> list[str]:
    """One pass over the nodes (upstream's nodeMonitorPeriod, 5 s, is the beat period): the nodes retainted.
    A pass over every node (`names` None) also registers new nodes and notices removed ones."""
    now = now or datetime.now(dt_timezone.utc)
    query = Node.objects.all() if names is None else Node.objects.filter(name__in=names)
    if names is None:
        _register_if_changed(now)
    # A node with no taints, no spec.unschedulable and no condition that may want one wants no taint and has none:
    # left out in the query, so a pass over a large healthy cluster decodes no manifest (50,000 every 5 s otherwise).
    query = query.filter(may_need_taints())
    # What a node wants is its manifest's alone (`now` only dates a taint added), so a node no transaction wrote
    # since the last whole pass began wants what that pass left it with: only the nodes written since are judged
    # again (Postgres: `touched`, the writer's transaction id, against the oldest transaction running then).
    # Evaluating the query over 50,000 Ready nodes was ~0.7 s of Postgres every 5 s.
    since, began = (_judging_since(), _oldest_running()) if names is None else (None, None)
    if since is not None:
        query = query.filter(touched__gte=since)
    changed = []
    for name, manifest in query.values_list("name", "manifest"):
        spec = manifest.get("spec") or {}
        if desired_taints(manifest, now) == [t for t in spec.get("taints") or () if isinstance(t, dict)]:
            continue
        if node_manifest_update(name=name, mutate=lambda m: _retaint(m, now)):
            changed.append(name)
    if began is not None:
        memory.remember(_JUDGED, {"since": float(began)})
    return changed


def _oldest_running() -> int | None:
    """The oldest transaction still running (Postgres; None elsewhere): every write not committed before this
    moment is by a transaction at least as new."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
        return int(cursor.fetchone()[0])


def _judging_since() -> int | None:
    """Where the last whole pass began (None: no pass remembered, or not on Postgres: judge every node)."""
    if connection.vendor != "postgresql":
        return None
    since = memory.recall(_JUDGED).get("since")
    return None if since is None else int(since)
