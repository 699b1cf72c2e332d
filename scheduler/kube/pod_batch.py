"""A watch batch of pod events applied set-based: a fixed number of statements per batch, not several per pod.

The batch is replayed in memory first, event by event in the order the watch sent them, on the rows it
reads (and locks) in one SELECT: each pod's events see exactly the state the one before left, as when
they were applied one at a time. What that leaves is then written at once: one INSERT for the new rows,
one UPDATE ... FROM VALUES for the changed ones, one DELETE, one UPDATE of the nodes' counters (each
node's pods' requests summed), the audit's bindings in one INSERT; the queue hears of each pod, in the
pod's order, once the transaction commits.

A pod whose events need what only the per-pod path does (a different uid under the name, a reservation
on another node to give back, extended resources or host ports on a node, an object the parser refuses)
is left out of the replay: all its events of the batch go through `pod_upsert`/`pod_remove`, in order,
in the same transaction. Pods are independent here but for the node counters, which only add up.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone

from ..models import RESULT_BIND_FAILED, RESULT_SCHEDULED, Attempt, Binding, ClusterEvent, Node, Pod
from ..queue import hints
from ..queue.kick import kick
from ..state.events import EventSpec, events_record
from ..state.placed_pods import _topology_view
from ..state.reservations import pod_usage_fields, row_usage
from ..state.sql import JSONText, insert_many, lock_in_order, new_row, update_from_values
from . import mirror
from .jsoncodec import dumps_text, loads
from .pod_parses import PodParses

# The columns the replay may change on an existing row (the rest only the workers and the binder write,
# and the rows are locked).
UPDATED_FIELDS = ["manifest", "scheduler_name", "priority", "deleting", "phase", "req_cpu", "req_memory",
                  "req_ephemeral", "req_scalar", "nonzero_cpu", "nonzero_memory", "host_ports", "scheduled_status",
                  "scheduled_reason", "scheduled_message", "scheduled_transition_at", "node_name", "assumed_node",
                  "assumed_at", "binding_at", "bound_at", "queued_at", "nominated_node", "ungated_at", "updated_at"]

# Every node's counters moved by its pods' summed requests in one statement; generation moves once per
# batch (workers only compare it). A node that does not exist is not matched: as add/release_node_usage.
_NODE_DELTAS = """
WITH v(name, cpu, mem, eph, pods, nzc, nzm) AS (VALUES {values})
UPDATE scheduler_node SET req_cpu = req_cpu + v.cpu, req_memory = req_memory + v.mem,
    req_ephemeral = req_ephemeral + v.eph, req_pods = req_pods + v.pods, nonzero_cpu = nonzero_cpu + v.nzc,
    nonzero_memory = nonzero_memory + v.nzm, generation = generation + 1
FROM v WHERE scheduler_node.name = v.name
"""


# What the replay reads of a row's stored manifest (the rest is replaced by the event's): the labels
# (AssignedPodUpdate), the scheduling gates and the nomination (mirror._copy: a nomination the API server's
# copy drops is dropped) and what placed_pods._topology_view compares.
# A pending pod's whole manifest but its status (_PENDING_VIEW): its own update's queueing hints compare it.
_PENDING_VIEW = "CASE WHEN node_name = '' AND assumed_node = '' THEN manifest - 'status' END"
_OLD_MANIFEST = """jsonb_build_object(
    'metadata', jsonb_build_object('labels', manifest->'metadata'->'labels',
                                   'deletionTimestamp', manifest->'metadata'->'deletionTimestamp'),
    'spec', jsonb_build_object('affinity', manifest->'spec'->'affinity',
                               'schedulingGates', manifest->'spec'->'schedulingGates'),
    'status', jsonb_build_object('startTime', manifest->'status'->'startTime',
                                 'conditions', manifest->'status'->'conditions',
                                 'nominatedNodeName', manifest->'status'->'nominatedNodeName'))"""


class _Slow(Exception):
    """This pod needs the per-pod path."""


@dataclass
class _Writes:
    now: object
    rows: dict = field(default_factory=dict)  # key -> Pod (pk None: new) or None (deleted), as replayed
    original: dict = field(default_factory=dict)  # key -> the row as read (None: none)
    nodes: dict = field(default_factory=dict)  # node -> [cpu, mem, eph, pods, nzc, nzm]
    ours_bound: list = field(default_factory=list)  # (row, node): bindings our binder sent, seen by the watch
    cluster_events: list = field(default_factory=list)
    queue_ops: list = field(default_factory=list)  # (key, op, args) in the order the events came
    moved: bool = False  # a bound pod was deleted: unschedulable pods may fit now
    deleted: list = field(default_factory=list)  # (manifest, node) of those bound pods, for the hints
    assigned: list = field(default_factory=list)  # hints.PodChange: pods bound, bound pods' labels changed
    own_updates: list = field(default_factory=list)  # (key, old, new manifest): pending pods updated, their hints
    parsed: dict = field(default_factory=dict)  # id(event object) -> ParsedPod, or None: unparsable
    parses: PodParses = field(default_factory=PodParses)  # the store's: pending pods' last parses

    def node_delta(self, node: str, usage: dict, sign: int) -> None:
        delta = self.nodes.setdefault(node, [0, 0, 0, 0, 0, 0])
        for i, f in enumerate(("req_cpu", "req_memory", "req_ephemeral")):
            delta[i] += sign * usage[f]
        delta[3] += sign
        delta[4] += sign * usage["nonzero_cpu"]
        delta[5] += sign * usage["nonzero_memory"]

    def touch(self, node: str) -> None:
        self.nodes.setdefault(node, [0, 0, 0, 0, 0, 0])


def _plain(usage: dict) -> bool:
    """Usage the counters' single UPDATE can carry (extended resources and ports are JSON: per pod)."""
    return not usage.get("req_scalar") and not usage.get("host_ports")


def _key(obj: dict) -> tuple[str, str]:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return (meta.get("namespace") or "", meta.get("name") or "")


# Every column but the manifest, in this order, then the two views of it.
_READ_FIELDS = [f for f in Pod._meta.concrete_fields if f.name != "manifest"]
_READ_ROWS_SQL = (
    "SELECT {columns}, {old} AS old_manifest, {pending} AS pending_view FROM {table} "
    "WHERE (namespace, name) IN (SELECT * FROM unnest(%s::text[], %s::text[])) ORDER BY id FOR UPDATE").format(
    columns=", ".join(f'"{f.column}"' for f in _READ_FIELDS), old=_OLD_MANIFEST, pending=_PENDING_VIEW,
    table=Pod._meta.db_table)


def _read_rows(keys: list[tuple[str, str]]) -> dict:
    """The rows of these pods, locked for the rest of the transaction, in one statement."""
    if not keys:
        return {}
    namespaces, names = [k[0] for k in keys], [k[1] for k in keys]
    if connection.vendor == "postgresql":
        # The stored manifests are not read whole: every changed row takes the event's manifest, and the replay
        # reads of the old one only what _OLD_MANIFEST keeps (decoding whole manifests was a sixth of the mirror).
        # One fixed statement (the ORM's compile of the same query was a third of a small watch batch's read),
        # on a plain cursor: a RawQuerySet asks the cursor for its description once per column (psycopg builds
        # it afresh each time), 6 % of the mirror's CPU.
        rows = _pods_read(namespaces, names)
    else:
        rows = Pod.objects.select_for_update().filter(namespace__in=namespaces, name__in=names).order_by("pk")
    wanted = set(keys)
    out = {}
    for r in rows:
        if (r.namespace, r.name) in wanted:
            out[(r.namespace, r.name)] = r
    return out


def _pods_read(namespaces: list[str], names: list[str]) -> list[Pod]:
    """_READ_ROWS_SQL's rows as Pod instances (as the ORM converts each column), each with the parts of its
    manifest the replay reads as `manifest` and its pending view as `pending_view`."""
    with connection.cursor() as cursor:
        cursor.execute(_READ_ROWS_SQL, [namespaces, names])
        rows = [list(values) for values in cursor.fetchall()]
    for i, funcs, expression in _read_converters():  # a column's converters in turn, as the compiler's
        for func in funcs:
            for values in rows:
                values[i] = func(values[i], expression, connection)
    db = connection.alias
    out = []
    for values in rows:
        pending = values.pop()
        old = values.pop()
        row = Pod.from_db(db, _READ_NAMES, values)
        row.manifest = loads(old) if isinstance(old, (str, bytes)) else old
        row.pending_view = loads(pending) if isinstance(pending, (str, bytes)) else pending
        out.append(row)
    return out


_READ_NAMES = [f.attname for f in _READ_FIELDS]
_CONVERTERS: dict = {}


def _read_converters() -> list:
    """(position, converters, column) of _READ_FIELDS' values the backend or the field converts (the JSON
    fields), as the ORM's compiler has them; worked out once per connection's vendor."""
    memo = _CONVERTERS.get(connection.vendor)
    if memo is None:
        compiler = connection.ops.compiler("SQLCompiler")(Pod.objects.all().query, connection, connection.alias)
        found = compiler.get_converters([f.get_col(Pod._meta.db_table) for f in _READ_FIELDS])
        memo = _CONVERTERS[connection.vendor] = [(i, funcs, expression) for i, (funcs, expression) in sorted(found.items())]
    return memo


def _parsed(w: _Writes, obj: dict):
    """The object parsed as `apply` parses it (once per event), or _Slow: pod_upsert says what is wrong."""
    if id(obj) not in w.parsed:
        w.parsed[id(obj)] = w.parses.parse(mirror.pod_manifest(obj))
    if w.parsed[id(obj)] is None:
        raise _Slow()
    return w.parsed[id(obj)]


def _upsert(w: _Writes, key, obj: dict, ours: set[str]) -> None:
    parsed = _parsed(w, obj)
    spec, manifest = parsed.spec, parsed.manifest
    usage = pod_usage_fields(spec)
    condition = mirror._scheduled_condition(manifest)
    phase = (manifest.get("status") or {}).get("phase") or Pod.PENDING
    row = w.rows.get(key)
    if row is not None and row.uid != spec.uid:
        raise _Slow()  # the same name, a new pod: pod_upsert removes the old one
    if row is None:
        created = mirror._time((manifest.get("metadata") or {}).get("creationTimestamp")) or w.now
        # new_row: Model.__init__'s work per field and keyword was ~10 % of a new pod's event.
        row = new_row(Pod, namespace=spec.namespace, name=spec.name, uid=spec.uid, created_at=created)
        mirror._copy(row, spec, manifest, usage, phase, condition, new=True)
        if spec.node_name:
            if not _plain(usage):
                raise _Slow()
            row.node_name = spec.node_name
            row.bound_at = created
            w.node_delta(spec.node_name, usage, +1)
            w.assigned.append(hints.PodChange(spec))
        elif spec.scheduler_name in ours and not spec.deleting:
            row.queued_at = w.now
            w.queue_ops.append((key, "add", (row.key, spec.priority)))
        w.rows[key] = row
        return
    old_manifest = row.manifest
    # Its manifest as stored but the status (the row read holds only part of it), or as an earlier event left it.
    old_view = row.__dict__.pop("pending_view", None) or old_manifest
    was_pending = not row.node_name and not row.assumed_node
    old_labels = ((old_manifest or {}).get("metadata") or {}).get("labels") or {}
    if row.node_name and spec.node_name == row.node_name and old_labels != spec.labels:
        # AssignedPodUpdate: a bound pod's labels changed.
        w.assigned.append(hints.PodChange(spec, hints.assigned(row.namespace, row.name, row.uid, row.node_name,
                                                               old_labels)))
    if spec.node_name and not row.node_name and row.assumed_node and row.assumed_node != spec.node_name:
        raise _Slow()  # bound elsewhere: our reservation is given back per pod
    if was_pending:
        for f, value in usage.items():  # a pending pod's requests may still change
            setattr(row, f, value)
    mirror._copy(row, spec, manifest, usage, phase, condition, new=False)
    if spec.node_name and not row.node_name:
        if row.assumed_node == spec.node_name:
            if row.binding_at is not None:
                w.ours_bound.append((row, spec.node_name))
        else:
            current = row_usage(row)
            if not _plain(current):
                raise _Slow()
            w.node_delta(spec.node_name, current, +1)
        row.node_name = spec.node_name
        row.assumed_node = ""
        row.assumed_at = None
        row.binding_at = None
        row.bound_at = row.bound_at or w.now
        w.queue_ops.append((key, "done", (row.key,)))
        w.assigned.append(hints.PodChange(spec))  # AssignedPodAdd
    elif was_pending and spec.scheduler_name in ours and not spec.deleting:
        row.queued_at = row.queued_at or w.now
        w.queue_ops.append((key, "add", (row.key, spec.priority)))
        w.own_updates.append((row.key, old_view, row.manifest))
    elif was_pending:
        w.queue_ops.append((key, "done", (row.key,)))  # no longer ours, or being deleted
    node = row.node_name or row.assumed_node
    if node and _topology_view(old_manifest) != _topology_view(row.manifest):
        w.touch(node)  # a placed pod's labels or affinity changed: its node's pods are read again


def _delete(w: _Writes, key, obj: dict) -> None:
    w.parses.forget(obj)
    row = w.rows.get(key)
    uid = (obj.get("metadata") or {}).get("uid")
    if row is None or (uid and row.uid != uid):
        return
    if row.node_name:
        usage = row_usage(row)
        if not _plain(usage):
            raise _Slow()
        w.node_delta(row.node_name, usage, -1)
        w.cluster_events.append(ClusterEvent(kind=ClusterEvent.ASSIGNED_POD_DELETE, object_name=row.key))
        w.moved = True
        w.deleted.append((row.manifest, row.node_name))
    elif row.assumed_node:
        raise _Slow()  # its reservation is given back per pod
    w.rows[key] = None
    w.queue_ops.append((key, "delete", (row.key,)))


def pods_apply_batch(events: list[tuple[str, dict]], *, queue, ours: set[str], apply_one,
                     parses: PodParses | None = None) -> int:
    """Apply a watch batch of pod events in the caller's transaction (see the module's docstring); the
    events of pods that need the per-pod path go to `apply_one(event_type, obj)`. Returns their number.
    `parses`: the store's memory of pending pods' parses (kube/pod_parses.py), kept from batch to batch."""
    keys = list(dict.fromkeys(_key(obj) for _, obj in events))
    found = _read_rows(keys)
    original = {k: found.get(k) for k in keys}
    now = timezone.now()
    slow: set = set()
    parsed: dict = {}
    parses = parses or PodParses()
    w = _replay(events, original, slow, ours, now, parsed, parses)
    if slow:
        # What a slow pod's events noted before it turned slow is in `w`: replay without those pods, from the
        # rows as read. (Whether a pod is slow depends on its own events alone: no new one turns up.)
        w = _replay(events, original, slow, ours, now, parsed, parses)
    _write(w, keys, slow)
    sent = 0
    for event_type, obj in events:  # every event of those pods, in order, as one at a time
        if _key(obj) in slow:
            apply_one(event_type, obj)
            sent += 1
    _after_commit(w, queue)
    return sent


def _replay(events, original: dict, slow: set, ours, now, parsed: dict, parses: PodParses) -> _Writes:
    """The batch replayed on copies of the rows read, leaving out the pods in `slow` and adding to it those
    that turn out to need the per-pod path."""
    w = _Writes(now=now, original=original, parsed=parsed, parses=parses)
    w.rows = {k: copy.copy(row) for k, row in original.items() if k not in slow}
    for event_type, obj in events:
        key = _key(obj)
        if key in slow:
            continue
        try:
            if event_type == "DELETED":
                _delete(w, key, obj)
            else:
                _upsert(w, key, obj, ours)
        except _Slow:
            slow.add(key)
    return w


def _write(w: _Writes, keys, slow: set) -> None:
    deleted, created, changed = [], [], []
    for key in keys:
        if key in slow:
            continue
        before, after = w.original.get(key), w.rows.get(key)
        if before is not None and (after is None or after.pk != before.pk):
            deleted.append(before.pk)
        if after is not None and after.pk is None:
            created.append(after)
        elif after is not None:
            changed.append(after)
    if deleted:
        # What Pod.delete() does for these rows (the audit keeps its attempts and bindings, unlinked), in three
        # statements: the ORM's collector would read the rows again and delete them 100 at a time.
        Attempt.objects.filter(pod_id__in=deleted).update(pod=None)
        Binding.objects.filter(pod_id__in=deleted).update(pod=None)
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {Pod._meta.db_table} WHERE id IN ({', '.join(['%s'] * len(deleted))})", deleted)
    if created:
        manifests = [r.manifest for r in created]
        try:
            for r in created:
                r.manifest = _manifest_text(r.manifest)
            insert_many(Pod, created)  # COPY: the driver converts no parameters (bulk_create: a third of the mirror)
        finally:
            for r, manifest in zip(created, manifests):
                r.manifest = manifest
    if changed:
        update_from_values(Pod, UPDATED_FIELDS, [(r.pk, *(w.now if f == "updated_at" else _manifest_text(r.manifest)
                                                          if f == "manifest" else getattr(r, f)
                                                          for f in UPDATED_FIELDS)) for r in changed])
    if w.nodes:
        lock_in_order(Node, "name", w.nodes)  # in the order workers and the binder take them: no deadlock
        values = ", ".join(["(%s, %s::bigint, %s::bigint, %s::bigint, %s::int, %s::bigint, %s::bigint)"] * len(w.nodes))
        params = [x for name, d in sorted(w.nodes.items()) for x in (name, *d)]
        with connection.cursor() as cursor:
            cursor.execute(_NODE_DELTAS.format(values=values), params)
    if w.cluster_events:
        ClusterEvent.objects.bulk_create(w.cluster_events)
    if w.ours_bound:
        _record_our_bindings(w.ours_bound, w.now)


def _manifest_text(manifest):
    """A parsed manifest as the JSON text its column stores (orjson's, read back the same as json.dumps'; a
    manifest's encoding was a tenth of the mirror's CPU); anything but a dict or a list as it is (Django's)."""
    return JSONText(dumps_text(manifest)) if type(manifest) in (dict, list) else manifest


# Per pod bound (its row, the node): its latest attempt on that node not yet linked to a binding; and the bindings
# inserted with those attempts, as bulk_create(ignore_conflicts=True) (once per pod uid, whoever records it
# first), in the pods' order. One statement, one round trip (the read and the insert were two).
_RECORD_OUR_BINDINGS = f"""
WITH v AS (SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[])
           WITH ORDINALITY AS v(pod_id, namespace, pod_name, pod_uid, node_name, ord)),
latest AS (
    SELECT DISTINCT ON (a.pod_id) a.id, a.pod_id, a.result, a.message
    FROM {Attempt._meta.db_table} a
    JOIN v ON a.pod_id = v.pod_id AND a.node_name = v.node_name
    LEFT JOIN {Binding._meta.db_table} b ON b.attempt_id = a.id
    WHERE b.id IS NULL
    ORDER BY a.pod_id, a.started_at DESC, a.id DESC),
inserted AS (
    INSERT INTO {Binding._meta.db_table} (pod_id, namespace, pod_name, pod_uid, node_name, attempt_id, bound_at)
    SELECT v.pod_id, v.namespace, v.pod_name, v.pod_uid, v.node_name, latest.id, %s::timestamptz
    FROM v LEFT JOIN latest ON latest.pod_id = v.pod_id ORDER BY v.ord
    ON CONFLICT DO NOTHING)
SELECT id, pod_id, result, message FROM latest
"""


def _record_our_bindings(bound: list, now) -> None:
    """mirror._record_our_binding for many pods: the attempts read and the bindings inserted in one plain statement
    (the ORM's read and bulk_create were two thirds of a small watch batch of bound pods)."""
    if connection.vendor != "postgresql":
        return _record_our_bindings_orm(bound, now)
    with connection.cursor() as cursor:
        cursor.execute(_RECORD_OUR_BINDINGS, [[row.pk for row, _ in bound], [row.namespace for row, _ in bound],
                                              [row.name for row, _ in bound], [row.uid for row, _ in bound],
                                              [node for _, node in bound], now])
        latest = {pod_id: Attempt(pk=pk, pod_id=pod_id, result=result, message=message)
                  for pk, pod_id, result, message in cursor.fetchall()}
    _bind_failed_then_bound(bound, latest, now)


def _record_our_bindings_orm(bound: list, now) -> None:
    wanted = {row.pk: node for row, node in bound}
    latest: dict[int, Attempt] = {}
    for a in (Attempt.objects.filter(pod_id__in=list(wanted), node_name__in=set(wanted.values()), binding__isnull=True)
              .order_by("-started_at", "-id").only("id", "pod_id", "node_name", "result", "message")):
        if a.node_name == wanted[a.pod_id] and a.pod_id not in latest:
            latest[a.pod_id] = a
    Binding.objects.bulk_create(
        [Binding(pod_id=row.pk, namespace=row.namespace, pod_name=row.name, pod_uid=row.uid, node_name=node,
                 attempt_id=latest[row.pk].pk if row.pk in latest else None, bound_at=now) for row, node in bound],
        ignore_conflicts=True)  # once per pod uid, whoever records it first
    _bind_failed_then_bound(bound, latest, now)


def _bind_failed_then_bound(bound: list, latest: dict, now) -> None:
    """An attempt whose binder had given up (rare) is scheduled after all: the watch shows the pod bound."""
    for row, node in bound:
        attempt = latest.get(row.pk)
        if attempt is not None and attempt.result == RESULT_BIND_FAILED:  # the binder had given up: rare
            Attempt.objects.filter(pk=attempt.pk).update(
                result=RESULT_SCHEDULED, message=f"{attempt.message} (the watch then showed the pod bound to {node})")
            events_record([EventSpec("Normal", "Scheduled", f"Successfully assigned {row.namespace}/{row.name} to {node}",
                                     "Pod", row.namespace, row.name, row.uid, action="Binding",
                                     reporting_controller=row.scheduler_name)], now=now)


def _after_commit(w: _Writes, queue) -> None:
    ops, moved, assigned, deleted = list(w.queue_ops), w.moved, list(w.assigned), list(w.deleted)
    own_updates = list(w.own_updates)
    if not ops and not assigned:
        return

    def publish():
        # Consecutive "done"s go in one round trip, and consecutive "add"s in another (a watch batch of new
        # pods: one round trip, not one each); the order of the rest is kept.
        run: list = []
        kind = None

        def flush():
            if run:
                queue.done_many(run) if kind == "done" else queue.add_many(run)
                run.clear()

        for _key_, op, args in ops:
            if op in ("done", "add"):
                if op != kind:
                    flush()
                    kind = op
                run.append(args[0] if op == "done" else args)
                continue
            flush()
            kind = None
            getattr(queue, op)(*args)  # delete (the pod is gone)
        flush()
        hints.move_after_own_updates(queue, own_updates)  # after their adds (priorities)
        if moved:  # the pods these deletions may help (AssignedPodDelete's hints), specs read only if some wait
            hints.move_after_events(queue, lambda: [hints.deleted_pod(*d) for d in deleted],
                                    {ClusterEvent.ASSIGNED_POD_DELETE})
        hinted = hints.move_after_assigned(queue, assigned)
        if hinted or any(op == "add" for _, op, _args in ops):
            kick()

    mirror.publish_after_commit(publish)
