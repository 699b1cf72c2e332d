"""The scheduling loop on the shared state: schedule a batch, bind a batch, reconcile.

A worker process pops a batch from the queue, runs schedule_one for each pod against its
snapshot (reserving each placement in Postgres), writes the attempts, events and conditions
of the whole batch at once, and hands the placements to the bind task. Reconcile repairs
what a crash or a lost Redis left behind. The Celery tasks in tasks.py only call these.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import socket
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from .manifests import stored as pod_terms
from .state import topology_claims
from .backends import get_backend
from .backends.errors import BindError, BindOutcomeUnknown, BoundElsewhere, PodGone
from .engine import schedule_one as cycle
from .engine.config import SchedulerConfig
from .engine.explain import top_candidates, trace
from .engine.framework import Algorithm
from .engine.pods import PodSpec
from .engine.queue import QueuedPodInfo
from .manifests.errors import ManifestError
from .manifests.objects import pod_from_manifest
from .models import (RESULT_BIND_FAILED, RESULT_ERROR, RESULT_SCHEDULED, RESULT_UNSCHEDULABLE, Attempt, Binding,
                     ClusterEvent, Node, Pod)
from .queue.kick import kick, slot_release
from .queue.queues import get_queue, set_queue_backoff
from .state.events import EventSpec, events_record
from .state.reservations import (SYSTEMIC_ERRORS, USAGE_FIELDS, add_node_usage, release_assumed, row_usage,
                                 usage_recount)
from .state.snapshot import Snapshot
from .state.sql import insert_many, update_from_values
from .telemetry import live, metrics
from .versions.profiles import INITIAL_VERSION, active_config, active_version_number, config_for_version, scheduler_names

log = logging.getLogger(__name__)

POD_SPEC_CACHE_SIZE = 50_000
# Errors that say the database (not one pod) is in trouble: a batch fails as a whole on these (a
# deadlock too: the whole batch is tried again).
_SYSTEMIC = SYSTEMIC_ERRORS


def _why(exc: BaseException) -> str:
    """An exception as one line for an event: its type and the first line of its text."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


@dataclass
class BatchStats:
    popped: int = 0
    scheduled: int = 0
    unschedulable: int = 0
    errors: int = 0
    skipped: int = 0
    conflicts: int = 0
    bind_items: list = field(default_factory=list)


@dataclass(eq=False)
class _Scheduled:
    """One popped pod's outcome in a scheduling batch: what to write, report and requeue."""

    pod: Pod
    info: QueuedPodInfo
    attempt: Attempt | None = None
    events: list = field(default_factory=list)
    failed: bool = False  # its PodScheduled condition is written (False)
    placed: bool = False  # reserved: handed to the binder
    node: str = ""
    reported: tuple | None = None  # (pod, condition reason or None, message) for the backend
    requeue: tuple[bool, str] | None = None  # (unschedulable, message)
    again: bool = False  # changed since it was read: back to the active queue at once
    done: bool = False
    skipped: int = 0
    algorithm_seconds: float = 0.0
    cycle_seconds: float = 0.0
    written: bool = False


_CONDITION = ["scheduled_status", "scheduled_reason", "scheduled_message", "scheduled_transition_at", "attempts"]


def _write_scheduled(outcomes: list[_Scheduled]) -> None:
    """Set-based: one insert for the attempts, one for the events, one update per kind of pod change."""
    now = timezone.now()
    attempts = [o.attempt for o in outcomes if o.attempt is not None]
    for a in attempts:
        a.pk = None  # a retried write inserts afresh
    insert_many(Attempt, attempts)
    events_record([e for o in outcomes for e in o.events], now=now)
    # Never failure fields on a bound pod (it may have been bound meanwhile, by the mirror of a cluster).
    update_from_values(Pod, _CONDITION, [(o.pod.pk, *(getattr(o.pod, f) for f in _CONDITION)) for o in outcomes if o.failed],
                       where="scheduler_pod.node_name = ''")
    update_from_values(Pod, ["attempts"], [(o.pod.pk, o.pod.attempts) for o in outcomes if o.placed])


class _DbCluster:
    """schedule_batch's Cluster port over Postgres for one batch of pod rows."""

    def __init__(self, worker: Worker, rows: dict[str, Pod]):
        self.worker = worker
        self.rows = rows
        self.changed: set[str] = set()  # pods that changed since they were read: scheduled again at once

    def reserve_many(self, placements: list[tuple[PodSpec, str]]) -> cycle.ReserveOutcome:
        versions = self.worker.snapshot.spec_versions
        by_id = {self.rows[pod.key].pk: pod.key for pod, _ in placements}
        # The pod row's updated_at as read: the claim takes the pod only in the version that was scheduled.
        result = topology_claims.reserve(
            [((row.pk, row_usage(row), node, versions.get(node), row.updated_at), pod, self.worker.profiles[pod.scheduler_name])
             for pod, node, row in ((pod, node, self.rows[pod.key]) for pod, node in placements)], self.worker.snapshot)
        self.changed |= {by_id[i] for i in result.changed}
        return cycle.ReserveOutcome(conflicts={by_id[i] for i in result.conflicts}, gone={by_id[i] for i in result.gone},
                                    errors={by_id[i]: message for i, message in result.errors.items()})

    def refresh_nodes(self, cache, node_names: set[str]) -> None:
        self.worker.snapshot.refresh_nodes(cache, node_names)


class Worker:
    """What one process keeps between batches: its snapshot, algorithm state and parsed pods."""

    def __init__(self, queue=None, config: SchedulerConfig | None = None, seed: int | None = None):
        self.queue = queue or get_queue()
        # A given config is pinned (version 0, never reloaded); otherwise the active version is followed.
        self.follows_versions = config is None
        self._use_config(*(active_config() if config is None else (INITIAL_VERSION, config)))
        self.algorithm = Algorithm(seed if seed is not None else settings.SCHEDBOARD_SEED)
        self.snapshot = Snapshot()
        self.identity = f"{socket.gethostname()}-{os.getpid()}"
        self._pod_specs: OrderedDict[tuple, PodSpec] = OrderedDict()
        self._templates: OrderedDict[str, PodSpec] = OrderedDict()

    def _use_config(self, version: int, config: SchedulerConfig) -> None:
        self.version, self.config = version, config
        self.profiles = config.build_profiles(version=version)
        if self.follows_versions:
            set_queue_backoff(self.queue, config)

    def refresh_config(self) -> bool:
        """Switch to the active configuration version if it changed since the last batch."""
        if not self.follows_versions:
            return False
        number = active_version_number()
        if number == self.version:
            return False
        self._use_config(number, config_for_version(number))
        log.info("worker %s now runs scheduler configuration version %d", self.identity, number)
        return True

    def pod_spec(self, pod: Pod) -> PodSpec:
        key = (pod.uid, pod.updated_at)
        spec = self._pod_specs.get(key)
        if spec is None:
            # Pods of one workload share a spec: parse (and validate) each distinct spec once.
            shape = json.dumps(pod.manifest.get("spec"), sort_keys=True)
            template = self._templates.get(shape)
            if template is None:
                spec = pod_from_manifest(pod.manifest)
                self._templates[shape] = spec
            else:
                deleting = bool((pod.manifest.get("metadata") or {}).get("deletionTimestamp"))
                spec = dataclasses.replace(template, namespace=pod.namespace, name=pod.name, uid=pod.uid, deleting=deleting,
                                           **pod_terms.metadata_fields(pod.manifest))
            self._pod_specs[key] = spec
            for cache in (self._pod_specs, self._templates):
                if len(cache) > POD_SPEC_CACHE_SIZE:
                    cache.popitem(last=False)
        return spec

    # ---- the scheduling cycle, a batch at a time ---------------------------------------------
    def schedule_batch(self, max_pods: int | None = None) -> BatchStats:
        stats = BatchStats()
        infos = self.queue.pop(max_pods or settings.SCHEDBOARD_BATCH_SIZE)
        if not infos:
            return stats
        self.refresh_config()  # once per batch, so a batch never mixes configuration versions
        stats.popped = len(infos)
        popped_at = self.queue.clock()
        now = timezone.now()
        rows = _pods_by_key([i.key for i in infos])
        cache = self.snapshot.refresh()
        outcomes: list[_Scheduled] = []

        batch: list[tuple[PodSpec, object]] = []
        batch_rows: dict[str, Pod] = {}
        batch_infos: dict[str, QueuedPodInfo] = {}
        timings = metrics.BatchTimings()  # metrics: plugin calls timed, observed once per batch below
        for info in infos:
            pod = rows.get(info.key)
            if pod is None or pod.node_name or pod.assumed_node or pod.scheduler_name not in self.profiles:
                self.queue.done(info.key)  # deleted, already placed, or not ours any more
                continue
            try:
                spec = self.pod_spec(pod)
            except Exception as exc:  # noqa: BLE001 - this pod fails, the batch goes on
                outcomes.append(self._unreadable(pod, info, exc, now, popped_at))
                continue
            batch.append((spec, timings.profile(self.profiles[pod.scheduler_name], info.key)))
            batch_rows[info.key] = pod
            batch_infos[info.key] = info
        db_cluster = _DbCluster(self, batch_rows)
        results = cycle.schedule_batch(batch, algorithm=self.algorithm, cache=cache, cluster=db_cluster)

        for (spec, profile), result in zip(batch, results):
            pod, info = batch_rows[spec.key], batch_infos[spec.key]
            stats.conflicts += result.conflicts
            if result.status == cycle.GONE:
                if spec.key in db_cluster.changed:
                    outcomes.append(_Scheduled(pod, info, again=True))  # changed meanwhile: its new version, at once
                else:
                    self.queue.done(info.key)
                continue
            try:
                outcomes.append(self._outcome(pod, info, result, profile, now, popped_at))
            except Exception as exc:  # noqa: BLE001 - recording this pod's decision failed: it fails alone
                log.exception("recording the scheduling result of %s failed", pod.key)
                outcomes.append(self._failed_internally(pod, info, result, exc, now, popped_at))

        self._write(outcomes)
        reported = [o.reported for o in outcomes if o.reported]
        if reported:  # committed: the backend may tell the cluster (the kubernetes backend's leader does)
            get_backend().report(failed=reported, scheduled=[])
        for o in outcomes:
            if o.done:
                self.queue.done(o.info.key)
            elif o.again:
                self.queue.done(o.info.key)
                self.queue.add(o.info.key, o.pod.priority)
            elif o.requeue is not None:
                self.queue.add_unschedulable_if_not_present(o.info, unschedulable=o.requeue[0], message=o.requeue[1])
        placed = [o for o in outcomes if o.placed and o.written]
        attempts = [o.attempt for o in outcomes if o.attempt is not None and o.written]
        stats.skipped = sum(o.skipped for o in outcomes)
        stats.scheduled = len(placed)
        stats.unschedulable = sum(a.result == RESULT_UNSCHEDULABLE for a in attempts)
        stats.errors = sum(a.result == RESULT_ERROR for a in attempts) + sum(not o.written for o in outcomes)
        stats.bind_items = [
            # "cycle_s" carries the scheduling cycle's time to the binder for scheduling_attempt_duration_seconds.
            {"attempt": o.attempt.pk, "pod": o.pod.pk, "node": o.attempt.node_name, "info": asdict(o.info),
             "cycle_s": (o.attempt.attempt_ms or 0.0) / 1000.0}
            for o in placed
        ]
        # Metrics, once per batch: failed attempts (scheduled ones count when bound), algorithm and
        # extension point latencies (the queue counts the pods it takes back itself).
        failed_seconds: dict[tuple[str, str], list[float]] = {}  # (result, profile) -> attempt seconds
        for o in outcomes:
            if o.attempt is not None and o.written and not o.placed:
                failed_seconds.setdefault((o.attempt.result, o.attempt.profile_name), []).append(o.cycle_seconds)
        for (result, profile_name), seconds in failed_seconds.items():
            metrics.record_attempts(result, profile_name, seconds)
        # As schedulingCycle: the algorithm latency is observed when schedulePod succeeded.
        metrics.observe_many(metrics.scheduling_algorithm_duration, [o.algorithm_seconds for o in placed])
        timings.record({key: pod.scheduler_name for key, pod in batch_rows.items()}, [r.decision for r in results])
        # The live dashboard: one message per batch, buffered and sent by another thread (never waits).
        transaction.on_commit(lambda: live.schedule_batch_done(attempts, stats.popped))
        return stats

    def _outcome(self, pod: Pod, info: QueuedPodInfo, result, profile, now, popped_at: float) -> _Scheduled:
        """What one pod's cycle result writes: attempt, event, condition, requeue."""
        if result.status == cycle.SKIPPED:
            event = EventSpec("Warning", "FailedScheduling", result.message, "Pod", pod.namespace, pod.name,
                              pod.uid, action="Scheduling", reporting_controller=pod.scheduler_name)
            return _Scheduled(pod, info, events=[event], reported=(pod, None, result.message), done=True, skipped=1)
        pod.attempts += 1
        attempt = self._attempt(pod, info, result, profile, now, popped_at)
        if result.status == cycle.SCHEDULED:
            return _Scheduled(pod, info, attempt=attempt, placed=True, node=result.node_name,
                              algorithm_seconds=result.algorithm_seconds, cycle_seconds=result.cycle_seconds)
        unschedulable = result.status == cycle.UNSCHEDULABLE
        return self._failure(pod, info, attempt, unschedulable, result.message, now, result.cycle_seconds)

    def _failure(self, pod: Pod, info: QueuedPodInfo, attempt: Attempt, unschedulable: bool, message: str, now,
                 cycle_seconds: float = 0.0) -> _Scheduled:
        """As handleSchedulingFailure: the event, PodScheduled=False, back to the queue (unschedulable or backoff)."""
        event = EventSpec("Warning", "FailedScheduling", message, "Pod", pod.namespace, pod.name,
                          pod.uid, action="Scheduling", reporting_controller=pod.scheduler_name)
        _set_condition(pod, False, "Unschedulable" if unschedulable else "SchedulerError", message, now)
        return _Scheduled(pod, info, attempt=attempt, events=[event], failed=True, requeue=(unschedulable, message),
                          reported=(pod, pod.scheduled_reason, message), cycle_seconds=cycle_seconds)

    def _error_attempt(self, pod: Pod, info: QueuedPodInfo, message: str, now, popped_at: float) -> Attempt:
        profile = self.profiles.get(pod.scheduler_name)
        return Attempt(
            pod=pod, namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid, number=pod.attempts,
            started_at=now, finished_at=timezone.now(), result=RESULT_ERROR, message=message,
            profile_name=pod.scheduler_name, profile_version=profile.version if profile else self.version,
            worker=self.identity, queue_wait_ms=_ms(max(0.0, popped_at - info.timestamp)))

    def _unreadable(self, pod: Pod, info: QueuedPodInfo, exc: Exception, now, popped_at: float) -> _Scheduled:
        """A pod whose stored spec cannot be read: it fails (SchedulerError, backoff), the rest of the batch goes on."""
        if isinstance(exc, ManifestError):
            what = "; ".join(f"{p.path}: {p.message}" if p.path else p.message for p in exc.problems)
            message = f"the pod's spec cannot be read: {what}"
        else:
            log.exception("reading the spec of %s failed", pod.key)
            message = f"internal error reading the pod's spec: {_why(exc)}"
        pod.attempts += 1
        return self._failure(pod, info, self._error_attempt(pod, info, message, now, popped_at), False, message, now)

    def _failed_internally(self, pod: Pod, info: QueuedPodInfo, result, exc: Exception, now,
                           popped_at: float) -> _Scheduled:
        if result.status == cycle.SCHEDULED:  # its reservation stands: give it back before failing the pod
            release_assumed(pod_id=pod.pk, node_name=result.node_name, usage=row_usage(pod))
        message = f"internal error recording the scheduling result: {_why(exc)}"
        pod.attempts = max(pod.attempts, 1)
        return self._failure(pod, info, self._error_attempt(pod, info, message, now, popped_at), False, message, now)

    def _write(self, outcomes: list[_Scheduled]) -> None:
        """The batch's attempts, events and conditions in one transaction; pod by pod only if that raises."""
        try:
            with transaction.atomic():
                _write_scheduled(outcomes)
            for o in outcomes:
                o.written = True
            return
        except _SYSTEMIC:
            raise
        except Exception:  # noqa: BLE001 - find the pod whose rows the database refuses
            log.exception("writing a scheduling batch of %d pods failed: writing them one by one", len(outcomes))
        for o in outcomes:
            try:
                with transaction.atomic():
                    _write_scheduled([o])
                o.written = True
            except _SYSTEMIC:
                raise
            except Exception as exc:  # noqa: BLE001
                log.exception("writing the scheduling result of %s failed", o.pod.key)
                self._write_failed(o, exc)

    def _write_failed(self, o: _Scheduled, exc: Exception) -> None:
        """The pod's own rows were refused: give back its reservation, back it off; record what can be recorded."""
        message = f"internal error recording the scheduling result: {_why(exc)}"
        if o.placed:
            release_assumed(pod_id=o.pod.pk, node_name=o.node, usage=row_usage(o.pod))
        o.placed, o.attempt, o.reported, o.again = False, None, (o.pod, "SchedulerError", message), False
        o.requeue = (False, message)
        try:
            with transaction.atomic():
                events_record([EventSpec("Warning", "FailedScheduling", message, "Pod", o.pod.namespace, o.pod.name,
                                         o.pod.uid, action="Scheduling", reporting_controller=o.pod.scheduler_name)])
                Pod.objects.filter(pk=o.pod.pk, node_name="").update(
                    scheduled_status="False", scheduled_reason="SchedulerError", scheduled_message=message,
                    scheduled_transition_at=timezone.now())
        except _SYSTEMIC:
            raise
        except Exception:  # noqa: BLE001 - the log line above is all that is left to say
            log.exception("could not record the failure of %s either", o.pod.key)

    def _attempt(self, pod: Pod, info: QueuedPodInfo, result, profile, now, popped_at: float) -> Attempt:
        decision = result.decision
        table = self.snapshot.cache.table
        attempt = Attempt(
            pod=pod, namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid, number=pod.attempts,
            started_at=now, finished_at=timezone.now(), node_name=result.node_name or "", message=result.message,
            profile_name=profile.scheduler_name, profile_version=profile.version, worker=self.identity,
            queue_wait_ms=_ms(max(0.0, popped_at - info.timestamp)), algorithm_ms=_ms(result.algorithm_seconds),
            attempt_ms=_ms(result.cycle_seconds),
            result={cycle.SCHEDULED: RESULT_SCHEDULED, cycle.UNSCHEDULABLE: RESULT_UNSCHEDULABLE}.get(result.status, RESULT_ERROR),
        )
        if decision is not None:
            attempt.num_nodes = decision.num_all_nodes
            attempt.feasible_nodes = len(decision.candidates)
            attempt.evaluated_nodes = decision.evaluated_nodes
            if result.status == cycle.SCHEDULED:
                attempt.candidates = top_candidates(decision, table)
            else:
                attempt.reasons = decision.reason_histogram()
            # The attempt page's per-node verdicts (and, traced "all", every candidate's scores).
            mode = settings.SCHEDBOARD_TRACE
            if mode == "all" or (mode == "failures" and result.status != cycle.SCHEDULED):
                attempt.trace = trace(decision, table, scores=mode == "all")
        return attempt


def _pods_by_key(keys: list[str]) -> dict[str, Pod]:
    pairs = [k.split("/", 1) for k in keys]
    names = {n for _, n in pairs}
    namespaces = {ns for ns, _ in pairs}
    wanted = set(keys)
    return {p.key: p for p in Pod.objects.filter(name__in=names, namespace__in=namespaces) if p.key in wanted}


def _set_condition(pod: Pod, ok: bool, reason: str, message: str, now) -> None:
    status = "True" if ok else "False"
    if pod.scheduled_status != status:
        pod.scheduled_transition_at = now
    pod.scheduled_status = status
    pod.scheduled_reason = reason
    pod.scheduled_message = message


# ---- the binding cycle ------------------------------------------------------------------

def bind_batch(items: list[dict], *, queue=None) -> dict:
    """Bind placed pods (the seed's binding goroutine, a batch at a time)."""
    queue = queue or get_queue()
    backend = get_backend()
    binding = metrics.goroutines.labels(metrics.BINDING)  # metrics: bindings in flight in this process
    binding.inc(len(items))
    try:
        return _bind_batch(items, queue, backend)
    finally:
        binding.dec(len(items))


@dataclass(eq=False)
class _Bind:
    """One bind item and what became of it."""

    item: dict
    pod: Pod | None
    outcome: str = ""  # see _bind_batch
    error: BaseException | None = None
    message: str = ""
    seconds: float = 0.0
    final: str = ""  # the outcome as written (a binding whose reservation vanished meanwhile is "lost")
    recorded: bool = False  # a Binding row, an event and the attempt's success were written for it

    @property
    def node(self) -> str:
        return self.item["node"]

    @property
    def key(self) -> str:
        return self.item["info"]["key"]


_BIND_ROW_FIELDS = ("id", "namespace", "name", "uid", "scheduler_name", "manifest", "attempts", "queued_at", "created_at",
                    "node_name", "assumed_node", *USAGE_FIELDS)


def _bind_batch(items: list[dict], queue, backend) -> dict:
    """Bind a batch: mark, call the backend for what is still ours, record; one pod's failure is its own.

    Outcomes: "bound" (the backend accepted), "refused" (it said no, or raised: release, back off),
    "dropped" (bound elsewhere or deleted in the cluster: release, no retry), "lost" (the reservation
    was gone before the call: nothing sent, nothing released, the pod is already someone else's
    business), "already" (bound to this node before: a redelivered job is a success, never a failure),
    "elsewhere" (bound to another node meanwhile), "gone" (deleted), "unknown" (the cluster may have
    bound it, nothing settled whether: the reservation stays, marked, for the watch or the timeout).
    """
    now = timezone.now()
    items = list({(i["pod"], i["node"], i["attempt"]): i for i in items}.values())  # one job twice in a batch
    marked = _mark_binding(items, now)
    deadline = time.monotonic() + settings.SCHEDBOARD_BINDING_TIMEOUT_SECONDS / 2.0
    pods = Pod.objects.only(*_BIND_ROW_FIELDS).in_bulk([i["pod"] for i in items])
    binds = [_Bind(item, pods.get(item["pod"])) for item in items]
    _settle(binds, backend, marked=marked)
    _call_backend(backend, [b for b in binds if b.outcome == "call"], deadline)
    _record_binds(binds, backend, now)

    def publish():
        queue.done_many([b.key for b in binds if b.final in ("bound", "unrecorded", "already", "elsewhere", "dropped",
                                                                "gone", "unknown")])
        for b in binds:
            if b.final == "refused":
                queue.add_unschedulable_if_not_present(QueuedPodInfo(**b.item["info"]), unschedulable=False,
                                                       message=b.message)
            elif b.final == "lost":  # if its cycle still holds it in flight, back off and try again
                queue.add_unschedulable_if_not_present(QueuedPodInfo(**b.item["info"]), unschedulable=False,
                                                       message=b.message)
        backend.report(failed=[(b.pod, "SchedulerError", b.message) for b in binds if b.final == "refused"],
                       scheduled=[(b.pod, b.node) for b in binds if b.recorded])
        if any(b.final in ("refused", "lost") for b in binds):
            kick()

    # Metrics, after commit and once per batch: as the binding cycle, a bound pod counts as "scheduled"
    # (attempt = scheduling cycle + binding), with its attempts and its SLI; a refused binding is an "error".
    bound_pods = [(b.item, b.pod, b.seconds) for b in binds if b.recorded]
    refused = [(b.item, b.pod, b.message, b.seconds) for b in binds if b.final == "refused"]
    lost = sum(b.final == "lost" for b in binds)
    transaction.on_commit(lambda: _observe_bind_batch(bound_pods, refused, now))
    transaction.on_commit(lambda: live.bind_batch_done(bound_pods, refused, now))  # live dashboard, never waits
    if lost:
        transaction.on_commit(lambda: metrics.bind_reservations_lost.inc(lost))
    transaction.on_commit(publish)
    return {"bound": len(bound_pods), "failed": len(refused), "lost": lost,
            "dropped": sum(b.final in ("dropped", "elsewhere") for b in binds)}


def _mark_binding(items: list[dict], now) -> set[int]:
    """Mark every reservation that still stands as binding, in one statement: the reconciler leaves those alone.

    Conditional on the reservation (assumed on this node, not bound), so a reservation the reconciler
    freed first is not marked, and the binding is not sent. A mark already there (a previous binder
    died mid-call, the job is retried) is renewed.
    """
    return set(update_from_values(Pod, ["binding_at", "assumed_node"], [(i["pod"], now, i["node"]) for i in items],
                                  where="scheduler_pod.assumed_node = v.assumed_node AND scheduler_pod.node_name = ''",
                                  returning=True))


def _settle(binds: list[_Bind], backend, *, marked: set[int] | None = None) -> None:
    """Classify binds whose reservation is not (or no longer) theirs, from their pod rows as read."""
    bound_here = [b for b in binds if b.pod is not None and (marked is None or b.pod.pk not in marked)
                  and b.pod.node_name == b.node]
    recorded = {}
    if bound_here:
        recorded = {(uid, pod_id): attempt_id for uid, pod_id, attempt_id in Binding.objects.filter(
            pod_uid__in={b.pod.uid for b in bound_here}).values_list("pod_uid", "pod_id", "attempt_id")}
    for b in binds:
        if b.pod is None:
            b.outcome = "gone"
        elif marked is not None and b.pod.pk in marked:
            b.outcome = "call"
        elif b.pod.node_name == b.node:
            attempt = recorded.get((b.pod.uid, b.pod.pk), 0)
            if attempt == b.item["attempt"]:
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
                b.message = f"Binding rejected: internal error: {_why(b.error)}"


def _record_binds(binds: list[_Bind], backend, now) -> None:
    """Write every outcome in one transaction; if that raises, bind by bind, and a bind whose rows the
    database refuses is failed alone (released and backed off, unless the cluster already bound it)."""
    try:
        with transaction.atomic():
            _write_binds(binds, backend, now)
        return
    except _SYSTEMIC:
        raise
    except Exception:  # noqa: BLE001 - find the pod whose rows the database refuses
        log.exception("recording a binding batch of %d pods failed: recording them one by one", len(binds))
    for b in binds:
        try:
            with transaction.atomic():
                _write_binds([b], backend, now)
        except _SYSTEMIC:
            raise
        except Exception as exc:  # noqa: BLE001
            log.exception("recording the binding of %s failed", b.pod.key if b.pod else b.item["pod"])
            _write_bind_failed(b, backend, exc, now)


def _write_binds(binds: list[_Bind], backend, now) -> None:
    for b in binds:
        b.final, b.recorded = b.outcome, False
    events: list[EventSpec] = []
    attempt_rows: list[tuple] = []
    # The binding itself, for every accepted pod at once: only where our reservation still stands
    # (or, with a cluster that reports bindings, where its watch already recorded this very binding).
    accepted = [b for b in binds if b.final == "bound" and b.pod.node_name != b.node]
    fields = ["node_name", "assumed_node", "assumed_at", "binding_at", "phase", "bound_at", "scheduled_status",
              "scheduled_reason", "scheduled_message", "scheduled_transition_at"]
    where = "scheduler_pod.assumed_node = v.node_name AND scheduler_pod.node_name = ''"
    if backend.mirrors_bindings:
        where = f"(({where}) OR scheduler_pod.node_name = v.node_name)"
    phase = Pod.RUNNING
    bound_ids = set(update_from_values(
        Pod, fields, [(b.pod.pk, b.node, "", None, None, phase, now, "True", "", "", now) for b in accepted],
        where=where, returning=True))
    missed = [b for b in accepted if b.pod.pk not in bound_ids]
    if missed:
        # The reservation went away between the mark and now (the pod or its node deleted, another
        # replica's binder): read what the rows say now and settle on that.
        rows = Pod.objects.only(*_BIND_ROW_FIELDS).in_bulk([b.pod.pk for b in missed])
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
    # Binding rows, events and attempts for the bindings that happened.
    successes = [b for b in binds if b.final == "bound"]
    # Recorded before: by a redelivered job that raced this one (it wrote the attempt's binding time too:
    # nothing left to do), or by the mirror, whose watch showed the binding before this binder got here
    # (kube/mirror.py: the row only; the event, attempt and metrics are this binder's to write).
    recorded = dict(Binding.objects.filter(pod_uid__in={b.pod.uid for b in successes},
                                           pod_id__in=[b.pod.pk for b in successes])
                    .values_list("pod_id", "attempt__binding_ms")) if successes else {}
    bindings = []
    for b in successes:
        pod = b.pod
        if pod.pk in recorded and recorded[pod.pk] is not None:
            continue
        b.recorded = True
        if pod.pk not in recorded:
            bindings.append(Binding(pod_id=pod.pk, namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid,
                                    node_name=b.node, attempt_id=b.item["attempt"], bound_at=now))
        events.append(EventSpec("Normal", "Scheduled", f"Successfully assigned {pod.namespace}/{pod.name} to {b.node}",
                                "Pod", pod.namespace, pod.name, pod.uid, action="Binding",
                                reporting_controller=pod.scheduler_name))
        first = pod.queued_at or pod.created_at
        attempt_rows.append((b.item["attempt"], RESULT_SCHEDULED, "", _ms(b.seconds),
                             _ms(max(0.0, (now - first).total_seconds())) if first else None))
    refused = [b for b in binds if b.final == "refused"]
    for b in refused:
        release_assumed(pod_id=b.pod.pk, node_name=b.node, usage=row_usage(b.pod))
        events.append(EventSpec("Warning", "FailedScheduling", b.message, "Pod", b.pod.namespace, b.pod.name, b.pod.uid,
                                action="Scheduling", reporting_controller=b.pod.scheduler_name))
        attempt_rows.append((b.item["attempt"], RESULT_BIND_FAILED, b.message, _ms(b.seconds), None))
    # Never failure fields on a bound pod.
    update_from_values(Pod, ["scheduled_status", "scheduled_reason", "scheduled_message", "scheduled_transition_at"],
                       [(b.pod.pk, "False", "SchedulerError", b.message, now) for b in refused],
                       where="scheduler_pod.node_name = ''")
    for b in binds:
        if b.final != "dropped":
            continue
        # Not ours to place any more: give the room back. A pod the API says is bound elsewhere
        # counts there from now on (unless the watch recorded it first), so it is not requeued.
        release_assumed(pod_id=b.pod.pk, node_name=b.node, usage=row_usage(b.pod))
        if isinstance(b.error, BoundElsewhere):
            moved = Pod.objects.filter(pk=b.pod.pk, node_name="", assumed_node="").update(
                node_name=b.error.node_name, bound_at=now)
            if moved and Node.objects.filter(name=b.error.node_name).exists():
                add_node_usage(node_name=b.error.node_name, usage=row_usage(b.pod))
        attempt_rows.append((b.item["attempt"], RESULT_BIND_FAILED, b.message, _ms(b.seconds), None))
    for b in binds:
        if b.final in ("lost", "elsewhere"):
            attempt_rows.append((b.item["attempt"], RESULT_BIND_FAILED, b.message, None, None))
        elif b.final == "gone":
            # Its row went with the pod; the attempt stays in the audit, and must not read "scheduled".
            attempt_rows.append((b.item["attempt"], RESULT_BIND_FAILED,
                                 "Binding skipped: the pod was deleted before its binding", None, None))
        elif b.final == "unknown":
            # Not released, not requeued, no event: the pod may well be bound. Its mark stays, so the
            # reconciler frees it only after the binding timeout, unless the watch settles it first
            # (and if the watch already did, it recorded the binding with this attempt: that stands).
            log.warning("%s: %s", b.pod.key, b.message)
            Attempt.objects.filter(pk=b.item["attempt"], binding__isnull=True).update(
                result=RESULT_BIND_FAILED, message=b.message, binding_ms=_ms(b.seconds))
    insert_many(Binding, bindings)
    update_from_values(Attempt, ["result", "message", "binding_ms", "e2e_ms"], attempt_rows)
    events_record(events, now=now)


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
    b.message = f"Binding rejected: internal error recording the binding: {_why(exc)}"
    try:
        with transaction.atomic():
            release_assumed(pod_id=b.pod.pk, node_name=b.node, usage=row_usage(b.pod))
            events_record([EventSpec("Warning", "FailedScheduling", b.message, "Pod", b.pod.namespace, b.pod.name,
                                     b.pod.uid, action="Scheduling", reporting_controller=b.pod.scheduler_name)], now=now)
            Pod.objects.filter(pk=b.pod.pk, node_name="").update(
                scheduled_status="False", scheduled_reason="SchedulerError", scheduled_message=b.message,
                scheduled_transition_at=now)
            Attempt.objects.filter(pk=b.item["attempt"]).update(result=RESULT_BIND_FAILED, message=b.message)
    except _SYSTEMIC:
        raise
    except Exception:  # noqa: BLE001 - its reservation is freed by the binding timeout, its room by the recount
        log.exception("could not record the failed binding of %s either", b.pod.key)


def _observe_bind_batch(bound: list, refused: list, now) -> None:
    attempt_seconds: dict[tuple[str, str], list[float]] = {}
    bind_seconds: dict[tuple[str, str], list[float]] = {}
    sli: dict[str, list[float]] = {}
    attempts: list[int] = []
    for item, pod, seconds in bound:
        attempt_seconds.setdefault((RESULT_SCHEDULED, pod.scheduler_name), []).append(item.get("cycle_s", 0.0) + seconds)
        bind_seconds.setdefault((metrics.SUCCESS, pod.scheduler_name), []).append(seconds)
        attempts.append(pod.attempts)
        first = pod.queued_at or pod.created_at
        if first:
            sli.setdefault(metrics.attempts_label(pod.attempts), []).append(max(0.0, (now - first).total_seconds()))
    for item, pod, _error, seconds in refused:
        attempt_seconds.setdefault((RESULT_ERROR, pod.scheduler_name), []).append(item.get("cycle_s", 0.0) + seconds)
        bind_seconds.setdefault((metrics.ERROR_STATUS, pod.scheduler_name), []).append(seconds)
    for (result, profile_name), seconds in attempt_seconds.items():
        metrics.record_attempts(result, profile_name, seconds)
    for (status, profile_name), seconds in bind_seconds.items():
        metrics.observe_many(metrics.framework_extension_point_duration.labels(metrics.BIND, status, profile_name), seconds)
    metrics.observe_many(metrics.pod_scheduling_attempts, attempts)
    for label, seconds in sli.items():
        metrics.observe_many(metrics.pod_scheduling_sli_duration.labels(label), seconds)


# ---- reconciliation ---------------------------------------------------------------------

_last_cluster_event_id: int | None = None


def reconcile(*, queue=None) -> dict:
    """Repair the queue from the truth in Postgres; safe to run anywhere, any number of times."""
    global _last_cluster_event_id
    queue = queue or get_queue()
    now = timezone.now()
    report = {"expired": 0, "requeued": 0, "moved": 0, "reclaimed": 0}

    # Cluster events (from any process) move unschedulable pods, as the informers would.
    if _last_cluster_event_id is None:
        _last_cluster_event_id = ClusterEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    kinds = list(ClusterEvent.objects.filter(id__gt=_last_cluster_event_id).values_list("id", "kind"))
    if kinds:
        _last_cluster_event_id = kinds[-1][0]
        for kind in sorted({k for _, k in kinds}):
            queue.move_all_to_active_or_backoff(kind)
            report["moved"] += 1

    # Reservations whose binding never came (a worker died between reserve and bind). One whose
    # binding is in flight (marked by its binder) is left alone: the binder's outcome settles it, or
    # the mirror seeing the pod bound. Only a mark older than the binding timeout (its binder died and
    # its job was lost with Redis) is freed; no binder sends a binding that late (see _bind_batch).
    # Only a binding that goes out of this database needs that (a call to an API server cannot be taken
    # back): on the simulated cluster the binding is this database's own conditional write, which simply
    # finds the reservation gone, so a dead worker's pod is freed after the assume TTL as any other.
    stale = now - timedelta(seconds=settings.SCHEDBOARD_ASSUME_TTL_SECONDS)
    expirable = Q(binding_at__isnull=True) | Q(binding_at__lt=now - timedelta(seconds=settings.SCHEDBOARD_BINDING_TIMEOUT_SECONDS))
    if not get_backend().mirrors_bindings:
        expirable = Q()
    for pod in Pod.objects.filter(expirable, node_name="", assumed_at__lt=stale).exclude(assumed_node=""):
        if release_assumed(pod_id=pod.pk, node_name=pod.assumed_node, usage=row_usage(pod),
                           condition=expirable & Q(assumed_at__lt=stale)):
            if pod.binding_at is not None:
                log.warning("freed the reservation of %s on %s: its binding was marked in flight at %s and never "
                            "settled", pod.key, pod.assumed_node, pod.binding_at.isoformat())
            report["expired"] += 1
            queue.add(pod.key, pod.priority)

    # In-flight pods whose worker died, then pending pods the queue does not know (Redis lost).
    report["reclaimed"] = len(queue.reclaim_expired(None, settings.SCHEDBOARD_INFLIGHT_LEASE_SECONDS))
    known = queue.keys()
    pending = Pod.objects.filter(node_name="", assumed_node="", deleting=False,
                                 scheduler_name__in=scheduler_names())
    for ns, name, priority in pending.values_list("namespace", "name", "priority").iterator():
        key = f"{ns}/{name}"
        if key not in known:
            queue.add(key, priority)
            report["requeued"] += 1
    pending.filter(queued_at__isnull=True).update(queued_at=now)
    queue.flush()
    if queue.lengths().get("active", 0):
        kick()
    return report


def recount() -> dict:
    """The periodic recount of every node's usage (beat, SCHEDBOARD_RECOUNT_SECONDS): repairs drift, counts it."""
    report = usage_recount(on_repair=lambda resource: metrics.usage_drift_repaired.labels(resource).inc())
    metrics.usage_recounts.inc()
    if report["repaired"]:
        # Nodes that got room back may fit pods waiting as unschedulable.
        get_queue().move_all_to_active_or_backoff(ClusterEvent.NODE_UPDATE)
    return report


_worker: Worker | None = None


def get_worker() -> Worker:
    global _worker
    if _worker is None:
        _worker = Worker()
    return _worker


def run_schedule_task(token: str | None = None) -> BatchStats:
    """One batch, then hand on: binding runs as its own task, and the next batch is another kick."""
    try:
        worker = get_worker()
        worker.queue.flush()
        stats = worker.schedule_batch()
        if stats.bind_items:
            items = stats.bind_items
            backend = get_backend()
            transaction.on_commit(lambda: backend.hand_off(items))
    finally:
        if token:
            slot_release(token)
    if stats.popped:
        kick()
    return stats
