"""Business operations on the simulated cluster: apply and delete nodes and pods (their events: state/events.py).

Each operation is all-or-nothing (one transaction); what others must see (queue entries,
cluster events) is published after commit.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field as dataclass_field

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ..engine import scheduling_gates
from ..engine.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from ..manifests.errors import ManifestError, Problem, uid_taken
from ..manifests.objects import ParsedNode, ParsedPod
from ..models import POD_UID_CONSTRAINT, ClusterEvent, Node, Pod
from ..queue import hints
from ..queue.kick import kick
from ..state.events import cluster_event_record
from ..state.reservations import (add_node_usage, node_recount, pod_usage_fields, release_assumed, release_node_usage,
                                 row_usage)
from ..versions.profiles import scheduler_names
from ..manifests.cluster_objects import ParsedObject
from ..state.placed_pods import placed_pod_changed
from ..state.sql import lock_in_order
from ..telemetry import live
from .objects import cluster_object_apply, priority_classes
from ..manifests.priority import admit_priority, keep_priority


@dataclass
class ApplyResult:
    created: list[str]
    configured: list[str]
    unchanged: list[str]
    # ("Node", "", name) or ("Pod", namespace, name) -> "created" | "configured" | "unchanged":
    # pods of the same name in two namespaces are both "pod/NAME" in the lists above.
    statuses: dict[tuple[str, str, str], str] = dataclass_field(default_factory=dict)

    def record(self, kind: str, namespace: str, name: str, status: str) -> None:
        getattr(self, status).append(f"{kind.lower()}/{name}")
        self.statuses[(kind, namespace, name)] = status


# ---- apply ------------------------------------------------------------------------------

def _node_columns(parsed: ParsedNode) -> dict:
    alloc = parsed.spec.allocatable
    return {
        "manifest": parsed.manifest,
        "unschedulable": parsed.spec.unschedulable,
        "alloc_cpu": alloc.get(CPU, 0),
        "alloc_memory": alloc.get(MEMORY, 0),
        "alloc_ephemeral": alloc.get(EPHEMERAL_STORAGE, 0),
        "alloc_pods": alloc.get(PODS, 0),
        "alloc_scalar": {r: v for r, v in alloc.items() if r not in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)},
    }


def cluster_apply(objects: list[ParsedNode | ParsedPod], *, filename: str = "-") -> ApplyResult:
    """Apply parsed Nodes and Pods in one transaction: nodes first, then pods; nothing on any problem."""
    try:
        return _cluster_apply(objects)
    except IntegrityError as exc:
        if POD_UID_CONSTRAINT not in str(exc):
            raise
        # Another apply committed a pod with one of these uids after we looked: look again, and the
        # duplicate is reported as a problem like any other (nothing of this apply was kept).
        return _cluster_apply(objects)


def _cluster_apply(objects: list[ParsedNode | ParsedPod]) -> ApplyResult:
    result = ApplyResult([], [], [])
    to_queue: list[tuple[str, int]] = []
    assigned: list[hints.PodChange] = []  # pods created bound, bound pods relabelled: queueing hints
    own_updates: list[tuple[str, dict, dict]] = []  # pending pods updated (key, old, new manifest): their hints
    node_events: list[tuple[str, str, list]] = []  # (kind, node, the hints' NodeChanges)
    problems: list[Problem] = []
    ours = scheduler_names()
    with transaction.atomic():
        nodes = _nodes_locked([obj.spec.name for obj in objects if isinstance(obj, ParsedNode)])
        for obj in objects:
            if isinstance(obj, ParsedNode):
                _node_apply(obj, result, node_events, nodes)
        # Namespaces, Services and controllers before the pods they select (one transaction either way).
        for obj in objects:
            if isinstance(obj, ParsedObject):
                cluster_object_apply(obj, result)
        # Which pods already hold the uids this apply names: one query, not one per pod.
        uid_owners = _uid_owners({obj.spec.uid for obj in objects if isinstance(obj, ParsedPod) and obj.spec.uid})
        classes = priority_classes() if any(isinstance(obj, ParsedPod) for obj in objects) else {}
        for obj in objects:
            if isinstance(obj, ParsedPod):
                problem = _pod_apply(obj, result, to_queue, ours, uid_owners, classes, assigned, own_updates)
                if problem:
                    problems.append(problem)
        if problems:
            transaction.set_rollback(True)
        else:
            for kind, name, _changes in node_events:
                cluster_event_record(kind, name)
    if problems:
        raise ManifestError(problems)
    transaction.on_commit(lambda: _publish(to_queue, node_events, assigned, own_updates))
    return result


def node_manifest_update(*, name: str, mutate) -> bool | None:
    """Change a node's manifest in place (`mutate(manifest)`: conditions, taints, spec.unschedulable), as an
    apply of the changed node would: columns re-derived, the snapshot told, unschedulable pods moved.
    None when there is no such node; else whether anything changed. A mutated manifest the decoder refuses
    is a bug of the caller: ManifestError, nothing changed."""
    from ..manifests.objects import parse_object, problems_of

    with transaction.atomic():
        node = Node.objects.select_for_update().filter(name=name).first()
        if node is None:
            return None
        manifest = json.loads(json.dumps(node.manifest))
        mutate(manifest)
        if manifest == node.manifest:
            return False
        o, parsed = parse_object(manifest)
        if parsed is None:
            raise ManifestError(problems_of(o, f"node/{name}", 1))
        result, node_events = ApplyResult([], [], []), []
        _node_apply(parsed, result, node_events, {name: node})
        for kind, event_name, _changes in node_events:
            cluster_event_record(kind, event_name)
    transaction.on_commit(lambda: _publish([], node_events))
    return bool(node_events)


def _uid_owners(uids: set[str]) -> dict[str, str]:
    """uid -> "ns/name" of the pods that already hold these uids."""
    if not uids:
        return {}
    return {uid: f"{ns}/{name}" for uid, ns, name in Pod.objects.filter(uid__in=uids).values_list("uid", "namespace", "name")}


def _nodes_locked(names: list[str]) -> dict[str, Node]:
    """The rows of these nodes that exist, locked (in name order, as every writer of several nodes locks them):
    two statements for a whole list of nodes, where a row each was a round trip each (a replica's relist of
    1,000 unchanged nodes took ~0.7 s before its pods could be stored)."""
    if not names:
        return {}
    lock_in_order(Node, "name", names)
    return {node.name: node for node in Node.objects.filter(name__in=set(names))}


def _node_apply(parsed: ParsedNode, result: ApplyResult, node_events: list, nodes: dict[str, Node]) -> None:
    """`nodes`: the locked rows by name (_nodes_locked); a node created here joins them, so a second object of
    the same name in one apply is an update of the first, as when they were applied one by one."""
    name = parsed.spec.name
    columns = _node_columns(parsed)
    node = nodes.get(name)
    if node is None:
        node = Node(name=name, **columns)
        node_recount(node)
        node.save()
        nodes[name] = node
        result.record("Node", "", name, "created")
        node_events.append((ClusterEvent.NODE_ADD, name, hints.node_changes(None, parsed.spec)))
        return
    if node.manifest == parsed.manifest:
        result.record("Node", "", name, "unchanged")
        return
    changes = hints.node_changes(node.manifest, parsed.spec)  # before the row takes the new manifest
    for field, value in columns.items():
        setattr(node, field, value)
    node.spec_version += 1
    node.save()
    result.record("Node", "", name, "configured")
    node_events.append((ClusterEvent.NODE_UPDATE, name, changes))


def _problem(parsed: ParsedPod, field_path: str, message: str) -> Problem:
    file, doc, prefix = parsed.origin
    return Problem(file=file, doc=doc, kind="Pod", ns_name=parsed.spec.key,
                   path=f"{prefix}.{field_path}" if prefix else field_path, message=message)


def _mark_gated(pod: Pod) -> None:
    """The PodScheduled condition kube-scheduler gives a gated pod (no attempt, no event)."""
    if pod.scheduled_reason != scheduling_gates.REASON:
        pod.scheduled_transition_at = timezone.now()
    pod.scheduled_status, pod.scheduled_reason, pod.scheduled_message = "False", scheduling_gates.REASON, scheduling_gates.MESSAGE


def _pod_apply(parsed: ParsedPod, result: ApplyResult, to_queue: list, ours: set[str],
               uid_owners: dict[str, str], classes: dict, assigned: list, own_updates: list) -> Problem | None:
    pod = Pod.objects.select_for_update().filter(namespace=parsed.spec.namespace, name=parsed.spec.name).first()
    if pod is None:
        # As the Priority admission plugin, on creation only (a pod's priority is immutable after).
        for path, message in admit_priority(parsed, classes):
            return _problem(parsed, path, message)
    else:
        keep_priority(parsed, pod.manifest)
    spec = parsed.spec
    manifest = parsed.manifest
    meta = manifest.setdefault("metadata", {})
    usage = pod_usage_fields(spec)
    if pod is None:
        owner = uid_owners.get(spec.uid)
        if owner is not None and owner != spec.key:
            # A second pod under one uid would never bind (one Binding per uid) and stall its batch.
            return _problem(parsed, "metadata.uid", uid_taken(spec.uid, owner))
        uid = spec.uid or meta.get("uid") or str(uuid.uuid4())
        uid_owners[uid] = spec.key
        meta["uid"] = uid
        created = parse_datetime(str(meta.get("creationTimestamp") or "")) or timezone.now()
        meta["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
        pod = Pod(namespace=spec.namespace, name=spec.name, uid=uid, manifest=manifest,
                  scheduler_name=spec.scheduler_name, priority=spec.priority, deleting=spec.deleting,
                  created_at=created, **usage)
        if spec.node_name:
            pod.node_name = spec.node_name
            pod.phase = Pod.RUNNING
            pod.scheduled_status = "True"
            pod.bound_at = created
            if Node.objects.filter(name=spec.node_name).exists():
                add_node_usage(node_name=spec.node_name, usage=usage)
            assigned.append(hints.PodChange(hints.assigned(spec.namespace, spec.name, uid, spec.node_name,
                                                           spec.labels)))  # AssignedPodAdd
        pending = not spec.node_name and spec.scheduler_name in ours and not spec.deleting
        if pending and spec.scheduling_gates:
            pending = False  # SchedulingGates' PreEnqueue: held as gated, never attempted, until its last gate goes
            _mark_gated(pod)
        if pending:
            pod.queued_at = timezone.now()
        pod.save()
        result.record("Pod", spec.namespace, spec.name, "created")
        if pending:
            to_queue.append((pod.key, spec.priority))
        return None
    # An update. As the API server: a pod's spec is (mostly) immutable once it exists, its uid entirely.
    if spec.uid and spec.uid != pod.uid:
        return _problem(parsed, "metadata.uid", f"Invalid value: {json.dumps(spec.uid)}: field is immutable")
    meta["uid"] = pod.uid
    meta["creationTimestamp"] = pod.manifest.get("metadata", {}).get("creationTimestamp")
    placed = pod.node_name or pod.assumed_node
    if placed and (usage != {f: getattr(pod, f) for f in usage} or (spec.node_name and spec.node_name != pod.node_name)):
        return _problem(parsed, "spec", "Forbidden: pod updates may not change the resources or node of a scheduled pod")
    for index, gate in scheduling_gates.added_gates(pod.manifest, manifest)[:1]:
        return _problem(parsed, *scheduling_gates.added_gates_problem(index, gate))
    if pod.manifest == manifest:
        result.record("Pod", spec.namespace, spec.name, "unchanged")
        return None
    old_manifest = pod.manifest
    if scheduling_gates.gates_of(old_manifest) and not spec.scheduling_gates:
        pod.ungated_at = timezone.now()  # its last gate removed (the rewind reads when)
    pod.manifest = manifest
    pod.priority = spec.priority
    pod.scheduler_name = spec.scheduler_name
    pod.deleting = pod.deleting or spec.deleting
    if not placed:
        for field, value in usage.items():
            setattr(pod, field, value)
        if spec.node_name:
            pod.node_name = spec.node_name
            pod.phase = Pod.RUNNING
            pod.scheduled_status = "True"
            pod.bound_at = timezone.now()
            if Node.objects.filter(name=spec.node_name).exists():
                add_node_usage(node_name=spec.node_name, usage=usage)
            assigned.append(hints.PodChange(hints.assigned(spec.namespace, spec.name, pod.uid, spec.node_name,
                                                           spec.labels)))  # AssignedPodAdd
        elif spec.scheduling_gates and spec.scheduler_name in ours:
            _mark_gated(pod)
        elif spec.scheduler_name in ours and not pod.deleting:
            if pod.scheduled_reason == scheduling_gates.REASON:  # its last gate removed: queued at once
                pod.scheduled_status, pod.scheduled_reason, pod.scheduled_message = "", "", ""
            pod.queued_at = pod.queued_at or timezone.now()
            to_queue.append((pod.key, spec.priority))
            own_updates.append((pod.key, old_manifest, manifest))  # its own update: the hints say if it moves
    pod.save()
    old_labels = (old_manifest.get("metadata") or {}).get("labels") or {}
    if pod.node_name and placed and old_labels != spec.labels:  # AssignedPodUpdate
        assigned.append(hints.PodChange(hints.assigned(spec.namespace, spec.name, pod.uid, pod.node_name, spec.labels),
                                        hints.assigned(spec.namespace, spec.name, pod.uid, pod.node_name, old_labels)))
    placed_pod_changed(pod, old_manifest)
    result.record("Pod", spec.namespace, spec.name, "configured")
    return None


def _publish(to_queue: list[tuple[str, int]], node_events: list[tuple[str, str, list]],
             assigned: list | None = None, own_updates: list | None = None) -> None:
    """After commit: tell the queue at once (the reconciler would find out within a second anyway). The node
    events move the unschedulable pods their queueing hints queue (NodeAdd, NodeUpdateNode*); a pending pod's
    own update moves it out of the pool only if its hints say so."""
    from ..queue.queues import get_queue

    queue = get_queue()
    for key, priority in to_queue:
        queue.add(key, priority)
    hints.move_after_own_updates(queue, own_updates or [])
    hints.move_after_events(queue, [c for _, _, changes in node_events for c in changes])
    hinted = hints.move_after_assigned(queue, assigned or [])
    if to_queue or node_events or hinted:
        kick()


# ---- delete -----------------------------------------------------------------------------

def pod_delete(*, namespace: str, name: str) -> bool:
    """Delete a pod now (as `kubectl delete --grace-period=0 --force`), giving back its room."""
    with transaction.atomic():
        pod = Pod.objects.select_for_update().filter(namespace=namespace, name=name).first()
        if pod is None:
            return False
        usage = row_usage(pod)
        was_bound = bool(pod.node_name)
        deleted = (pod.manifest, pod.node_name)
        if pod.node_name:
            if Node.objects.filter(name=pod.node_name).exists():
                release_node_usage(node_name=pod.node_name, usage=usage)
        elif pod.assumed_node:
            release_assumed(pod_id=pod.pk, node_name=pod.assumed_node, usage=usage)
        key = pod.key
        pod.delete()
        if was_bound:
            cluster_event_record(ClusterEvent.ASSIGNED_POD_DELETE, key)

    def publish():
        from ..queue.queues import get_queue

        queue = get_queue()
        queue.delete(key)
        if was_bound:  # the pods its deletion may help (AssignedPodDelete's hints)
            hints.move_after_events(queue, lambda: [hints.deleted_pod(*deleted)], {ClusterEvent.ASSIGNED_POD_DELETE})

    transaction.on_commit(publish)
    return True


def node_delete(*, name: str) -> bool:
    """Delete a node. Pods only assumed on it are released and go back to the queue."""
    with transaction.atomic():
        node = Node.objects.select_for_update().filter(name=name).first()
        if node is None:
            return False
        requeue = list(Pod.objects.filter(node_name="", assumed_node=name).values_list("namespace", "name", "priority"))
        Pod.objects.filter(node_name="", assumed_node=name).update(assumed_node="", assumed_at=None, binding_at=None)
        manifest = node.manifest
        node.delete()

    def publish():
        from ..queue.queues import get_queue

        queue = get_queue()
        for ns, pod_name, priority in requeue:
            queue.add(f"{ns}/{pod_name}", priority)
        if hints.move_after_node_deleted(queue, manifest):  # NodeDelete: PodTopologySpread's hint
            kick()
        live.nodes_changed([{"name": name, "state": "Deleted"}])

    transaction.on_commit(publish)
    return True
