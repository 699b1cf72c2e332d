"""Record a trace from the database (either backend writes the same tables) or from a live cluster.

From the database, for a window [start, end]:
  start state: the nodes that existed at the start, the pods bound by then (on their node) and the
               pods queued by then and not yet bound (pending, they arrive at t=0);
  events:      pods queued after the start (Pod.queued_at), pods created already bound (Pod.bound_at),
               pod deletions (DeletedPod, migration 0011), nodes created, changed (NodeRevision, migration
               0014: each node is recorded with the manifest it had then) and deleted (DeletedNode), each
               saved configuration version (it became the active one when saved), and, to compare
               against, every binding the live run made (Binding).
What the tables cannot say (pods and nodes deleted, and node changes, before retention dropped their
rows or before those migrations) is left out.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings

from scheduler.engine.config import config_to_dict
from scheduler.manifests.errors import ManifestError
from scheduler.manifests.objects import node_from_manifest
from scheduler.models import (NAMESPACE, REPLICA_SET, REPLICATION_CONTROLLER, RESULT_BIND_FAILED, SERVICE,
                              STATEFUL_SET, Attempt, Binding, ClusterObject, DeletedNode, DeletedPod, Node, NodeRevision, Pod,
                              SchedulerConfigVersion)
from scheduler.versions.profiles import INITIAL_VERSION, initial_config

from . import trace as tr
from .natural import natural_key


OBJECT_API_VERSIONS = {NAMESPACE: "v1", SERVICE: "v1", REPLICATION_CONTROLLER: "v1", REPLICA_SET: "apps/v1",
                       STATEFUL_SET: "apps/v1"}

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
              "seed": _live_seed(start, end), "batch_size": settings.SCHEDBOARD_BATCH_SIZE,
              "feature_gates": dict(settings.SCHEDBOARD_FEATURE_GATES),
              "backend": settings.SCHEDBOARD_BACKEND, "config": _config_at(start)}
    trace = tr.Trace(header=header)
    events: list[tuple[datetime, int, dict]] = []  # (when, order within an instant, line)

    for life in _node_lives(end):
        if life.deleted_at is not None and life.deleted_at <= start:
            continue
        if life.created_at <= start:
            trace.nodes.append(life.manifest_at(start))
        else:
            events.append((life.created_at, 0, {"kind": tr.NODE_ADD, "manifest": life.manifest_at(life.created_at)}))
        for when, manifest in life.changes():
            if start < when <= end:
                events.append((when, 0, {"kind": tr.NODE_UPDATE, "manifest": manifest}))
        if life.deleted_at is not None and life.deleted_at <= end:
            events.append((life.deleted_at, 4, {"kind": tr.NODE_DELETE, "name": life.name}))

    # Each attempt's (start, the instant its snapshot was read: migration 0015, None before it; where its worker's
    # random choices stood: [seed, position, round-robin start], migration 0016, None before it).
    # By uid: a name can be used again (a StatefulSet's pod deleted and created anew), each pod its own attempts.
    attempts_of: dict[tuple[str, str, str], list[tuple[datetime, datetime | None, list | None]]] = {}
    for ns, name, uid, started, snapshot, seed, position, start_index in Attempt.objects.filter(
            started_at__gt=start, started_at__lte=end).order_by("started_at", "id").values_list(
            "namespace", "pod_name", "pod_uid", "started_at", "snapshot_at", "tiebreak_seed", "tiebreak_position",
            "start_node_index"):
        tiebreak = None if seed is None else [seed, position, start_index or 0]
        attempts_of.setdefault((ns, name, uid), []).append((started, snapshot, tiebreak))
    seen_by = _deletions_seen(start, end)
    columns = ("namespace", "name", "uid", "manifest", "node_name", "queued_at", "bound_at")
    pods = [(*row, None) for row in Pod.objects.filter(created_at__lte=end).values_list(*columns)]
    # Deleted pods too (migration 0011's trigger keeps them): their room counts until their deletion.
    pods += DeletedPod.objects.filter(created_at__lte=end, deleted_at__gt=start).values_list(*columns, "deleted_at", "id")
    pods.sort(key=lambda p: (p[5] or p[6] or end, p[0], p[1]))
    for ns, name, uid, manifest, node_name, queued_at, bound_at, deleted_at, *deleted_id in pods:
        if queued_at is None and (bound_at is None or not node_name):
            continue  # not ours, never queued: neither it nor its deletion is anything to the replay
        if deleted_at is not None and deleted_at <= end:
            events.append((seen_by(deleted_id[0], deleted_at), 2, {"kind": tr.POD_DELETE, "key": f"{ns}/{name}"}))
        if queued_at is None:  # created bound (spec.nodeName): it never waited in our queue
            if bound_at <= start:
                trace.pods.append((_started(manifest, bound_at), node_name))
            elif bound_at <= end:
                events.append((bound_at, 1, {"kind": tr.POD_ADD, "manifest": manifest, "node": node_name}))
            continue
        if bound_at is not None and bound_at <= start and node_name:
            trace.pods.append((_started(manifest, bound_at), node_name))
        elif queued_at <= start:
            tiebreaks = [a[2] for a in attempts_of.get((ns, name, uid), ())]
            trace.pods.append((_unbound(manifest), None))
            if any(tiebreaks):
                trace.pod_tiebreaks[f"{ns}/{name}"] = tiebreaks
        elif queued_at <= end:
            line = {"kind": tr.POD_ADD, "manifest": _unbound(manifest), "node": None}
            tried = [a for a in attempts_of.get((ns, name, uid), ()) if a[0] >= queued_at]
            if tried:
                first = tried[0]
                line["first_attempt_t"] = _t(first[0], start)  # when the live loop picked it up (simulator.picked_up)
                if first[1] is not None:
                    # What the live worker's decision saw: the cluster as read then (simulator.picked_up).
                    line["first_snapshot_t"] = _t(first[1], start)
                later = [_t(snap, start) for started, snap, _ in tried if started > first[0] and snap]
                if later:  # when the live loop tried it again (its reconciler's tick): the replay retries it then
                    line["retry_snapshot_t"] = later
                if any(a[2] for a in tried):  # where each attempt's random choices stood: the replay draws the same
                    line["tiebreaks"] = [a[2] for a in tried]
            events.append((queued_at, 1, line))

    # The objects the plugins read (Services, ReplicaSets... for spreading; Namespaces for affinity), as the
    # table keeps them: each with its current manifest, from its creation (those deleted are not kept). Only the
    # kinds the replay reads: a pod's priority is already resolved in its manifest (PriorityClasses, the system
    # ones every database has included, are not needed), and the replay's preemption reads no budget.
    for kind, manifest, created in ClusterObject.objects.filter(created_at__lte=end, kind__in=OBJECT_API_VERSIONS).order_by(
            "created_at", "kind", "namespace", "name").values_list("kind", "manifest", "created_at"):
        obj = {**manifest, "apiVersion": OBJECT_API_VERSIONS[kind], "kind": kind}
        if created <= start:
            trace.objects.append(obj)
        else:
            events.append((created, 0, {"kind": tr.OBJECT_ADD, "manifest": obj}))

    # Bindings the live binder had refused (an API server's no, an injected failure): the replay refuses them too.
    for ns, name in Attempt.objects.filter(result=RESULT_BIND_FAILED, started_at__gt=start, started_at__lte=end).values_list(
            "namespace", "pod_name"):
        key = f"{ns}/{name}"
        trace.bind_failures[key] = trace.bind_failures.get(key, 0) + 1

    for number, config, when in SchedulerConfigVersion.objects.filter(
            created_at__gt=start, created_at__lte=end).values_list("number", "config", "created_at"):
        events.append((when, 0, {"kind": tr.CONFIG, "version": number, "config": config}))
    for ns, name, node, when in Binding.objects.filter(bound_at__gt=start, bound_at__lte=end).values_list(
            "namespace", "pod_name", "node_name", "bound_at"):
        events.append((when, 3, {"kind": tr.BOUND, "key": f"{ns}/{name}", "node": node}))

    events.sort(key=lambda e: (e[0], e[1]))
    trace.events = [{"t": _t(when, start), **line} for when, _, line in events]
    trace.nodes.sort(key=lambda m: natural_key((m.get("metadata") or {}).get("name", "")))
    return trace


def _live_seed(start: datetime, end: datetime) -> int | None:
    """The tie-break seed the live worker ran with: its first attempt's in the window (migration 0016); before
    that column, this process's SCHEDBOARD_SEED (the one the live run was asked to share)."""
    seed = (Attempt.objects.filter(started_at__gt=start, started_at__lte=end, tiebreak_seed__isnull=False)
            .order_by("started_at", "id").values_list("tiebreak_seed", flat=True).first())
    return settings.SCHEDBOARD_SEED if seed is None else seed


def _deletions_seen(start: datetime, end: datetime):
    """when(id, deleted_at): when the scheduler could first have seen that pod deletion. Its stamp is taken when
    its transaction deletes the row, before the commit: a snapshot read just after the stamp may not have
    seen it. Each attempt records the newest deletion its snapshot saw (migration 0015); a deletion an attempt
    did not see, though stamped before its snapshot, is moved to just after the last such snapshot, and one a
    snapshot stamped before it saw (its instant taken as its read began; the deletion committed meanwhile) to
    just before the first such."""
    snapshots = list(Attempt.objects.filter(started_at__gt=start, started_at__lte=end, snapshot_at__isnull=False,
                                            snapshot_deleted_pod__isnull=False).order_by("snapshot_at").values_list(
        "snapshot_at", "snapshot_deleted_pod").distinct())
    times = [when for when, _ in snapshots]

    def when(deleted_id: int, deleted_at: datetime) -> datetime:
        i, seen = bisect.bisect_left(times, deleted_at), deleted_at
        first = i
        while first > 0 and snapshots[first - 1][1] >= deleted_id:
            first -= 1
        if first < i:
            return snapshots[first][0] - timedelta(microseconds=1)
        # Snapshots are read in order and each sees every deletion the one before saw: stop at the first that saw it.
        while i < len(snapshots) and snapshots[i][1] < deleted_id:
            seen = snapshots[i][0] + timedelta(microseconds=1)
            i += 1
        return seen

    return when


@dataclass
class _NodeLife:
    """One node from its creation to its deletion (or now), with the manifests it had: `revisions` are
    (replaced_at, manifest before) from migration 0014's trigger, oldest first; `final` is the last one."""

    name: str
    created_at: datetime
    deleted_at: datetime | None
    final: dict
    revisions: list[tuple[datetime, dict]] = field(default_factory=list)

    def manifest_at(self, when: datetime) -> dict:
        return next((m for replaced, m in self.revisions if replaced > when), self.final)

    def changes(self):
        """(when, the manifest from then on) for each change that a scheduler sees: one to the labels, taints,
        allocatable, cordon or images. A kubelet's status heartbeat (conditions' times) changes none and is
        left out, or a real cluster's trace would hold one per node every few minutes, each rebuilding the
        replay's node table."""
        later = [m for _, m in self.revisions[1:]] + [self.final]
        out = []
        for (replaced, before), after in zip(self.revisions, later):
            if _seen(before) != _seen(after):
                out.append((replaced, after))
        return out


def _seen(manifest: dict):
    """What the scheduler reads of a node (its NodeSpec); the manifest itself where it cannot be read."""
    try:
        return node_from_manifest(manifest)
    except ManifestError:
        return manifest


def _node_lives(end: datetime) -> list[_NodeLife]:
    lives = [_NodeLife(name, created, None, manifest) for name, created, manifest in
             Node.objects.filter(created_at__lte=end).values_list("name", "created_at", "manifest")]
    lives += [_NodeLife(name, created, deleted, manifest) for name, created, deleted, manifest in
              DeletedNode.objects.filter(created_at__lte=end).values_list("name", "created_at", "deleted_at", "manifest")]
    by_name: dict[str, list[_NodeLife]] = {}
    for life in lives:
        by_name.setdefault(life.name, []).append(life)
    # A name used again after a deletion is another life: a revision belongs to the one it fell in.
    for name, replaced, manifest in NodeRevision.objects.filter(name__in=by_name).order_by("replaced_at", "id").values_list(
            "name", "replaced_at", "manifest"):
        life = next((x for x in by_name[name] if x.created_at <= replaced
                     and (x.deleted_at is None or replaced <= x.deleted_at)), None)
        if life is not None:
            life.revisions.append((replaced, manifest))
    return sorted(lives, key=lambda x: (x.created_at, x.name))


def _started(manifest: dict, bound_at: datetime) -> dict:
    """A pod bound before the start as the live snapshot reads it: with no status.startTime (no kubelet wrote
    one: the simulated cluster's pods), it started when bound (placed_pods). Preemption orders by it."""
    status = manifest.get("status")
    if isinstance(status, dict) and status.get("startTime"):
        return manifest
    return {**manifest, "status": {**(status if isinstance(status, dict) else {}), "startTime": bound_at.isoformat()}}


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
        {"apiVersion": "v1", "kind": "Pod", **p} for p in pods]}
    trace = tr.trace_from_manifests(json.dumps(listing), "<cluster>", source="cluster")
    trace.header.update({"start": now.isoformat(), "end": now.isoformat()})
    for api_version, kind, reply in text_objects:
        trace.objects += [{"apiVersion": api_version, "kind": kind, **item} for item in reply.get("items", [])]
    return trace
