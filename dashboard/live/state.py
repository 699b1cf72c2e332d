"""The truth a frame needs, read from Redis and Postgres: shared by every viewer in this process for a
fraction of a second, so twenty viewers cost the database what one does."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime, timezone as dt_timezone

from channels.db import database_sync_to_async
from django.db.models import Count, Sum

from scheduler.controllers.node_lifecycle import ready_status
from scheduler.models import Binding, DeletedNode, DeletedPod, Event, Node, Pod
from scheduler.engine.scheduling_gates import gates_of
from scheduler.queue.queues import get_queue
from scheduler.state.gated import gated_pods
from scheduler.versions.profiles import scheduler_names

QUEUES = ("active", "backoff", "unschedulable")
GATED = "gated"  # upstream's Gated pods in unschedulablePods; here read from the database (state/gated.py)
LIST_LIMIT = 50  # pods shown per sub-queue (the counts are exact)
RECENT = 15

log = logging.getLogger(__name__)

_cache: dict[str, tuple[float, object]] = {}
_locks: dict[str, asyncio.Lock] = {}


async def shared(name: str, ttl: float, read):
    """read() in a thread at most once per `ttl` seconds for all viewers in this process."""
    hit = _cache.get(name)
    if hit and time.monotonic() < hit[0]:
        return hit[1]
    lock = _locks.setdefault(name, asyncio.Lock())
    async with lock:
        hit = _cache.get(name)
        if hit and time.monotonic() < hit[0]:
            return hit[1]
        value = await database_sync_to_async(read)()
        _cache[name] = (time.monotonic() + ttl, value)
        return value


async def latest(name: str, ttl: float, read):
    """What read() last said, at once; read again in the background once that is `ttl` seconds old.

    For what a frame shows beside the events (the gauges): a frame goes out when its interval allows, never
    after a database read, so what it shows is at most `ttl` plus one read old. Only the first call waits."""
    hit = _cache.get(name)
    if hit is None:
        return await shared(name, ttl, read)
    if time.monotonic() >= hit[0] and not _locks.setdefault(name, asyncio.Lock()).locked():
        task = asyncio.create_task(shared(name, ttl, read))
        _refreshing.add(task)  # (held until done: the loop keeps only a weak reference)
        task.add_done_callback(lambda t: _refreshed(t, name))
    return hit[1]


_refreshing: set[asyncio.Task] = set()


def _refreshed(task: asyncio.Task, name: str) -> None:
    _refreshing.discard(task)
    if not task.cancelled() and task.exception() is not None:
        # The next frame asks again; the pages keep the last value meanwhile.
        log.warning("live state: reading %s failed", name, exc_info=task.exception())


def reset() -> None:
    """Tests: forget cached reads (and the locks and refreshes, which belong to one event loop)."""
    _cache.clear()
    _locks.clear()
    _refreshing.clear()


# ---- overview ---------------------------------------------------------------------------

def gauges() -> dict:
    lengths = get_queue().lengths()
    return {**{q: int(lengths.get(q, 0)) for q in QUEUES},
            # Reserved on a node, binding not yet committed.
            "binding": Pod.objects.filter(node_name="").exclude(assumed_node="").count()}


MARKS_WINDOW_S = 120  # as far back as the overview's charts reach (overview.js WINDOW_S)
MARKS_LIMIT = 500  # deleted pods looked at for disruption marks at most
# The recorded node events as the charts name their marks: the kubelet posts NodeNotReady when it reports
# Ready=False, the node controller when it marks a silent node Unknown (unreachable).
_NODE_MARK = {("NodeNotReady", "kubelet"): "NotReady", ("NodeNotReady", "node-controller"): "Unreachable",
              ("NodeReady", "kubelet"): "Ready"}


def recent_marks(now: float | None = None) -> dict:
    """The chart marks of the last MARKS_WINDOW_S, from what was recorded (so a page opened after them shows
    them): node condition changes (their events), deletions (DeletedNode) and disrupted pods (a deleted pod
    whose DisruptionTarget condition says why), each [.., t] as the live feed sends them, oldest first."""
    now = time.time() if now is None else now
    since = datetime.fromtimestamp(now - MARKS_WINDOW_S, tz=dt_timezone.utc)
    node_events = [[name, _NODE_MARK[(reason, controller)], at.timestamp()]
                   for name, reason, controller, at in Event.objects.filter(
                       involved_kind="Node", reason__in=("NodeNotReady", "NodeReady"), last_timestamp__gte=since)
                   .values_list("involved_name", "reason", "reporting_controller", "last_timestamp")
                   if (reason, controller) in _NODE_MARK]
    node_events += [[name, "Deleted", at.timestamp()] for name, at in
                    DeletedNode.objects.filter(deleted_at__gte=since).values_list("name", "deleted_at")]
    disruptions = []
    for ns, name, node, assumed, manifest, at in (DeletedPod.objects.filter(deleted_at__gte=since)
                                                   .order_by("-deleted_at", "-id")
                                                   .values_list("namespace", "name", "node_name", "assumed_node",
                                                                "manifest", "deleted_at")[:MARKS_LIMIT]):
        reason = next((c.get("reason") or "" for c in (manifest.get("status") or {}).get("conditions") or ()
                       if isinstance(c, dict) and c.get("type") == "DisruptionTarget" and c.get("status") == "True"),
                      None)
        if reason is not None:
            disruptions.append([ns, name, node or assumed, reason, at.timestamp()])
    return {"node_events": sorted(node_events, key=lambda e: e[2]),
            "disruptions": sorted(disruptions, key=lambda d: d[4])}


def recent() -> dict:
    bindings = (Binding.objects.order_by("-bound_at", "-id")
                .values_list("namespace", "pod_name", "node_name", "attempt__e2e_ms", "bound_at")[:RECENT])
    failed = (Event.objects.filter(reason="FailedScheduling").order_by("-last_timestamp", "-id")
              .values_list("involved_namespace", "involved_name", "message", "last_timestamp")[:RECENT])
    # Oldest first, as events arrive.
    return {"bindings": [[ns, name, node, e2e, at.timestamp()] for ns, name, node, e2e, at in reversed(bindings)],
            "failed": [[ns, name, "", msg[:300], at.timestamp()] for ns, name, msg, at in reversed(failed)],
            "marks": recent_marks()}


# ---- queue ------------------------------------------------------------------------------

def queue_state() -> dict:
    q = get_queue()
    lengths = q.lengths()
    lists = {}
    for name in QUEUES:
        lists[name] = [[i.key, i.priority, i.attempts, i.initial_attempt_timestamp or i.timestamp, i.timestamp,
                        i.backoff_expiry, (i.message or "")[:300]] for i in q.entries(name, LIST_LIMIT)]
    gated = Pod.objects.filter(gated_pods(scheduler_names()))
    lists[GATED] = [gated_row(p) for p in gated.order_by("-priority", "created_at", "id")[:LIST_LIMIT]]
    return {"lengths": {**{k: int(lengths.get(k, 0)) for k in (*QUEUES, "in_flight")}, GATED: gated.count()},
            "lists": lists, "now": q.clock()}


def gated_row(pod: Pod) -> list:
    """A gated pod as the queue's rows read: no backoff; SchedulingGates' own words name what it waits for."""
    since = pod.scheduled_transition_at or pod.created_at
    waiting = "waiting for scheduling gates: [" + " ".join(gates_of(pod.manifest)) + "]"
    return [pod.key, pod.priority, pod.attempts, pod.created_at.timestamp(), since.timestamp(), None, waiting]


# ---- nodes ------------------------------------------------------------------------------

def node_specs() -> tuple[tuple, list[list]]:
    """(a key that changes when any node's spec does, static rows in name order)."""
    rows = list(Node.objects.order_by("name").values_list("name", "spec_version"))
    return tuple(rows), rows


# A node's status on the page: its Ready condition as kubectl shows it (Unknown: the kubelet stopped
# posting, the node controller's "unreachable"), or Lost: deleted while pods are still bound to it
# (until PodGC collects them).
NODE_STATUS = {"True": "Ready", "False": "NotReady", "Unknown": "Unreachable"}
LOST = "Lost"
LOST_LOOKBACK = 1000  # the most recently deleted nodes looked at


def lost_nodes() -> dict[str, list[int]]:
    """Nodes that no longer exist but still have pods bound: name -> [cpu, memory, pods] those pods request.
    Looked for among the recently deleted nodes (the trigger's table), so no scan of the pods."""
    recent = set(DeletedNode.objects.order_by("-deleted_at").values_list("name", flat=True)[:LOST_LOOKBACK])
    gone = recent - set(Node.objects.filter(name__in=recent).values_list("name", flat=True))
    if not gone:
        return {}
    rows = (Pod.objects.filter(node_name__in=gone).values("node_name").annotate(cpu=Sum("req_cpu"), mem=Sum("req_memory"), n=Count("id"))
            .values_list("node_name", "cpu", "mem", "n"))
    return {name: [cpu or 0, mem or 0, n] for name, cpu, mem, n in rows}


def node_static() -> tuple[int, list[list]]:
    """(the node generation these rows are, as node_usage's key; static rows in name order)."""
    out, key = [], []
    for name, version, manifest, unsched, cpu, mem, pods in Node.objects.order_by("name").values_list(
            "name", "spec_version", "manifest", "unschedulable", "alloc_cpu", "alloc_memory", "alloc_pods"):
        spec = manifest.get("spec") or {}
        taints = [f"{t.get('key', '')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect', '')}"
                  for t in spec.get("taints") or ()]
        labels = (manifest.get("metadata") or {}).get("labels") or {}
        out.append([name, cpu, mem, pods, bool(unsched), taints, labels, NODE_STATUS.get(ready_status(manifest), "Ready")])
        key.append((name, version))
    for name in sorted(lost_nodes()):
        out.append([name, 0, 0, 0, False, [], {}, LOST])
        key.append((name, LOST))
    return hash(tuple(key)), out


async def shared_node_static(key: int) -> tuple[int, list[list]]:
    """node_static() read once per node generation for all viewers in this process (the rows are shared:
    read them, never change them). `key` is the generation the caller saw in node_usage()."""
    hit = _cache.get("node_static")
    if hit and hit[1][0] == key:
        return hit[1]
    lock = _locks.setdefault("node_static", asyncio.Lock())
    async with lock:
        hit = _cache.get("node_static")
        if hit and hit[1][0] == key:
            return hit[1]
        value = await database_sync_to_async(node_static)()
        _cache["node_static"] = (0.0, value)
        return value


def node_usage() -> dict:
    """name -> [requested cpu, memory, pods, assumed pods]; plus the spec key to notice node changes."""
    assumed = dict(Pod.objects.filter(node_name="").exclude(assumed_node="").values("assumed_node")
                   .annotate(n=Count("id")).values_list("assumed_node", "n"))
    usage, key = {}, []
    for name, version, cpu, mem, pods in Node.objects.order_by("name").values_list(
            "name", "spec_version", "req_cpu", "req_memory", "req_pods"):
        usage[name] = [cpu, mem, pods, assumed.get(name, 0)]
        key.append((name, version))
    for name, (cpu, mem, pods) in sorted(lost_nodes().items()):
        usage[name] = [cpu, mem, pods, 0]
        key.append((name, LOST))
    return {"key": hash(tuple(key)), "usage": usage}
