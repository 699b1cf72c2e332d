"""The truth a frame needs, read from Redis and Postgres: shared by every viewer in this process for a
fraction of a second, so twenty viewers cost the database what one does."""

from __future__ import annotations

import asyncio
import time

from channels.db import database_sync_to_async
from django.db.models import Count

from scheduler.models import Binding, Event, Node, Pod
from scheduler.queue.queues import get_queue

QUEUES = ("active", "backoff", "unschedulable")
LIST_LIMIT = 50  # pods shown per sub-queue (the counts are exact)
RECENT = 15

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


def reset() -> None:
    """Tests: forget cached reads (and the locks, which belong to one event loop)."""
    _cache.clear()
    _locks.clear()


# ---- overview ---------------------------------------------------------------------------

def gauges() -> dict:
    lengths = get_queue().lengths()
    return {**{q: int(lengths.get(q, 0)) for q in QUEUES},
            # Reserved on a node, binding not yet committed.
            "binding": Pod.objects.filter(node_name="").exclude(assumed_node="").count()}


def recent() -> dict:
    bindings = (Binding.objects.order_by("-bound_at", "-id")
                .values_list("namespace", "pod_name", "node_name", "attempt__e2e_ms", "bound_at")[:RECENT])
    failed = (Event.objects.filter(reason="FailedScheduling").order_by("-last_timestamp", "-id")
              .values_list("involved_namespace", "involved_name", "message", "last_timestamp")[:RECENT])
    # Oldest first, as events arrive.
    return {"bindings": [[ns, name, node, e2e, at.timestamp()] for ns, name, node, e2e, at in reversed(bindings)],
            "failed": [[ns, name, "", msg[:300], at.timestamp()] for ns, name, msg, at in reversed(failed)]}


# ---- queue ------------------------------------------------------------------------------

def queue_state() -> dict:
    q = get_queue()
    lengths = q.lengths()
    lists = {}
    for name in QUEUES:
        lists[name] = [[i.key, i.priority, i.attempts, i.initial_attempt_timestamp or i.timestamp, i.timestamp,
                        i.backoff_expiry, (i.message or "")[:300]] for i in q.entries(name, LIST_LIMIT)]
    return {"lengths": {k: int(lengths.get(k, 0)) for k in (*QUEUES, "in_flight")}, "lists": lists,
            "now": q.clock()}


# ---- nodes ------------------------------------------------------------------------------

def node_specs() -> tuple[tuple, list[list]]:
    """(a key that changes when any node's spec does, static rows in name order)."""
    rows = list(Node.objects.order_by("name").values_list("name", "spec_version"))
    return tuple(rows), rows


def node_static() -> tuple[int, list[list]]:
    """(the node generation these rows are, as node_usage's key; static rows in name order)."""
    out, key = [], []
    for name, version, manifest, unsched, cpu, mem, pods in Node.objects.order_by("name").values_list(
            "name", "spec_version", "manifest", "unschedulable", "alloc_cpu", "alloc_memory", "alloc_pods"):
        spec = manifest.get("spec") or {}
        taints = [f"{t.get('key', '')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect', '')}"
                  for t in spec.get("taints") or ()]
        labels = (manifest.get("metadata") or {}).get("labels") or {}
        out.append([name, cpu, mem, pods, bool(unsched), taints, labels])
        key.append((name, version))
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
    return {"key": hash(tuple(key)), "usage": usage}
