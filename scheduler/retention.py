"""Retention: attempts, events, cluster events and bindings older than their horizon are deleted, a
bounded batch at a time, so the tables stop growing without a long lock.

Each kind of row has its own horizon (SCHEDBOARD_RETAIN_*; None keeps it forever). A run deletes at
most SCHEDBOARD_RETENTION_BATCH rows per statement, each batch in its own short transaction, the
tables in turn, until nothing old is left or SCHEDBOARD_RETENTION_BUDGET is spent; the next run
(celery beat, or the embedded runner) goes on. On Postgres a batch locks its rows with SKIP LOCKED
and never waits for a lock: a row another transaction holds (an event being bumped, the binding of a
pod being deleted) is left for the next run, so retention can be in no deadlock, two runs never wait on
each other, and inserts never wait (they touch no old row); an upsert of an old event waits for one
batch at most, then inserts it anew (its time to live had passed).

Why deleting cluster events never makes a reconciler miss one: each reconciler reads the rows past
the last id it read (loop.reconcile), once a reconcile period, and the horizon is at least that period
plus the five minutes a pod waits at most in the unschedulable queue (podMaxInUnschedulablePodsDuration,
after which the queue moves it without any event) plus a minute of slack (config/settings.py refuses
less). So a running reconciler has read an event long before it can go, and one that stalled for longer
than the horizon has nothing left to gain from it: every pod the event could have moved has been moved
by the leftover flush. The newest row is never deleted: ids are then never handed out again, whatever a
database does with a deleted maximum, so "past the last id I read" keeps meaning "new".

Foreign keys: an Attempt points at its Pod (kept); a Binding points at its Attempt (SET_NULL). A batch of
attempts first unlinks the bindings that point at them, in the same transaction: a binding outlives its
attempt (the audit shows it as a binding whose attempt record was deleted; dashboard/audit.py).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from .models import Attempt, Binding, ClusterEvent, DeletedNode, DeletedPod, Event, NodeRevision

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Kind:
    """One kind of row under retention: its table, the time its age counts from, and its setting."""

    name: str  # as the audit page and the report say it
    model: type
    time_field: str
    setting: str
    # The order a batch picks rows in: an index on the time where there is one; cluster events (no
    # time index, a few minutes of rows) by id, which follows their time.
    order_field: str


KINDS = (
    Kind("attempts", Attempt, "started_at", "SCHEDBOARD_RETAIN_ATTEMPTS", "started_at"),
    Kind("events", Event, "last_timestamp", "SCHEDBOARD_RETAIN_EVENTS", "last_timestamp"),
    Kind("cluster events", ClusterEvent, "created_at", "SCHEDBOARD_RETAIN_CLUSTER_EVENTS", "id"),
    Kind("bindings", Binding, "bound_at", "SCHEDBOARD_RETAIN_BINDINGS", "bound_at"),
    # Deleted pods and nodes serve the rewind, which reaches back as far as the attempts do.
    Kind("deleted pods", DeletedPod, "deleted_at", "SCHEDBOARD_RETAIN_ATTEMPTS", "deleted_at"),
    Kind("deleted nodes", DeletedNode, "deleted_at", "SCHEDBOARD_RETAIN_ATTEMPTS", "deleted_at"),
    # Node manifests before each change serve recorded traces, which reach back as far too.
    Kind("node revisions", NodeRevision, "replaced_at", "SCHEDBOARD_RETAIN_ATTEMPTS", "replaced_at"),
)


def horizon(kind: Kind) -> float | None:
    """Seconds a row of this kind is kept; None: forever."""
    return getattr(settings, kind.setting)


@dataclass
class Report:
    deleted: dict[str, int]
    statements: dict[str, int]
    done: bool  # False when the budget ran out with old rows left
    seconds: float


def purge(*, now: datetime | None = None, batch: int | None = None, budget: float | None = None,
          clock=time.monotonic) -> Report:
    """Delete what is past its horizon, batch by batch, table by table in turn, within the time budget."""
    now = now or timezone.now()
    batch = batch or settings.SCHEDBOARD_RETENTION_BATCH
    budget = settings.SCHEDBOARD_RETENTION_BUDGET if budget is None else budget
    started = clock()
    pending = [(kind, now - timedelta(seconds=seconds)) for kind in KINDS if (seconds := horizon(kind)) is not None]
    deleted = {kind.name: 0 for kind in KINDS}
    statements = {kind.name: 0 for kind in KINDS}
    spent = False
    while pending and not spent:
        for kind, cutoff in list(pending):  # a batch from each table in turn: none waits for another
            if clock() - started >= budget:
                spent = True
                break
            picked, n = _delete_batch(kind, cutoff, batch)
            deleted[kind.name] += n
            statements[kind.name] += 1
            if picked < batch or n == 0:  # nothing old left in this table, or only rows others hold
                pending.remove((kind, cutoff))
    report = Report(deleted, statements, done=not pending, seconds=round(clock() - started, 3))
    _record(report)
    return report


def _delete_batch(kind: Kind, cutoff: datetime, batch: int) -> tuple[int, int]:
    """One statement's worth: at most `batch` rows older than `cutoff`, in one short transaction.
    Returns (rows picked, rows deleted)."""
    table = kind.model._meta.db_table
    column = kind.model._meta.get_field(kind.time_field).column
    order = kind.model._meta.get_field(kind.order_field).column
    where = f"{column} < %s"
    params: list = [connection.ops.adapt_datetimefield_value(cutoff)]
    if kind.model is ClusterEvent:
        # The newest row stays, so its id is never handed out again (see the module's docstring).
        where += f" AND id < (SELECT MAX(id) FROM {table})"
    lock = " FOR UPDATE SKIP LOCKED" if connection.vendor == "postgresql" else ""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT id FROM {table} WHERE {where} ORDER BY {order} LIMIT %s{lock}", [*params, batch])
            picked = [row[0] for row in cursor.fetchall()]
            ids = _unlink_bindings(cursor, picked, lock) if kind.model is Attempt else picked
            if not ids:
                return len(picked), 0
            cursor.execute(f"DELETE FROM {table} WHERE id IN ({', '.join(['%s'] * len(ids))})", ids)
            return len(picked), cursor.rowcount


def _unlink_bindings(cursor, attempt_ids: list[int], lock: str) -> list[int]:
    """Clear the bindings' links to these attempts and return the attempts now free to delete.

    Binding.attempt is SET_NULL, which Django applies itself (the database constraint has no ON DELETE
    action): the links go first, or the delete would violate it. A binding another transaction holds
    (its pod being deleted, which also unlinks that pod's attempts) keeps its attempt for the next run
    rather than making this batch wait for it, and that transaction wait for this one: a deadlock."""
    if not attempt_ids:
        return []
    table = Binding._meta.db_table
    marks = ", ".join(["%s"] * len(attempt_ids))
    cursor.execute(f"SELECT attempt_id FROM {table} WHERE attempt_id IN ({marks})", attempt_ids)
    linked = {row[0] for row in cursor.fetchall()}
    if not linked:
        return attempt_ids
    cursor.execute(f"SELECT id, attempt_id FROM {table} WHERE attempt_id IN ({marks}){lock}", attempt_ids)
    held = cursor.fetchall()
    busy = linked - {attempt for _, attempt in held}
    if held:
        cursor.execute(f"UPDATE {table} SET attempt_id = NULL WHERE id IN ({', '.join(['%s'] * len(held))})",
                       [pk for pk, _ in held])
    return [pk for pk in attempt_ids if pk not in busy]


def _record(report: Report) -> None:
    from .telemetry import metrics

    for name, n in report.deleted.items():
        if n:
            metrics.retention_deleted_rows.labels(name).inc(n)
    if any(report.deleted.values()):
        log.info("retention: deleted %s in %.3f s%s",
                 ", ".join(f"{n} {name}" for name, n in report.deleted.items() if n), report.seconds,
                 "" if report.done else " (budget spent; the next run goes on)")


# ---- what the audit page shows ---------------------------------------------------------------

@dataclass
class Retained:
    name: str
    setting: str
    seconds: float | None  # None: forever
    oldest: datetime | None  # the oldest row still present; None: the table is empty


def retained() -> list[Retained]:
    """Each kind's horizon and its oldest row still present: one read at the end of an index each
    (cluster events by id, which follows their time: the table holds minutes of rows)."""
    return [Retained(kind.name, kind.setting, horizon(kind),
                     kind.model.objects.order_by(kind.order_field).values_list(kind.time_field, flat=True).first())
            for kind in KINDS]
