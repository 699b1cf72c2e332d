"""The cluster's nodes and pods mirrored into the Postgres tables the loop, dashboard and audit read.

The API server is the truth here: a pod's spec.nodeName, whoever set it, is what counts against a
node. Node and pod rows change through the same services and compare-and-set helpers as `apply`
(cluster_apply, node_delete, add/release usage), so node counters stay equal to their pods' requests.
Only unbound pods with one of our scheduler names are queued.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ..manifests import ManifestError, ParsedNode, ParsedPod, _parse_object
from ..models import ClusterEvent, Node, Pod
from ..profiles import scheduler_names
from ..reservations import add_node_usage, pod_usage_fields, release_assumed, release_node_usage
from ..services import cluster_apply, cluster_event_record, node_delete

log = logging.getLogger(__name__)

# The node and pod watches run in two threads of the one leading process. A pod bound to a node and
# that node, arriving at once, must not miss each other (the pod looks for the node row, the node
# recounts the pods): their mirror writes take turns.
MIRROR_LOCK = threading.RLock()

# What of a Node the scheduler reads. The kubelet rewrites the rest (heartbeats, conditions) every
# few seconds; mirroring that would rebuild every worker's node table each time.
_NODE_METADATA = ("name", "uid", "labels")
_NODE_SPEC = ("unschedulable", "taints")
_NODE_STATUS = ("allocatable", "capacity", "images")


def node_manifest(obj: dict) -> dict:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {k: meta[k] for k in _NODE_METADATA if meta.get(k) is not None},
        "spec": {k: spec[k] for k in _NODE_SPEC if spec.get(k) is not None},
        "status": {k: status[k] for k in _NODE_STATUS if status.get(k) is not None},
    }


def pod_manifest(obj: dict) -> dict:
    manifest = dict(obj)
    manifest.setdefault("apiVersion", "v1")
    manifest.setdefault("kind", "Pod")
    meta = dict(manifest.get("metadata") or {})
    meta.pop("managedFields", None)  # field ownership: large and of no use to a scheduler
    manifest["metadata"] = meta
    return manifest


def _parse(obj: dict, kind: str) -> ParsedNode | ParsedPod | None:
    o, parsed = _parse_object(obj)
    if parsed is None or o.kind != kind:
        problems = "; ".join(f"{path}: {message}" for path, message in o.found)
        meta = obj.get("metadata") or {}
        log.warning("cannot mirror %s %s/%s: %s", kind, meta.get("namespace", ""), meta.get("name", ""), problems)
        return None
    return parsed


def _scheduled_condition(manifest: dict) -> dict:
    for c in (manifest.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled":
            return c
    return {}


def _time(value) -> datetime | None:
    return parse_datetime(value) if isinstance(value, str) else None


class NodeStore:
    """Reflector store for nodes."""

    def replace(self, items: list[dict]) -> None:
        with MIRROR_LOCK:
            self._replace(items)

    def _replace(self, items: list[dict]) -> None:
        names = set()
        for obj in items:
            self._apply("ADDED", obj)
            names.add((obj.get("metadata") or {}).get("name"))
        for name in Node.objects.exclude(name__in=names).values_list("name", flat=True):
            node_delete(name=name)

    def apply(self, event_type: str, obj: dict) -> None:
        with MIRROR_LOCK:
            self._apply(event_type, obj)

    def _apply(self, event_type: str, obj: dict) -> None:
        name = (obj.get("metadata") or {}).get("name") or ""
        if event_type == "DELETED":
            node_delete(name=name)
            return
        parsed = _parse(node_manifest(obj), "Node")
        if parsed is None:
            return
        try:
            cluster_apply([parsed], filename=f"node/{name}")
        except ManifestError as exc:  # cannot happen for nodes, but never stop the watch for one object
            log.warning("cannot mirror node %s: %s", name, exc)


class PodStore:
    """Reflector store for pods (the watch excludes terminated ones, as kube-scheduler's informer does)."""

    def __init__(self, queue=None):
        self._queue = queue

    @property
    def queue(self):
        if self._queue is None:
            from ..queues import get_queue

            self._queue = get_queue()
        return self._queue

    def replace(self, items: list[dict]) -> None:
        with MIRROR_LOCK:
            self._replace(items)

    def _replace(self, items: list[dict]) -> None:
        listed = set()
        ours = scheduler_names()
        for obj in items:
            with transaction.atomic():
                self._apply("ADDED", obj, ours)
            meta = obj.get("metadata") or {}
            listed.add((meta.get("namespace"), meta.get("name")))
        for namespace, name in Pod.objects.values_list("namespace", "name"):
            if (namespace, name) not in listed:
                pod_remove(namespace=namespace, name=name, uid=None, queue=self.queue)

    def apply(self, event_type: str, obj: dict) -> None:
        self.apply_many([(event_type, obj)])

    def apply_many(self, events: list[tuple[str, dict]]) -> None:
        """Events that arrived together, in one transaction: a busy watch costs a round trip per pod, not six."""
        with MIRROR_LOCK, transaction.atomic():
            ours = scheduler_names()
            for event_type, obj in events:
                self._apply(event_type, obj, ours)

    def _apply(self, event_type: str, obj: dict, ours: set[str] | None = None) -> None:
        meta = obj.get("metadata") or {}
        if event_type == "DELETED":
            pod_remove(namespace=meta.get("namespace") or "", name=meta.get("name") or "", uid=meta.get("uid"),
                       queue=self.queue)
            return
        pod_upsert(obj, queue=self.queue, ours=ours)


def pod_upsert(obj: dict, *, queue, ours: set[str] | None = None) -> None:
    """Create or update a pod's row from the API's object; count it where the API says it is bound."""
    parsed = _parse(pod_manifest(obj), "Pod")
    if parsed is None:
        return
    spec, manifest = parsed.spec, parsed.manifest
    usage = pod_usage_fields(spec)
    condition = _scheduled_condition(manifest)
    phase = (manifest.get("status") or {}).get("phase") or Pod.PENDING
    ours = scheduler_names() if ours is None else ours
    now = timezone.now()
    publish: dict = {"add": None, "done": None, "moved": None}
    with transaction.atomic(savepoint=False):  # inside a batch's transaction: no savepoint per pod
        row = Pod.objects.select_for_update().filter(namespace=spec.namespace, name=spec.name).first()
        if row is not None and row.uid != spec.uid:
            _remove_row(row)  # the same name, a new pod: the old one is gone
            publish["done"] = row.key
            row = None
        if row is None:
            created = _time((manifest.get("metadata") or {}).get("creationTimestamp")) or now
            row = Pod(namespace=spec.namespace, name=spec.name, uid=spec.uid, created_at=created)
            _copy(row, spec, manifest, usage, phase, condition)
            if spec.node_name:
                row.node_name = spec.node_name
                row.bound_at = created
                if Node.objects.filter(name=spec.node_name).exists():
                    add_node_usage(node_name=spec.node_name, usage=usage)
            elif spec.scheduler_name in ours and not spec.deleting:
                row.queued_at = now
                publish["add"] = (row.key, spec.priority)
            row.save()
        else:
            was_pending = not row.node_name and not row.assumed_node
            if not row.node_name and not row.assumed_node:
                for field, value in usage.items():  # a pending pod's requests may still change
                    setattr(row, field, value)
            _copy(row, spec, manifest, usage, phase, condition)
            if spec.node_name and not row.node_name:
                _mark_bound(row, spec.node_name, now)
                publish["done"] = row.key
            elif was_pending and spec.scheduler_name in ours and not spec.deleting:
                row.queued_at = row.queued_at or now
                publish["add"] = (row.key, spec.priority)
            elif was_pending:
                publish["done"] = row.key  # no longer ours, or being deleted
            row.save()

    def after_commit():
        if publish["done"]:
            queue.done(publish["done"])
        if publish["add"]:
            from ..loop import kick

            queue.add(*publish["add"])
            kick()

    transaction.on_commit(after_commit)


def _copy(row: Pod, spec, manifest: dict, usage: dict, phase: str, condition: dict) -> None:
    row.manifest = manifest
    row.scheduler_name = spec.scheduler_name
    row.priority = spec.priority
    row.deleting = row.deleting or spec.deleting
    row.phase = phase
    if row.pk is None:
        for field, value in usage.items():
            setattr(row, field, value)
    if condition:
        row.scheduled_status = condition.get("status") or ""
        row.scheduled_reason = condition.get("reason") or ""
        row.scheduled_message = condition.get("message") or ""
        row.scheduled_transition_at = _time(condition.get("lastTransitionTime")) or row.scheduled_transition_at


def _mark_bound(row: Pod, node_name: str, now) -> None:
    """The API says the pod is on node_name: make the row say so, moving its room if we had it elsewhere."""
    usage = {f: getattr(row, f) for f in ("req_cpu", "req_memory", "req_ephemeral", "req_scalar", "nonzero_cpu",
                                          "nonzero_memory", "host_ports")}
    if row.assumed_node and row.assumed_node != node_name:
        # Bound elsewhere (another scheduler, or a replica that lost the lease): give our room back.
        release_assumed(pod_id=row.pk, node_name=row.assumed_node, usage=usage)
        row.assumed_node = ""
    if row.assumed_node == node_name:
        pass  # our own binding: the room is already taken by our reservation
    elif Node.objects.filter(name=node_name).exists():
        add_node_usage(node_name=node_name, usage=usage)
    row.node_name = node_name
    row.assumed_node = ""
    row.assumed_at = None
    row.binding_at = None  # a binding in flight is settled: the cluster says where the pod is
    row.bound_at = row.bound_at or now


def _remove_row(row: Pod) -> bool:
    """Delete a pod row inside the caller's transaction, giving back its room; True if it was bound."""
    usage = {f: getattr(row, f) for f in ("req_cpu", "req_memory", "req_ephemeral", "req_scalar", "nonzero_cpu",
                                          "nonzero_memory", "host_ports")}
    was_bound = bool(row.node_name)
    if row.node_name:
        if Node.objects.filter(name=row.node_name).exists():
            release_node_usage(node_name=row.node_name, usage=usage)
    elif row.assumed_node:
        release_assumed(pod_id=row.pk, node_name=row.assumed_node, usage=usage)
    row.delete()
    if was_bound:
        cluster_event_record(ClusterEvent.ASSIGNED_POD_DELETE, row.key)
    return was_bound


def pod_remove(*, namespace: str, name: str, uid: str | None, queue) -> bool:
    """The pod left the API (deleted, or terminated): forget it, free its room, tell the queue."""
    with transaction.atomic(savepoint=False):
        row = Pod.objects.select_for_update().filter(namespace=namespace, name=name).first()
        if row is None or (uid and row.uid != uid):
            return False
        key = row.key
        was_bound = _remove_row(row)

    def after_commit():
        queue.delete(key)
        if was_bound:
            queue.move_all_to_active_or_backoff(ClusterEvent.ASSIGNED_POD_DELETE)

    transaction.on_commit(after_commit)
    return True
