"""The binding cycle, as kube-scheduler's bindingCycle and handleBindingCycleError: mark each placed pod's
binding in flight, ask the backend, and record every outcome in one transaction (a pod whose rows the
database refuses fails alone); a binding that failed gives its room back and its pod goes back to the queue."""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field, replace

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from ..backends import get_backend
from ..backends.bind_item import BindItem
from ..backends.errors import BindError, BindOutcomeUnknown, BoundElsewhere, PodGone
from ..models import RESULT_BIND_FAILED, RESULT_ERROR, RESULT_SCHEDULED, Attempt, Binding, Node, Pod
from ..queue import hints
from ..queue.kick import kick
from ..queue.queues import get_queue
from ..state.events import EventSpec, events_record
from ..state.reservations import SYSTEMIC_ERRORS, add_node_usage, release_assumed, row_usage
from ..state.sql import in_list, insert_many, lock_in_order, new_row, select_models, update_from_values
from ..telemetry import live, metrics
from .common import ms, why

log = logging.getLogger(__name__)


def bind_batch(items: list[BindItem], *, queue=None) -> dict:
    """Bind placed pods (the seed's binding goroutine, a batch at a time)."""
    queue = queue or get_queue()
    backend = get_backend()
    binding = metrics.goroutines.labels(metrics.BINDING)  # metrics: bindings in flight in this process
    binding.inc(len(items))
    try:
        return binding_cycle(items, queue, backend)
    finally:
        binding.dec(len(items))


@dataclass(eq=False)
class _Bind:
    """One bind item and what became of it."""

    item: BindItem
    pod: Pod | None
    outcome: str = ""  # see binding_cycle
    error: BaseException | None = None
    message: str = ""
    seconds: float = 0.0
    final: str = ""  # the outcome as written (a binding whose reservation vanished meanwhile is "lost")
    recorded: bool = False  # a Binding row, an event and the attempt's success were written for it

    @property
    def node(self) -> str:
        return self.item.node

    @property
    def key(self) -> str:
        return self.item.key


def _pod_rows(ids: list[int]) -> dict[int, Pod]:
    """The pods' rows by id, every field (state/sql.select_models: one fixed statement, where the ORM compiled
    its in_bulk() afresh for every cycle, a fifth of the cycle's CPU)."""
    if not ids:
        return {}
    where, params = in_list("id", sorted(set(ids)))
    return {pod.pk: pod for pod in select_models(Pod, where, params)}


# Outcomes after which the pod leaves the queue for good (bound, or no longer ours to bind).
_DONE = ("bound", "unrecorded", "already", "elsewhere", "dropped", "gone", "unknown")


def binding_cycle(items: list[BindItem], queue, backend) -> dict:
    """Bind a batch: mark, call the backend for what is still ours, record; one pod's failure is its own.

    Outcomes: "bound" (the backend accepted), "refused" (it said no, or raised: release, back off),
    "dropped" (bound elsewhere or deleted in the cluster: release, no retry), "lost" (the reservation
    was gone before the call: nothing sent, nothing released, the pod is already someone else's
    business), "already" (bound to this node before: a redelivered job is a success, never a failure),
    "elsewhere" (bound to another node meanwhile), "gone" (deleted), "unknown" (the cluster may have
    bound it, nothing settled whether: the reservation stays, marked, for the watch or the timeout),
    "superseded" (another bind of the same batch is for the pod's current reservation: nothing sent, the
    queue left to that one's outcome).
    """
    now = timezone.now()
    items = list({(i.pod, i.node, i.attempt): i for i in items}.values())  # one job twice in a batch
    if backend.mirrors_bindings:
        marked = mark_binding(items, now)
        pods = _pod_rows([i.pod for i in items])
    else:
        # The binding is this database's own conditional write (the reconciler frees a reservation by its TTL
        # alone, never reading a mark): no mark to write; the reservations that stand are read with the rows,
        # and the binding's write checks its reservation again.
        pods = _pod_rows([i.pod for i in items])
        marked = {i.pod for i in items if (p := pods.get(i.pod)) is not None and not p.node_name
                  and p.assumed_node == i.node}
    deadline = time.monotonic() + settings.SCHEDBOARD_BINDING_TIMEOUT_SECONDS / 2.0
    binds = [_Bind(item, pods.get(item.pod)) for item in items]
    _settle(binds, backend, marked=marked)
    _call_backend(backend, [b for b in binds if b.outcome == "call"], deadline)
    _record_binds(binds, backend, now)
    _after_commit(binds, queue, backend, now)
    return {"bound": sum(b.recorded for b in binds), "failed": sum(b.final == "refused" for b in binds),
            "lost": sum(b.final == "lost" for b in binds),
            "dropped": sum(b.final in ("dropped", "elsewhere") for b in binds)}


def _after_commit(binds: list[_Bind], queue, backend, now) -> None:
    """What others learn once the batch committed: metrics, the live dashboard, the queue and the cluster."""
    # As the binding cycle, a bound pod counts as "scheduled" (attempt = scheduling cycle + binding), with
    # its attempts and its SLI; a refused binding is an "error". Once per batch.
    bound = [(b.item, b.pod, b.seconds) for b in binds if b.recorded]
    refused = [(b.item, b.pod, b.message, b.seconds) for b in binds if b.final == "refused"]
    lost = sum(b.final == "lost" for b in binds)
    transaction.on_commit(lambda: _observe_bind_batch(bound, refused, now))
    transaction.on_commit(lambda: live.bind_batch_done(  # the live dashboard, never waits
        [(item.node, pod, seconds) for item, pod, seconds in bound],
        [(item.node, pod, message, seconds) for item, pod, message, seconds in refused], now))
    if lost:
        transaction.on_commit(lambda: metrics.bind_reservations_lost.inc(lost))

    def publish():
        queue.done_many([b.key for b in binds if b.final in _DONE])
        # A lost reservation too: if its cycle still holds the pod in flight, it backs off and tries again.
        requeue_after_binding_error(queue, [b for b in binds if b.final in ("refused", "lost")])
        backend.report(failed=[(b.pod, "SchedulerError", b.message) for b in binds if b.final == "refused"],
                       scheduled=[(b.pod, b.node) for b in binds if b.recorded])
        # AssignedPodAdd: the pods waiting on an affinity or spread these bound pods may satisfy move.
        if hints.move_after_assigned(queue, [hints.PodChange(hints.assigned_from_row(b.pod, b.node))
                                             for b in binds if b.recorded]):
            kick()

    transaction.on_commit(publish)


def requeue_after_binding_error(queue, binds: list[_Bind]) -> None:
    """As handleBindingCycleError's requeue: each pod back with backoff (no node said it does not fit, so
    not unschedulable), and the room it gave back wakes the scheduler (upstream moves the pods waiting on
    AssignedPodDelete; ours is a kick)."""
    for b in binds:
        queue.add_unschedulable_if_not_present(replace(b.item.info), unschedulable=False, message=b.message)
    if binds:
        kick()


def mark_binding(items: list[BindItem], now) -> set[int]:
    """Mark every reservation that still stands as binding, in one statement: the reconciler leaves those alone.

    Conditional on the reservation (assumed on this node, not bound), so a reservation the reconciler
    freed first is not marked, and the binding is not sent. A mark already there (a previous binder
    died mid-call, the job is retried) is renewed.
    """
    return set(update_from_values(Pod, ["binding_at", "assumed_node"], [(i.pod, now, i.node) for i in items],
                                  where="scheduler_pod.assumed_node = v.assumed_node AND scheduler_pod.node_name = ''",
                                  returning=True))


def _current_binds(binds: list[_Bind], marked: set[int]) -> dict[int, _Bind]:
    """Per marked pod, the one bind of the batch its reservation is for: on the node it is assumed on, the
    latest attempt there. A pod can come more than once: a dead leader's job, put back by recover(), beside
    the job of the pod's next scheduling cycle (its mark outlived the binding timeout, the room was freed
    and the pod placed again). The mark is per pod, so it lands for both; only one may be sent, or the two
    race in the API server and the stale node can win, where the pod's room was given to another pod."""
    current: dict[int, _Bind] = {}
    for b in binds:
        if b.pod is None or b.pod.pk not in marked or b.pod.node_name or b.pod.assumed_node != b.node:
            continue
        if b.pod.pk not in current or b.item.attempt > current[b.pod.pk].item.attempt:
            current[b.pod.pk] = b
    return current


def _settle(binds: list[_Bind], backend, *, marked: set[int] | None = None) -> None:
    """Classify binds whose reservation is not (or no longer) theirs, from their pod rows as read."""
    current = _current_binds(binds, marked) if marked is not None else {}
    per_pod = Counter(b.pod.pk for b in binds if b.pod is not None)
    calls = {id(b) for b in binds if b.pod is not None and marked is not None and b.pod.pk in marked
             and (current.get(b.pod.pk) is b or (b.pod.pk not in current and per_pod[b.pod.pk] == 1))}
    bound_here = [b for b in binds if b.pod is not None and id(b) not in calls and b.pod.node_name == b.node]
    recorded = {}
    if bound_here:
        recorded = {(uid, pod_id): (attempt_id, binding_ms) for uid, pod_id, attempt_id, binding_ms in
                    Binding.objects.filter(pod_uid__in={b.pod.uid for b in bound_here})
                    .values_list("pod_uid", "pod_id", "attempt_id", "attempt__binding_ms")}
    for b in binds:
        if b.pod is None:
            b.outcome = "gone"
        elif id(b) in calls:
            b.outcome = "call"
        elif b.pod.pk in current:
            b.outcome = "superseded"
            b.message = (f"Binding skipped: attempt {current[b.pod.pk].item.attempt} of the pod binds it to "
                         f"{current[b.pod.pk].node}, where it is reserved now")
        elif b.pod.node_name == b.node:
            attempt, binding_ms = recorded.get((b.pod.uid, b.pod.pk), (0, None))
            if attempt == b.item.attempt and binding_ms is None and backend.mirrors_bindings:
                # The mirror recorded this very binding when the watch showed it, and no binder wrote its
                # part yet (this batch's first try was rolled back, or its binder died): write it now.
                b.outcome = "bound"
            elif attempt == b.item.attempt:
                b.outcome = "already"  # this very binding, recorded before: a redelivered job
            elif attempt != 0 or not backend.mirrors_bindings:
                # Bound here by another attempt (or, on the simulated cluster, by its manifest): not this attempt's.
                b.outcome, b.message = "elsewhere", "Binding skipped: the pod is already bound to this node"
            else:
                # The cluster says it is bound here and nothing recorded it: our call went out and its
                # binder stopped before writing (a leader that died), and the mirror saw it. Success.
                b.outcome = "bound"
        elif b.pod.node_name:
            # Worded as the API's 409 says it (BoundElsewhere): the same outcome, whoever noticed first.
            b.outcome, b.message = "elsewhere", f"Binding rejected: {BoundElsewhere(b.pod.node_name)}"
        else:
            b.outcome = "lost"
            b.message = (f"Binding skipped: the reservation on {b.node} was released before the binding "
                         "(expired, or the pod changed); the pod is scheduled again")


def _call_backend(backend, binds: list[_Bind], deadline: float) -> None:
    """The backend's bindings, in parallel where it can; an exception is that pod's failure."""
    requests: list[tuple[_Bind, dict]] = []
    for b in binds:
        try:
            requests.append((b, {"pod_manifest": b.pod.manifest, "node_name": b.node, "attempt_number": b.pod.attempts,
                                 "previous_bind_failures": Attempt.objects.filter(pod=b.pod, result=RESULT_BIND_FAILED)
                                 .count() if backend.counts_bind_failures(b.pod.manifest) else 0}))
        except Exception as exc:  # noqa: BLE001 - a pod whose manifest the binder cannot read
            log.exception("preparing the binding of %s failed", b.pod.key)
            b.outcome, b.error = "refused", exc
    # In parallel where the backend can, as upstream's binding goroutines.
    answered = backend.bind_many([{**request, "deadline": deadline} for _, request in requests])
    for (b, _), (error, seconds) in zip(requests, answered):
        b.seconds = seconds
        if error is None:
            b.outcome = "bound"
        elif isinstance(error, (BoundElsewhere, PodGone)):
            b.outcome, b.error = "dropped", error
        elif isinstance(error, BindOutcomeUnknown):
            b.outcome, b.error = "unknown", error
        else:
            b.outcome, b.error = "refused", error
    for b in binds:
        if b.outcome == "unknown":
            b.message = f"Binding outcome unknown: {b.error}; the reservation is kept until the cluster says"
        elif b.error is not None:
            if isinstance(b.error, BindError):
                b.message = f"Binding rejected: {b.error}"
            else:
                b.message = f"Binding rejected: internal error: {why(b.error)}"


def _record_binds(binds: list[_Bind], backend, now) -> None:
    """Write every outcome in one transaction; if that raises, bind by bind, and a bind whose rows the
    database refuses is failed alone (released and backed off, unless the cluster already bound it)."""
    try:
        with transaction.atomic():
            _write_binds(binds, backend, now)
        return
    except SYSTEMIC_ERRORS:
        raise
    except Exception:  # noqa: BLE001 - find the pod whose rows the database refuses
        log.exception("recording a binding batch of %d pods failed: recording them one by one", len(binds))
    for b in binds:
        try:
            with transaction.atomic():
                _write_binds([b], backend, now)
        except SYSTEMIC_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001
            log.exception("recording the binding of %s failed", b.pod.key if b.pod else b.item.pod)
            _write_bind_failed(b, backend, exc, now)


@dataclass(eq=False)
class _Writes:
    """The rows a batch writes, gathered so that each table takes one statement."""

    bindings: list[Binding] = field(default_factory=list)
    attempts: list[tuple] = field(default_factory=list)  # (id, result, message, binding_ms, e2e_ms)
    failed_conditions: list[tuple] = field(default_factory=list)  # (pod id, status, reason, message, at)
    events: list[EventSpec] = field(default_factory=list)

    def flush(self, now) -> None:
        insert_many(Binding, self.bindings)
        # Never failure fields on a bound pod.
        update_from_values(Pod, ["scheduled_status", "scheduled_reason", "scheduled_message", "scheduled_transition_at"],
                           self.failed_conditions, where="scheduler_pod.node_name = ''")
        update_from_values(Attempt, ["result", "message", "binding_ms", "e2e_ms"], self.attempts)
        events_record(self.events, now=now)


def _write_binds(binds: list[_Bind], backend, now) -> None:
    for b in binds:
        b.final, b.recorded = b.outcome, False
    writes = _Writes()
    _bind_pod_rows([b for b in binds if b.final == "bound" and b.pod.node_name != b.node], backend, now)
    _record_bound([b for b in binds if b.final == "bound"], now, writes)
    handle_binding_cycle_error([b for b in binds if b.final == "refused"], now, writes)
    _release_dropped([b for b in binds if b.final == "dropped"], now, writes)
    _record_not_bound(binds, writes)
    writes.flush(now)


def _bind_pod_rows(accepted: list[_Bind], backend, now) -> None:
    """The binding itself, for every accepted pod at once: only where our reservation still stands (or, with
    a cluster that reports bindings, where its watch already recorded this very binding)."""
    fields = ["node_name", "assumed_node", "assumed_at", "binding_at", "phase", "bound_at", "scheduled_status",
              "scheduled_reason", "scheduled_message", "scheduled_transition_at"]
    where = "scheduler_pod.assumed_node = v.node_name AND scheduler_pod.node_name = ''"
    if backend.mirrors_bindings:
        where = f"(({where}) OR scheduler_pod.node_name = v.node_name)"
    # The mirror locks these rows too when the watch shows them bound (in id order): take them in that order.
    lock_in_order(Pod, "id", [b.pod.pk for b in accepted])
    bound_ids = set(update_from_values(
        Pod, fields, [(b.pod.pk, b.node, "", None, None, Pod.RUNNING, now, "True", "", "", now) for b in accepted],
        where=where, returning=True))
    # What a worker's index holds of a bound pod changed: its start (placed_pods reads bound_at where no kubelet
    # wrote status.startTime), which preemption orders its victims and candidates by. As the kubelet's status
    # update reaches kube-scheduler's cache, every worker reads these nodes' pods again; without it, a worker kept
    # its own reserved pods as never started until something else changed their node.
    bound_nodes = sorted({b.node for b in accepted if b.pod.pk in bound_ids})
    if bound_nodes:
        lock_in_order(Node, "name", bound_nodes)  # workers' reservations take these nodes too (in this order)
        where, params = in_list("name", bound_nodes)
        with connection.cursor() as cursor:  # a fixed statement: the ORM's update() compiled it every cycle
            cursor.execute(f"UPDATE {Node._meta.db_table} SET generation = generation + 1 WHERE {where}", params)
    missed = [b for b in accepted if b.pod.pk not in bound_ids]
    if not missed:
        return
    # The reservation went away between the mark and now (the pod or its node deleted, another
    # replica's binder): read what the rows say now and settle on that.
    rows = _pod_rows([b.pod.pk for b in missed])
    present = []
    for b in missed:
        if b.pod.pk in rows:
            b.pod = rows[b.pod.pk]
            present.append(b)
        else:
            b.final = "gone"  # deleted meanwhile: its reservation went with it
    _settle(present, backend)
    for b in present:
        b.final, b.outcome = b.outcome, "bound"  # the call's outcome stays (a retried write settles again)
        if b.final in ("lost", "elsewhere") and backend.mirrors_bindings:
            # The cluster accepted this binding: the pod is bound there whatever our rows say, and the
            # mirror will record it (and count it on its node). Never a failure on a bound pod.
            log.warning("%s was bound to %s but its reservation was gone: the mirror will record it",
                        b.pod.key, b.node)
            b.final = "unrecorded"


def _record_bound(successes: list[_Bind], now, writes: _Writes) -> None:
    """Binding rows, events and attempts for the bindings that happened.

    Recorded before: by a redelivered job that raced this one (it wrote the attempt's binding time too:
    nothing left to do), or by the mirror, whose watch showed the binding before this binder got here
    (kube/mirror.py: the row only; the event, attempt and metrics are this binder's to write).
    """
    recorded = _recorded_bindings({b.pod.uid for b in successes}, [b.pod.pk for b in successes]) if successes else {}
    for b in successes:
        pod = b.pod
        if pod.pk in recorded and recorded[pod.pk] is not None:
            continue
        b.recorded = True
        if pod.pk not in recorded:
            writes.bindings.append(new_row(Binding, pod_id=pod.pk, namespace=pod.namespace, pod_name=pod.name,
                                           pod_uid=pod.uid, node_name=b.node, attempt_id=b.item.attempt, bound_at=now))
        writes.events.append(EventSpec("Normal", "Scheduled", f"Successfully assigned {pod.namespace}/{pod.name} to {b.node}",
                                       "Pod", pod.namespace, pod.name, pod.uid, action="Binding",
                                       reporting_controller=pod.scheduler_name))
        first = pod.queued_at or pod.created_at
        writes.attempts.append((b.item.attempt, RESULT_SCHEDULED, "", ms(b.seconds),
                                ms(max(0.0, (now - first).total_seconds())) if first else None))


def _recorded_bindings(uids: set[str], pod_ids: list[int]) -> dict[int, float | None]:
    """Per pod id, the binding_ms of the attempt of its Binding row (None: no attempt, or not written yet), for
    the Binding rows of these uids and pods: a fixed statement (the ORM's filter and join compiled every cycle)."""
    uid_in, uid_params = in_list("b.pod_uid", sorted(uids))
    pod_in, pod_params = in_list("b.pod_id", sorted(set(pod_ids)))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT b.pod_id, a.binding_ms FROM {Binding._meta.db_table} b "
                       f"LEFT JOIN {Attempt._meta.db_table} a ON a.id = b.attempt_id "
                       f"WHERE {uid_in} AND {pod_in} ORDER BY b.bound_at DESC, b.id DESC", [*uid_params, *pod_params])
        return dict(cursor.fetchall())


def handle_binding_cycle_error(refused: list[_Bind], now, writes: _Writes) -> None:
    """As handleBindingCycleError: the room goes back (upstream's Unreserve and ForgetPod) and the failure is
    recorded as its FailureHandler does (a FailedScheduling event, PodScheduled False/SchedulerError, the
    attempt bind_failed); requeue_after_binding_error puts the pod back in the queue once this commits."""
    for b in refused:
        release_assumed(pod_id=b.pod.pk, node_name=b.node, usage=row_usage(b.pod))
        writes.events.append(EventSpec("Warning", "FailedScheduling", b.message, "Pod", b.pod.namespace, b.pod.name,
                                       b.pod.uid, action="Scheduling", reporting_controller=b.pod.scheduler_name))
        writes.attempts.append((b.item.attempt, RESULT_BIND_FAILED, b.message, ms(b.seconds), None))
        writes.failed_conditions.append((b.pod.pk, "False", "SchedulerError", b.message, now))


def _release_dropped(dropped: list[_Bind], now, writes: _Writes) -> None:
    """Not ours to place any more: give the room back. A pod the API says is bound elsewhere counts there
    from now on (unless the watch recorded it first), so it is not requeued."""
    for b in dropped:
        release_assumed(pod_id=b.pod.pk, node_name=b.node, usage=row_usage(b.pod))
        if isinstance(b.error, BoundElsewhere):
            moved = Pod.objects.filter(pk=b.pod.pk, node_name="", assumed_node="").update(
                node_name=b.error.node_name, bound_at=now)
            if moved and Node.objects.filter(name=b.error.node_name).exists():
                add_node_usage(node_name=b.error.node_name, usage=row_usage(b.pod))
        writes.attempts.append((b.item.attempt, RESULT_BIND_FAILED, b.message, ms(b.seconds), None))


def _record_not_bound(binds: list[_Bind], writes: _Writes) -> None:
    """The attempts of bindings never sent or never settled: nothing released, nothing requeued here."""
    for b in binds:
        if b.final in ("lost", "elsewhere", "superseded"):
            writes.attempts.append((b.item.attempt, RESULT_BIND_FAILED, b.message, None, None))
        elif b.final == "gone":
            # Its row went with the pod; the attempt stays in the audit, and must not read "scheduled".
            writes.attempts.append((b.item.attempt, RESULT_BIND_FAILED,
                                    "Binding skipped: the pod was deleted before its binding", None, None))
        elif b.final == "unknown":
            # Not released, not requeued, no event: the pod may well be bound. Its mark stays, so the
            # reconciler frees it only after the binding timeout, unless the watch settles it first
            # (and if the watch already did, it recorded the binding with this attempt: that stands).
            log.warning("%s: %s", b.pod.key, b.message)
            Attempt.objects.filter(pk=b.item.attempt, binding__isnull=True).update(
                result=RESULT_BIND_FAILED, message=b.message, binding_ms=ms(b.seconds))


def _write_bind_failed(b: _Bind, backend, exc: Exception, now) -> None:
    """This bind's rows were refused. Bound in a cluster: leave it to the mirror. Otherwise fail it alone."""
    b.recorded = False
    if b.pod is None:
        b.final = "gone"
        return
    if b.outcome == "bound" and backend.mirrors_bindings:
        b.final = "unrecorded"  # the cluster bound it; its reservation (marked binding) stays until the mirror sees it
        return
    b.final = "refused"
    b.message = f"Binding rejected: internal error recording the binding: {why(exc)}"
    try:
        with transaction.atomic():
            writes = _Writes()
            handle_binding_cycle_error([b], now, writes)
            writes.flush(now)
    except SYSTEMIC_ERRORS:
        raise
    except Exception:  # noqa: BLE001 - its reservation is freed by the binding timeout, its room by the recount
        log.exception("could not record the failed binding of %s either", b.pod.key)


def _observe_bind_batch(bound: list, refused: list, now) -> None:
    attempt_seconds: dict[tuple[str, str], list[float]] = {}
    bind_seconds: dict[tuple[str, str], list[float]] = {}
    sli: dict[str, list[float]] = {}
    attempts: list[int] = []
    for item, pod, seconds in bound:
        attempt_seconds.setdefault((RESULT_SCHEDULED, pod.scheduler_name), []).append(item.cycle_seconds + seconds)
        bind_seconds.setdefault((metrics.SUCCESS, pod.scheduler_name), []).append(seconds)
        attempts.append(pod.attempts)
        first = pod.queued_at or pod.created_at
        if first:
            sli.setdefault(metrics.attempts_label(pod.attempts), []).append(max(0.0, (now - first).total_seconds()))
    for item, pod, _error, seconds in refused:
        attempt_seconds.setdefault((RESULT_ERROR, pod.scheduler_name), []).append(item.cycle_seconds + seconds)
        bind_seconds.setdefault((metrics.ERROR_STATUS, pod.scheduler_name), []).append(seconds)
    for (result, profile_name), seconds in attempt_seconds.items():
        metrics.record_attempts(result, profile_name, seconds)
    for (status, profile_name), seconds in bind_seconds.items():
        metrics.observe_many(metrics.framework_extension_point_duration.labels(metrics.BIND, status, profile_name), seconds)
    metrics.observe_many(metrics.pod_scheduling_attempts, attempts)
    for label, seconds in sli.items():
        metrics.observe_many(metrics.pod_scheduling_sli_duration.labels(label), seconds)
