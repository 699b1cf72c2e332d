"""Record a trace from the database (either backend writes the same tables) or from a live cluster.

From the database, for a window [start, end]:
  start state: the nodes that existed at the start, the pods bound by then (on their node) and the
               pods queued by then and not yet bound (pending, they arrive at t=0);
  events:      pods queued after the start (Pod.queued_at), pods created already bound (Pod.bound_at),
               nodes created after it, node updates and bound-pod deletions (ClusterEvent), each saved
               configuration version (it became the active one when saved), and, to compare against,
               every binding the live run made (Binding).
What the tables cannot say is left out and said in the README: a node's earlier manifests (only its
current one is kept), a deleted pod's spec, unbound pods deleted, nodes deleted.
"""

from __future__ import annotations

import re
from datetime import datetime

from django.conf import settings

from scheduler.engine.config import config_to_dict
from scheduler.models import Binding, ClusterEvent, Node, Pod, SchedulerConfigVersion
from scheduler.versions.profiles import INITIAL_VERSION, initial_config

from . import trace as tr


# As kubectl's --since: a Go duration (1h, 30m, 1h30m, 90s).
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def go_duration(text: str) -> float:
    """Seconds in a Go duration; ValueError naming the text otherwise."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"invalid duration {text!r}: expected e.g. 1h, 30m, 1h30m, 90s")
    return sum(float(n) * _UNITS[u] for n, u in parts)


def _t(when: datetime, start: datetime) -> float:
    return round(max(0.0, (when - start).total_seconds()), 6)


def record_from_database(*, start: datetime, end: datetime) -> tr.Trace:
    header = {"source": "database", "start": start.isoformat(), "end": end.isoformat(),
              "duration_s": round((end - start).total_seconds(), 6),
              "seed": settings.SCHEDBOARD_SEED, "batch_size": settings.SCHEDBOARD_BATCH_SIZE,
              "backend": settings.SCHEDBOARD_BACKEND, "config": _config_at(start)}
    trace = tr.Trace(header=header)
    events: list[tuple[datetime, int, dict]] = []  # (when, order within an instant, line)

    for name, manifest, created in Node.objects.filter(created_at__lte=end).order_by("name").values_list(
            "name", "manifest", "created_at"):
        if created <= start:
            trace.nodes.append(manifest)
        else:
            events.append((created, 0, {"kind": tr.NODE_ADD, "manifest": manifest}))
    manifests = dict(Node.objects.values_list("name", "manifest"))
    for kind, name, when in ClusterEvent.objects.filter(created_at__gt=start, created_at__lte=end).values_list(
            "kind", "object_name", "created_at"):
        if kind == ClusterEvent.NODE_UPDATE and name in manifests:
            events.append((when, 0, {"kind": tr.NODE_UPDATE, "manifest": manifests[name]}))
        elif kind == ClusterEvent.ASSIGNED_POD_DELETE:
            events.append((when, 2, {"kind": tr.POD_DELETE, "key": name}))

    pods = Pod.objects.order_by("queued_at", "created_at", "namespace", "name")
    for manifest, node_name, queued_at, bound_at, created in pods.values_list(
            "manifest", "node_name", "queued_at", "bound_at", "created_at"):
        if queued_at is None:  # created bound (spec.nodeName): it never waited in our queue
            if bound_at is None or not node_name:
                continue  # not ours, never queued
            if bound_at <= start:
                trace.pods.append((manifest, node_name))
            elif bound_at <= end:
                events.append((bound_at, 1, {"kind": tr.POD_ADD, "manifest": manifest, "node": node_name}))
            continue
        if bound_at is not None and bound_at <= start and node_name:
            trace.pods.append((manifest, node_name))
        elif queued_at <= start:
            trace.pods.append((_unbound(manifest), None))
        elif queued_at <= end:
            events.append((queued_at, 1, {"kind": tr.POD_ADD, "manifest": _unbound(manifest), "node": None}))

    for number, config, when in SchedulerConfigVersion.objects.filter(
            created_at__gt=start, created_at__lte=end).values_list("number", "config", "created_at"):
        events.append((when, 0, {"kind": tr.CONFIG, "version": number, "config": config}))
    for ns, name, node, when in Binding.objects.filter(bound_at__gt=start, bound_at__lte=end).values_list(
            "namespace", "pod_name", "node_name", "bound_at"):
        events.append((when, 3, {"kind": tr.BOUND, "key": f"{ns}/{name}", "node": node}))

    events.sort(key=lambda e: (e[0], e[1]))
    trace.events = [{"t": _t(when, start), **line} for when, _, line in events]
    return trace


def _unbound(manifest: dict) -> dict:
    """The pod as it arrived: a stored pod that was bound since carries its nodeName; the replay decides."""
    spec = manifest.get("spec") or {}
    if "nodeName" not in spec:
        return manifest
    return {**manifest, "spec": {k: v for k, v in spec.items() if k != "nodeName"}}


def _config_at(start: datetime) -> dict:
    """The configuration version active at `start`: the newest saved by then (saving one activates it)."""
    row = (SchedulerConfigVersion.objects.filter(created_at__lte=start).order_by("-created_at", "-number")
           .values_list("number", "config").first())
    if row is None:
        return {"version": INITIAL_VERSION, "config": config_to_dict(initial_config())}
    return {"version": row[0], "config": row[1]}


def record_from_cluster(api_client, *, now: datetime) -> tr.Trace:
    """A starting state read through the kubernetes client: nodes, pods, and the objects plugins read."""
    from kubernetes import client

    from scheduler.kube.client import call

    core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    nodes = call(core.list_node).get("items", [])
    pods = call(core.list_pod_for_all_namespaces).get("items", [])
    text_objects = [("v1", "Namespace", call(core.list_namespace)), ("v1", "Service", call(core.list_service_for_all_namespaces)),
                    ("v1", "ReplicationController", call(core.list_replication_controller_for_all_namespaces)),
                    ("apps/v1", "ReplicaSet", call(apps.list_replica_set_for_all_namespaces)),
                    ("apps/v1", "StatefulSet", call(apps.list_stateful_set_for_all_namespaces))]
    import json

    # Through the apply decoders, so a cluster's objects are read exactly as `apply` reads them.
    listing = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", **n} for n in nodes] + [
        {"apiVersion": "v1", "kind": "Pod", **p} for p in pods
        if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]}
    trace = tr.trace_from_manifests(json.dumps(listing), "<cluster>", source="cluster")
    trace.header.update({"start": now.isoformat(), "end": now.isoformat()})
    for api_version, kind, reply in text_objects:
        trace.objects += [{"apiVersion": api_version, "kind": kind, **item} for item in reply.get("items", [])]
    return trace
