"""The cluster's nodes and pods mirrored into the Postgres tables the loop, dashboard and audit read.

The API server is the truth here: a pod's spec.nodeName, whoever set it, is what counts against a
node. Node and pod rows change through the same services and compare-and-set helpers as `apply`
(cluster_apply, node_delete, add/release usage), so node counters stay equal to their pods' requests.
Only unbound pods with one of our scheduler names are queued.
"""

from __future__ import annotations

import logging
import math
import threading
from datetime import datetime

from django.db import close_old_connections, connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ..cluster.services import cluster_apply, node_delete
from ..engine.pods import DEFAULT_SCHEDULER_NAME, Container, PodSpec
from ..engine.scheduling_gates import gates_of
from ..engine.resources import CPU, EPHEMERAL_STORAGE, MEMORY
from ..manifests.errors import ManifestError
from ..manifests.objects import ParsedNode, ParsedPod, parse_object
from ..models import RESULT_BIND_FAILED, RESULT_SCHEDULED, Attempt, Binding, ClusterEvent, Node, Pod
from ..queue import hints
from ..queue.kick import kick
from ..state.events import EventSpec, cluster_event_record, events_record
from ..state.reservations import SYSTEMIC_ERRORS, add_node_usage, pod_usage_fields, release_assumed, release_node_usage, row_usage
from ..telemetry import metrics
from ..versions.profiles import scheduler_names
from ..state.placed_pods import placed_pod_changed
from .pod_parses import PodParses

log = logging.getLogger(__name__)

# The node and pod watches run in two threads of the one leading process. A pod bound to a node and
# that node, arriving at once, must not miss each other (the pod looks for the node row, the node
# recounts the pods): their mirror writes take turns.
MIRROR_LOCK = threading.RLock()
# Pods of a (re)list applied per transaction: as many as a watch batch at most (reflector.MAX_BATCH).
RELIST_BATCH = 500
# A relist's first batch of pending pods, queued when it commits: small, so the workers' first batch starts soon.
RELIST_FIRST_BATCH = 100
# While this thread stores a pod (re)list's rows that hold room: the queue calls its batches' commits would
# make, held until they are all stored (publish_after_commit).
_relisting = threading.local()

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


def _parse(obj: dict, kind: str, problems: list | None = None) -> ParsedNode | ParsedPod | None:
    """The object parsed as `apply` parses it, or None (its problems appended to `problems`)."""
    o, parsed = parse_object(obj)
    if parsed is None or o.kind != kind:
        found = "; ".join(f"{path}: {message}" if path else message for path, message in o.problems) or f"not a {kind}"
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        log.warning("cannot mirror %s %s/%s: %s", kind, meta.get("namespace", ""), meta.get("name", ""), found)
        metrics.mirror_problems.labels(kind, "unparsable").inc()
        if problems is not None:
            problems.append(found)
        return None
    return parsed


def _isolated(kind: str, obj: dict, apply) -> None:
    """Apply one watched object in its own transaction; if it raises, say so loudly and go on (the rest of
    the watch batch must not wait behind it). The database's own trouble still stops the batch."""
    try:
        with transaction.atomic():
            apply()
    except SYSTEMIC_ERRORS:
        raise
    except Exception as exc:  # noqa: BLE001
        meta = obj.get("metadata") if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict) else {}
        log.exception("cannot mirror %s %s/%s: applying it raised; left as it was", kind, meta.get("namespace", ""),
                      meta.get("name", ""))
        metrics.mirror_problems.labels(kind, "failed").inc()
        text = str(exc).strip().splitlines()
        _warn(obj, kind, f"the watch event could not be applied ({type(exc).__name__}"
                         f"{': ' + text[0] if text else ''}); the object is left as it was")


def _warn(obj: dict, kind: str, message: str) -> None:
    """A Warning event about a watched object the mirror could not take as it is (best effort)."""
    meta = obj.get("metadata") if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict) else {}

    def text(key, limit=253):
        value = meta.get(key)
        return value[:limit] if isinstance(value, str) else ""

    try:
        with transaction.atomic():
            events_record([EventSpec("Warning", "FailedMirror", message, kind, text("namespace") if kind == "Pod" else "",
                                     text("name") or "<unnamed>", text("uid", 64), action="Mirroring",
                                     reporting_controller="schedboard-mirror")])
    except SYSTEMIC_ERRORS:
        raise
    except Exception:  # noqa: BLE001 - the log line is the message then
        log.exception("could not record the FailedMirror event")


def _scheduled_condition(manifest: dict) -> dict:
    for c in (manifest.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled":
            return c
    return {}


def _time(value) -> datetime | None:
    return parse_datetime(value) if isinstance(value, str) else None


def publish_after_commit(publish) -> None:
    """Run `publish` (its calls to the queue) once the current transaction commits.

    While a pod (re)list stores the pods that hold room it runs only after the last of them has committed, as
    kube-scheduler starts scheduling only once its informers' caches have synced: the workers, which pop the
    moment a pod is queued, would otherwise take a pod before a later batch's bound pods were counted on their
    nodes. (The list's pending pods come after, most urgent first: PodStore._replace.)"""
    held = getattr(_relisting, "held", None)
    if held is None:
        transaction.on_commit(publish)
    else:
        transaction.on_commit(lambda: held.append(publish))


def _usable_connection() -> None:
    """Drop this thread's database connection if an error left it unusable (Postgres restarted, the
    network dropped): the reflector's next try then connects afresh. Django does this around requests and
    Celery tasks; a watch thread runs for days and must do it itself.

    Then connect, before the caller takes MIRROR_LOCK: a new leader's nine reflector threads each open their
    first connection (a few ms each), and they would otherwise open them one after another inside the lock,
    in front of the pod list."""
    close_old_connections()
    connection.ensure_connection()


class NodeStore:
    """Reflector store for nodes."""

    def replace(self, items: list[dict]) -> None:
        _usable_connection()
        with MIRROR_LOCK:
            self._replace(items)

    def _replace(self, items: list[dict]) -> None:
        names = set()
        for obj in items:
            names.add((obj.get("metadata") or {}).get("name"))  # listed, even if it cannot be applied: never deleted
        for start in range(0, len(items), RELIST_BATCH):
            self._apply_many([("ADDED", obj) for obj in items[start:start + RELIST_BATCH]])
        for name in Node.objects.exclude(name__in=names).values_list("name", flat=True):
            node_delete(name=name)

    def apply(self, event_type: str, obj: dict) -> None:
        self.apply_many([(event_type, obj)])

    def apply_many(self, events: list[tuple[str, dict]]) -> None:
        _usable_connection()
        with MIRROR_LOCK:
            self._apply_many(events)

    def _apply_many(self, events: list[tuple[str, dict]]) -> None:
        """Node events that arrived together (or a list's page) in one transaction: one commit, not one per
        node (a list of 1,000 nodes was a thousand commits before the first pod could be mirrored). If it
        raises, the events are applied one by one, each in its own transaction, and only the one that raises
        again is skipped (loudly)."""
        try:
            with transaction.atomic():
                run: list = []  # consecutive nodes to apply: one cluster_apply (one savepoint), in order
                for event_type, obj in events:
                    if event_type == "DELETED":
                        self._apply_nodes(run)
                        run = []
                        self._apply(event_type, obj)
                    else:
                        parsed = _parse(node_manifest(obj), "Node")
                        if parsed is not None:
                            run.append(parsed)
                self._apply_nodes(run)
            return
        except SYSTEMIC_ERRORS:
            raise
        except Exception:  # noqa: BLE001 - find the event that raises
            if len(events) > 1:
                log.exception("a watch batch of %d node events raised: applying them one by one", len(events))
        for event_type, obj in events:
            _isolated("Node", obj, lambda event_type=event_type, obj=obj: self._apply(event_type, obj))

    @staticmethod
    def _apply_nodes(parsed: list) -> None:
        if parsed:
            # A refusal (cannot happen for nodes) raises: the batch is then applied node by node.
            cluster_apply(parsed, filename="nodes")

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


def _priority(obj: dict) -> int:
    """A listed pod's priority as the API server resolved it (spec.priority; 0 without one)."""
    value = (obj.get("spec") or {}).get("priority")
    return value if type(value) is int else 0


def _relist_batches(pods: list[dict]):
    """A relist's pending pods in batches: a small first one, so that the workers start on it sooner, then
    RELIST_BATCH at a time."""
    start, size = 0, RELIST_FIRST_BATCH
    while start < len(pods):
        yield pods[start:start + size]
        start, size = start + size, RELIST_BATCH


def _room_first(obj: dict) -> int:
    """0 for a bound pod, 1 for a nominated one, 2 for the rest: the order a pod list is stored in."""
    if (obj.get("spec") or {}).get("nodeName"):
        return 0
    return 1 if (obj.get("status") or {}).get("nominatedNodeName") else 2


class SchedulerNames:
    """scheduler_names(), read when first asked (`name in ...`): a watch batch that only binds pods (the events
    of our own bindings, half of all) never asks, and skips its round trip (~160 us of the mirror's CPU)."""

    __slots__ = ("_names",)

    def __init__(self):
        self._names: set[str] | None = None

    def __contains__(self, name) -> bool:
        if self._names is None:
            self._names = scheduler_names()
        return name in self._names


class PodStore:
    """Reflector store for pods (the watch excludes terminated ones, as kube-scheduler's informer does)."""

    def __init__(self, queue=None):
        self._queue = queue
        self.parses = PodParses()  # pending pods' last parses: their binding's event re-uses them

    @property
    def queue(self):
        if self._queue is None:
            from ..queue.queues import get_queue

            self._queue = get_queue()
        return self._queue

    def prepare(self, items: list[dict]) -> None:
        """Parse a list's pods while it waits for the nodes and objects to be stored (the reflector's
        `store_after`): the parses are kept (kube/pod_parses.py) and `replace` re-uses them at a quarter of a
        parse's cost (a new leader's 1,000-pod list: ~70 ms less before its first binding)."""
        for obj in items:
            if isinstance(obj, dict):
                self.parses.parse(pod_manifest(obj))

    def replace(self, items: list[dict]) -> None:
        _usable_connection()
        with MIRROR_LOCK:
            self._replace(items)

    def _replace(self, items: list[dict]) -> None:
        listed = set()
        ours = scheduler_names()
        for obj in items:
            meta = obj.get("metadata") or {}
            listed.add((meta.get("namespace"), meta.get("name")))  # listed, even if it cannot be applied: kept
        self.parses.retain(listed)  # what the list does not hold is gone
        # A (re)list is applied as watch batches are, in two steps. Until the pods that hold room are stored,
        # what the batches would tell the queue is held (publish_after_commit): the rows the list no longer has
        # are removed, then the bound pods and the nominated ones are stored, so that no worker schedules a pod
        # (and the reconciler queues no stored pending pod, loop/reconcile.py) before every node's pods are
        # counted, as kube-scheduler schedules only once its caches have synced. Then the pending pods, most
        # urgent first, each batch queued as it commits: a new leader's workers start on the first while the
        # rest is stored (a 1,000-pod backlog waited ~0.3 s for the whole list before), and pop in the order
        # kube-scheduler's activeQ would hand them out (priority, then the list's order).
        # (A list is a snapshot: the order of its pods means nothing else.)
        room = sorted((obj for obj in items if _room_first(obj) < 2), key=_room_first)
        # Stable: equal priorities keep the list's order.
        pending = sorted((obj for obj in items if _room_first(obj) == 2), key=_priority, reverse=True)
        _relisting.held = held = []
        try:
            for namespace, name in Pod.objects.values_list("namespace", "name"):
                if (namespace, name) not in listed:
                    pod_remove(namespace=namespace, name=name, uid=None, queue=self.queue)
            for start in range(0, len(room), RELIST_BATCH):
                self._apply_many([("ADDED", obj) for obj in room[start:start + RELIST_BATCH]], ours)
        finally:
            # A list that failed half way publishes nothing: the reflector lists again, and that list queues
            # every pending pod it stores (an unchanged pending row is queued again too).
            _relisting.held = None
        for publish in held:
            publish()
        for batch in _relist_batches(pending):
            self._apply_many([("ADDED", obj) for obj in batch], ours)

    def apply(self, event_type: str, obj: dict) -> None:
        self.apply_many([(event_type, obj)])

    def apply_many(self, events: list[tuple[str, dict]]) -> None:
        """Events that arrived together, in one transaction and set-based (scheduler/kube/pod_batch.py): a
        busy watch costs a few statements per batch, not several per pod.

        If that transaction raises, the events are applied again one by one, each in its own transaction,
        and only the one that raises again is skipped (loudly): the rest of the batch is mirrored.
        """
        _usable_connection()
        with MIRROR_LOCK:
            self._apply_many(events, SchedulerNames())

    def _apply_many(self, events: list[tuple[str, dict]], ours: set[str]) -> None:
        from .pod_batch import pods_apply_batch  # it builds on this module's per-pod helpers

        try:
            with transaction.atomic():
                pods_apply_batch(events, queue=self.queue, ours=ours, parses=self.parses,
                                 apply_one=lambda event_type, obj: self._apply(event_type, obj, ours))
            return
        except SYSTEMIC_ERRORS:
            raise
        except Exception:  # noqa: BLE001 - find the event that raises
            if len(events) > 1:
                log.exception("a watch batch of %d pod events raised: applying them one by one", len(events))
        for event_type, obj in events:
            _isolated("Pod", obj, lambda event_type=event_type, obj=obj: self._apply(event_type, obj, ours))

    def _apply(self, event_type: str, obj: dict, ours: set[str] | None = None) -> None:
        meta = obj.get("metadata") or {}
        if event_type == "DELETED":
            pod_remove(namespace=meta.get("namespace") or "", name=meta.get("name") or "", uid=meta.get("uid"),
                       queue=self.queue)
            return
        pod_upsert(obj, queue=self.queue, ours=ours)


def pod_upsert(obj: dict, *, queue, ours: set[str] | None = None) -> None:
    """Create or update a pod's row from the API's object; count it where the API says it is bound."""
    problems: list[str] = []
    parsed = _parse(pod_manifest(obj), "Pod", problems)
    if parsed is None:
        _upsert_unparsable(pod_manifest(obj), "; ".join(problems), queue=queue)
        return
    spec, manifest = parsed.spec, parsed.manifest
    usage = pod_usage_fields(spec)
    condition = _scheduled_condition(manifest)
    phase = (manifest.get("status") or {}).get("phase") or Pod.PENDING
    ours = scheduler_names() if ours is None else ours
    now = timezone.now()
    publish: dict = {"add": None, "done": None, "moved": None, "assigned": None, "own_update": None}
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
                publish["assigned"] = hints.PodChange(spec)  # AssignedPodAdd
            elif spec.scheduler_name in ours and not spec.deleting:
                row.queued_at = now
                publish["add"] = (row.key, spec.priority)
            row.save()
        else:
            old_manifest = row.manifest
            was_pending = not row.node_name and not row.assumed_node
            old_labels = ((old_manifest or {}).get("metadata") or {}).get("labels") or {}
            if row.node_name and spec.node_name == row.node_name and old_labels != spec.labels:
                publish["assigned"] = hints.PodChange(spec, hints.assigned(  # AssignedPodUpdate
                    row.namespace, row.name, row.uid, row.node_name, old_labels))
            if not row.node_name and not row.assumed_node:
                for field, value in usage.items():  # a pending pod's requests may still change
                    setattr(row, field, value)
            _copy(row, spec, manifest, usage, phase, condition)
            if spec.node_name and not row.node_name:
                _mark_bound(row, spec.node_name, now)
                publish["done"] = row.key
                publish["assigned"] = hints.PodChange(spec)  # AssignedPodAdd
            elif was_pending and spec.scheduler_name in ours and not spec.deleting:
                row.queued_at = row.queued_at or now
                publish["add"] = (row.key, spec.priority)
                publish["own_update"] = (row.key, old_manifest, manifest)  # its hints say if it leaves the pool
            elif was_pending:
                publish["done"] = row.key  # no longer ours, or being deleted
            row.save()
            placed_pod_changed(row, old_manifest)

    def after_commit():
        if publish["done"]:
            queue.done(publish["done"])
        if publish["add"]:
            queue.add(*publish["add"])
            if publish["own_update"]:
                hints.move_after_own_updates(queue, [publish["own_update"]])
            kick()
        if publish["assigned"] and hints.move_after_assigned(queue, [publish["assigned"]]):
            kick()

    publish_after_commit(after_commit)


def _queue_unreadable(manifest: dict, namespace: str, name: str, uid: str, scheduler_name: str, *, queue) -> None:
    """Our pending pod that cannot be read: its row holds what the API sent, and it is queued like any other,
    so its scheduling attempt fails alone with the reason (a FailedScheduling event and PodScheduled=False on
    the pod, backing off) instead of waiting in silence."""
    row = Pod.objects.select_for_update().filter(namespace=namespace, name=name).first()
    if row is not None and (row.uid != uid or row.node_name or row.assumed_node):
        return  # another pod under the name, or placed: the watch's next events settle it
    now = timezone.now()
    if row is None:
        meta = manifest.get("metadata") or {}
        row = Pod(namespace=namespace, name=name, uid=uid, created_at=_time(meta.get("creationTimestamp")) or now,
                  scheduler_name=scheduler_name)
    row.manifest, row.scheduler_name = manifest, scheduler_name
    row.queued_at = row.queued_at or now
    row.save()
    key, priority = row.key, row.priority

    def after_commit():
        queue.add(key, priority)
        kick()

    publish_after_commit(after_commit)


def _upsert_unparsable(manifest: dict, problems: str, *, queue) -> None:
    """A pod the parser rejects. Bound, it still takes room on its node: count what can be read of its
    requests (never nothing), and say so. Unbound, it takes no room: it is left as it was, loudly."""
    meta = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    spec = manifest.get("spec") if isinstance(manifest.get("spec"), dict) else {}

    def text(mapping, key, default=""):
        value = mapping.get(key)
        return value if isinstance(value, str) and value else default

    namespace, name, uid = text(meta, "namespace", "default"), text(meta, "name"), text(meta, "uid")
    node_name = text(spec, "nodeName")
    if not name or not node_name:
        _warn(manifest, "Pod", f"cannot read the pod: {problems}; it is not bound, so it takes no room")
        scheduler_name = text(spec, "schedulerName", DEFAULT_SCHEDULER_NAME)
        if name and uid and scheduler_name in scheduler_names():
            _queue_unreadable(manifest, namespace, name, uid, scheduler_name[:253], queue=queue)
        return
    usage = readable_usage(spec)
    counted = (f"cpu={usage['req_cpu']}m, memory={usage['req_memory']}, ephemeral-storage={usage['req_ephemeral']}, "
               "pods=1")
    log.warning("pod %s/%s is bound to %s but cannot be read (%s): counted on its node as %s (what can be read)",
                namespace, name, node_name, problems, counted)
    _warn(manifest, "Pod", f"cannot read the pod: {problems}; counted on node {node_name} as {counted} "
                           "(what could be read)")
    now = timezone.now()
    done = None
    row = Pod.objects.select_for_update().filter(namespace=namespace, name=name).first()
    if row is not None and row.uid != uid:
        _remove_row(row)
        done, row = row.key, None
    if row is None:
        created = _time(meta.get("creationTimestamp")) or now
        row = Pod(namespace=namespace, name=name, uid=uid, created_at=created, manifest=manifest,
                  scheduler_name=text(spec, "schedulerName", DEFAULT_SCHEDULER_NAME)[:253], node_name=node_name,
                  bound_at=created, phase=text(manifest.get("status") or {}, "phase", Pod.PENDING)[:16], **usage)
        if Node.objects.filter(name=node_name).exists():
            add_node_usage(node_name=node_name, usage=usage)
        row.save()
    elif not row.node_name:
        if not row.assumed_node:
            # Its last readable version's requests were what it asked for then; what can be read now may
            # be more. Take the larger of each, so that its room is never undercounted.
            for f in ("req_cpu", "req_memory", "req_ephemeral", "nonzero_cpu", "nonzero_memory"):
                setattr(row, f, max(getattr(row, f), usage[f]))
        row.manifest = manifest
        _mark_bound(row, node_name, now)
        row.save()
        done = row.key
    else:
        row.manifest = manifest  # bound and counted already: its room stays as counted
        row.save()
    if done:
        publish_after_commit(lambda: queue.done(done))


def readable_usage(spec: dict) -> dict:
    """A pod's cpu, memory and ephemeral-storage requests from whatever of its spec can be read.

    As resource.PodRequests over the containers whose requests (or limits, which requests default to)
    parse; pod-level spec.resources, if they can be read, count when larger. Never less than one pod.
    """
    def requests_of(resources) -> dict[str, int]:
        if not isinstance(resources, dict):
            return {}
        out: dict[str, int] = {}
        for source in ("limits", "requests"):  # requests override the limits they default to
            values = resources.get(source)
            for resource in (CPU, MEMORY, EPHEMERAL_STORAGE):
                amount = _readable_quantity(values.get(resource) if isinstance(values, dict) else None, resource)
                if amount is not None:
                    out[resource] = amount
        return out

    def containers(key: str, init: bool) -> tuple[Container, ...]:
        seq = spec.get(key) if isinstance(spec.get(key), list) else []
        return tuple(Container(name=str(i), requests=requests_of(c.get("resources")),
                               restart_policy="Always" if init and c.get("restartPolicy") == "Always" else None)
                     for i, c in enumerate(seq) if isinstance(c, dict))

    overhead = requests_of({"requests": spec.get("overhead")})
    pod = PodSpec("", "", containers=containers("containers", False), init_containers=containers("initContainers", True),
                  overhead=overhead)
    usage = pod_usage_fields(pod)
    pod_level = requests_of(spec.get("resources"))
    for resource, field in ((CPU, "req_cpu"), (MEMORY, "req_memory"), (EPHEMERAL_STORAGE, "req_ephemeral")):
        usage[field] = max(usage[field], pod_level.get(resource, 0))
    usage["nonzero_cpu"] = max(usage["nonzero_cpu"], usage["req_cpu"])
    usage["nonzero_memory"] = max(usage["nonzero_memory"], usage["req_memory"])
    usage["req_scalar"], usage["host_ports"] = {}, []
    return usage


def _readable_quantity(value, resource: str) -> int | None:
    from kubernetes.utils import parse_quantity

    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    try:
        amount = parse_quantity(str(value))
    except (ValueError, ArithmeticError):
        return None
    if not amount.is_finite() or amount < 0:
        return None
    scaled = math.ceil(amount * 1000) if resource == CPU else math.ceil(amount)
    return scaled if scaled < 2 ** 63 else None


def _copy(row: Pod, spec, manifest: dict, usage: dict, phase: str, condition: dict, *, new: bool | None = None) -> None:
    """The API object's fields onto the row; a new row (`new`, default: not saved yet) takes its usage too."""
    if row.manifest and gates_of(row.manifest) and not gates_of(manifest):
        row.ungated_at = timezone.now()  # its last scheduling gate removed (the rewind reads when)
    old_status = (row.manifest or {}).get("status") if isinstance(row.manifest, dict) else None
    was_nominated = old_status.get("nominatedNodeName") if isinstance(old_status, dict) else None
    row.manifest = manifest
    row.scheduler_name = spec.scheduler_name
    row.priority = spec.priority
    row.deleting = row.deleting or spec.deleting
    row.phase = phase
    if spec.nominated_node_name or was_nominated:
        # As the nominator's updateNominatedPod: a nomination the API server's copy adds, changes or removes (by
        # a scheduler, ours once the leader patched it, or anyone) is what every nominator counts. With none in
        # the old copy nor the new, the worker's own stays (its patch is not back yet: the event raced it).
        row.nominated_node = spec.nominated_node_name or ""
    if row.pk is None if new is None else new:
        for field, value in usage.items():
            setattr(row, field, value)
    if condition:
        row.scheduled_status = condition.get("status") or ""
        row.scheduled_reason = condition.get("reason") or ""
        row.scheduled_message = condition.get("message") or ""
        row.scheduled_transition_at = _time(condition.get("lastTransitionTime")) or row.scheduled_transition_at


def _mark_bound(row: Pod, node_name: str, now) -> None:
    """The API says the pod is on node_name: make the row say so, moving its room if we had it elsewhere."""
    usage = row_usage(row)
    if row.assumed_node and row.assumed_node != node_name:
        # Bound elsewhere (another scheduler, or a replica that lost the lease): give our room back.
        release_assumed(pod_id=row.pk, node_name=row.assumed_node, usage=usage)
        row.assumed_node = ""
    if row.assumed_node == node_name:
        # Our own binding: the room is already taken by our reservation.
        if row.binding_at is not None:
            _record_our_binding(row, node_name, now)
    elif Node.objects.filter(name=node_name).exists():
        add_node_usage(node_name=node_name, usage=usage)
    row.node_name = node_name
    row.assumed_node = ""
    row.assumed_at = None
    row.binding_at = None  # a binding in flight is settled: the cluster says where the pod is
    row.bound_at = row.bound_at or now


def _record_our_binding(row: Pod, node_name: str, now) -> None:
    """The watch shows a binding our binder sent (its mark is still on the row): record it in the audit.

    Usually the binder records it a moment later and this row is already there for it (it then only adds
    the event and the attempt's timings). But a binder whose call got no answer (BindOutcomeUnknown) or
    that died after sending never records it, and the audit would miss a placement that happened. A
    binder that had already given up as unknown left its attempt bind_failed: the watch settles it."""
    attempt = (Attempt.objects.filter(pod_id=row.pk, node_name=node_name, binding__isnull=True)
               .order_by("-started_at", "-id").only("id", "result", "message").first())
    Binding.objects.bulk_create([Binding(pod_id=row.pk, namespace=row.namespace, pod_name=row.name, pod_uid=row.uid,
                                         node_name=node_name, attempt_id=attempt.pk if attempt else None, bound_at=now)],
                                ignore_conflicts=True)  # once per pod uid, whoever records it first
    if attempt is not None and attempt.result == RESULT_BIND_FAILED:
        Attempt.objects.filter(pk=attempt.pk).update(
            result=RESULT_SCHEDULED, message=f"{attempt.message} (the watch then showed the pod bound to {node_name})")
        events_record([EventSpec("Normal", "Scheduled", f"Successfully assigned {row.namespace}/{row.name} to {node_name}",
                                 "Pod", row.namespace, row.name, row.uid, action="Binding",
                                 reporting_controller=row.scheduler_name)], now=now)


def _remove_row(row: Pod) -> bool:
    """Delete a pod row inside the caller's transaction, giving back its room; True if it was bound."""
    usage = row_usage(row)
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
        deleted = (row.manifest, row.node_name)
        was_bound = _remove_row(row)

    def after_commit():
        queue.delete(key)
        if was_bound:  # the pods its deletion may help (AssignedPodDelete's hints)
            hints.move_after_events(queue, lambda: [hints.deleted_pod(*deleted)], {ClusterEvent.ASSIGNED_POD_DELETE})

    publish_after_commit(after_commit)
    return True
