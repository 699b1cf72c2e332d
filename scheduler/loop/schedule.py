"""Scheduling: a worker pops a batch from the queue, runs schedule_one for each pod against its snapshot
(reserving each placement in Postgres), writes the attempts, events and conditions of the whole batch at
once, and hands the placements to the bind task (bind.py)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import socket
import time
from collections import OrderedDict
from contextlib import nullcontext
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from ..backends import get_backend
from ..backends.bind_item import BindItem
from ..engine import schedule_one as cycle
from ..engine import scheduling_gates
from ..engine.config import SchedulerConfig
from ..engine.explain import preemption, top_candidates_json, trace
from ..engine.framework import Algorithm
from ..engine.nominator import Nominator
from ..engine.pods import PodSpec
from ..engine.queue import UNSCHEDULABLE_Q, QueuedPodInfo
from ..manifests import stored as pod_terms
from ..manifests.errors import ManifestError
from ..manifests.objects import pod_from_manifest
from ..models import RESULT_ERROR, RESULT_SCHEDULED, RESULT_UNSCHEDULABLE, Attempt, Pod
from ..queue import hints
from ..queue.kick import kick, kick_if_waiting, slot_release
from ..queue.queues import get_queue, set_queue_backoff
from .. import dispatch
from ..state.events import EventSpec, events_record
from ..state.nominations import nominations_write, preemption_job
from ..state.preemptions import preemptions_record, preemptions_under_way
from ..state import topology_claims
from ..state.reservations import SYSTEMIC_ERRORS, release_assumed, row_usage
from ..state.snapshot import Snapshot
from ..state.sql import JSONText, in_list, insert_many, new_row, select_models, update_from_values
from ..telemetry import live, metrics
from ..versions.profiles import INITIAL_VERSION, active_config, active_version_number, config_for_version
from . import collector
from .common import ms, why

log = logging.getLogger(__name__)


POD_SPEC_CACHE_SIZE = 50_000
PREEMPTION_TRACE_NODES = 100


@dataclass
class BatchStats:
    popped: int = 0
    scheduled: int = 0
    unschedulable: int = 0
    errors: int = 0
    skipped: int = 0
    conflicts: int = 0
    bind_items: list[BindItem] = field(default_factory=list)


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
    # (pod, condition reason or None, message[, nomination]) for the backend; the nomination (None: as it is,
    # "": cleared, a node: set) goes out with the condition, as upstream's updatePod patches both at once.
    reported: tuple | None = None
    requeue: tuple[bool, str] | None = None  # (unschedulable, message)
    again: bool = False  # changed since it was read: back to the active queue at once
    done: bool = False
    skipped: int = 0
    algorithm_seconds: float = 0.0
    cycle_seconds: float = 0.0
    written: bool = False
    # Preemption (the PostFilter's NominatingInfo): None leaves the pod's nomination as it is, "" clears
    # it, a node sets it; the victims are evicted by the preempt task once this batch is written.
    nominate: str | None = None
    victims: tuple = ()
    cleared: tuple = ()
    job: dict | None = None  # the preempt task's job (state/nominations.preemption_job), recorded with the nomination
    preemption_attempt: bool = False  # DefaultPreemption's PostFilter ran (scheduler_preemption_attempts_total)


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
    # (A placed pod's attempt count was written by its claim: _DbCluster.reserve_many.)
    nominations = [(o.pod.pk, o.nominate) for o in outcomes if o.failed and o.nominate is not None]
    nominations += [(p, "") for o in outcomes if o.failed for p in o.cleared]
    if nominations:
        # A mirrored cluster's manifest is the API server's copy: the nomination reaches it with the leader's patch.
        nominations_write(nominations, in_manifest=not get_backend().mirrors_bindings)
    # The preemptions this batch starts, with their nominations: the preemptor is held from here (until the task
    # has evicted its victims), whatever becomes of the task.
    for o in outcomes:
        o.job = (preemption_job(o.pod, o.nominate, o.victims, o.attempt.pk if o.attempt else None, o.cleared)
                 if o.failed and o.victims and o.nominate else None)
    preemptions_record([o.job for o in outcomes if o.job], now=now)


class _DbCluster:
    """schedule_batch's Cluster port over Postgres for one batch of pod rows."""

    def __init__(self, worker: Worker, rows: dict[str, Pod]):
        self.worker = worker
        self.rows = rows
        self.changed: set[str] = set()  # pods that changed since they were read: scheduled again at once

    def reserve_many(self, placements: list[tuple[PodSpec, str]]) -> cycle.ReserveOutcome:
        versions = self.worker.snapshot.spec_versions
        by_id = {self.rows[pod.key].pk: pod.key for pod, _ in placements}
        # The pod row's updated_at as read: the claim takes the pod only in the version that was scheduled. The claim
        # also writes the pod's attempt count with this attempt (what _outcome then counts: the row's, plus one).
        result = topology_claims.reserve(
            [((row.pk, row_usage(row), node, versions.get(node), row.updated_at, row.attempts + 1), pod,
              self.worker.profiles[pod.scheduler_name])
             for pod, node, row in ((pod, node, self.rows[pod.key]) for pod, node in placements)], self.worker.snapshot)
        self.changed |= {by_id[i] for i in result.changed}
        return cycle.ReserveOutcome(conflicts={by_id[i] for i in result.conflicts}, gone={by_id[i] for i in result.gone},
                                    errors={by_id[i]: message for i, message in result.errors.items()})

    def refresh_nodes(self, cache, node_names: set[str]) -> None:
        self.worker.snapshot.refresh_nodes(cache, node_names)


# The nominated pods not yet placed: what the nominator holds (read once per batch, usually finding none).
# In the model's order (namespace, name), as the queryset read them: the order they join the nominator in.
_NOMINATED = "node_name = '' AND assumed_node = '' AND NOT deleting AND nominated_node <> '' ORDER BY namespace, name"


class Worker:
    """What one process keeps between batches: its snapshot, algorithm state and parsed pods."""

    def __init__(self, queue=None, config: SchedulerConfig | None = None, seed: int | None = None):
        self.queue = queue or get_queue()
        # A given config is pinned (version 0, never reloaded); otherwise the active version is followed.
        self.follows_versions = config is None
        # Seeded by SCHEDBOARD_SEED, or with a seed of its own: every attempt records where its draws stood.
        self.algorithm = Algorithm(seed if seed is not None else settings.SCHEDBOARD_SEED,
                                   batching=settings.SCHEDBOARD_FEATURE_GATES["OpportunisticBatching"])
        self._use_config(*(active_config() if config is None else (INITIAL_VERSION, config)))
        self.snapshot = Snapshot()
        self.identity = f"{socket.gethostname()}-{os.getpid()}"
        self._pod_specs: OrderedDict[tuple, PodSpec] = OrderedDict()
        self._templates: OrderedDict[str, PodSpec] = OrderedDict()
        # Upstream's nominator: the pods nominated by preemption, counted on their node by later cycles.
        self.algorithm.nominator = Nominator()

    def _use_config(self, version: int, config: SchedulerConfig) -> None:
        self.version, self.config = version, config
        self.profiles = config.build_profiles(version=version)
        for profile in self.profiles.values():
            for plugin in profile.post_filters:
                if hasattr(plugin, "rng"):
                    # DefaultPreemption's random offset among the candidates: one stream with the tie-break, so
                    # an attempt's recorded position says both (a replay seeks there).
                    plugin.rng = self.algorithm.tiebreak
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
            spec = self._parsed_spec(pod)
            if spec.nominated_node_name != pod.nominated_node:
                # The nominator's truth is the column, written in the nominating worker's own transaction; the
                # manifest is the API server's copy on the kubernetes backend, which lacks a nomination until
                # its patch comes back through the mirror (an event racing it carries none). Upstream's pod
                # reads its nomination from the nominator kept in process, so ours reads the column.
                spec = dataclasses.replace(spec, nominated_node_name=pod.nominated_node)
            self._pod_specs[key] = spec
        return spec

    def _parsed_spec(self, pod: Pod) -> PodSpec:
        """The pod's spec as its manifest says; pods of one workload share a spec, parsed (and validated) once."""
        shape = json.dumps(pod.manifest.get("spec"), sort_keys=True)
        template = self._templates.get(shape)
        if template is None:
            spec = pod_from_manifest(pod.manifest)
            self._templates[shape] = spec
        else:
            deleting = bool((pod.manifest.get("metadata") or {}).get("deletionTimestamp"))
            spec = dataclasses.replace(template, namespace=pod.namespace, name=pod.name, uid=pod.uid, deleting=deleting,
                                       **pod_terms.metadata_fields(pod.manifest))
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
        # DefaultPreemption's PreEnqueue, before the snapshot (upstream's runs before the cycle takes one): a
        # preemption found over here has its victims' deletion in the snapshot read next. Asked after it, victims
        # another worker's task evicted in between were gone for the hold and there for the snapshot, and the
        # preemptor, eligible again on that stale view, preempted a second time.
        held = preemptions_under_way({p.uid: p.nominated_node for p in rows.values() if p.nominated_node})
        # Each attempt records what its snapshot could see (the replay applies the same changes before it).
        cache = self.snapshot.refresh()
        self._snapshot_at, self._snapshot_deleted = self.snapshot.read_at, self.snapshot.deleted_mark
        # After the snapshot: room a preemption freed (victims deleted after the nomination committed) is
        # never seen here without the nomination that claims it.
        self._sync_nominator()
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
            if scheduling_gates.gates_of(pod.manifest):
                # SchedulingGates' PreEnqueue (a pod queued by a path that did not know it is gated, such as
                # the mirror): held as gated, never attempted; the update removing its last gate queues it.
                _hold_gated(pod)
                self.queue.done(info.key)
                continue
            if pod.uid in held:
                # As DefaultPreemption's PreEnqueue: its victims are still going; the task activates it after.
                self.queue.add_unschedulable_if_not_present(info, unschedulable=True, message=pod.scheduled_message)
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

        if stats.conflicts:
            metrics.reservation_conflicts.inc(stats.conflicts)
        self._write(outcomes)
        reported = [o.reported for o in outcomes if o.reported]
        if reported:  # committed: the backend may tell the cluster (the kubernetes backend's leader does)
            get_backend().report(failed=reported, scheduled=[])
        # A pod bound while one was in flight that its affinity or spread hint says may help, or another
        # cluster event (a node added or changed, an assigned pod deleted) one of its rejecting plugins
        # registers: back through backoffQ, not the pool (that event's own move could not see it).
        failing = [o for o in outcomes if o.requeue is not None and o.requeue[0] and not o.done and not o.again]
        helped = hints.bound_while_in_flight([(o.info.key, _in_flight_since(o.info), self.pod_spec(o.pod), o.requeue[1])
                                              for o in failing if hints.asks_hints(o.requeue[1])])
        helped |= hints.events_while_in_flight(self.queue, [(o.info.key, o.info.cycle, o.requeue[1]) for o in failing])
        pooled = []
        for o in outcomes:
            if o.done:
                self.queue.done(o.info.key)
            elif o.again:
                self.queue.done(o.info.key)
                self.queue.add(o.info.key, o.pod.priority)
            elif o.requeue is not None:
                # A helped pod was rejected (podBackoffQ), not failed with an error (podErrorBackoffQ).
                to = self.queue.add_unschedulable_if_not_present(o.info, unschedulable=o.requeue[0] and o.info.key not in helped,
                                                                 message=o.requeue[1], error=not o.requeue[0])
                if to == UNSCHEDULABLE_Q:
                    pooled.append((o.info.key, o.info.cycle, o.requeue[1]))
        hints.move_missed_while_in_flight(self.queue, pooled)
        preempting = [o for o in outcomes if o.written and o.job]
        if preempting:  # as prepareCandidateAsync: the victims go in another task, the loop goes on
            jobs = [o.job for o in preempting]
            metrics.observe_many(metrics.preemption_victims, [len(o.victims) for o in preempting])

            def send_jobs():
                for job in jobs:
                    dispatch.send(dispatch.PREEMPT, job)

            transaction.on_commit(send_jobs)
        placed = [o for o in outcomes if o.placed and o.written]
        attempts = [o.attempt for o in outcomes if o.attempt is not None and o.written]
        stats.skipped = sum(o.skipped for o in outcomes)
        stats.scheduled = len(placed)
        stats.unschedulable = sum(a.result == RESULT_UNSCHEDULABLE for a in attempts)
        stats.errors = sum(a.result == RESULT_ERROR for a in attempts) + sum(not o.written for o in outcomes)
        stats.bind_items = [BindItem(attempt=o.attempt.pk, pod=o.pod.pk, node=o.attempt.node_name,
                                     info=dataclasses.replace(o.info),  # as popped: the queue's own record moves on
                                     cycle_seconds=(o.attempt.attempt_ms or 0.0) / 1000.0) for o in placed]
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
        tried = sum(o.preemption_attempt and o.written for o in outcomes)
        if tried:
            victims = sum(len(o.victims) for o in preempting)
            transaction.on_commit(lambda: live.preemptions_done(tried, victims))
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
        out = self._failure(pod, info, attempt, unschedulable, result.message, now, result.cycle_seconds)
        if result.decision is not None and result.decision.post_filter is not None:
            metrics.preemption_attempts.inc()
            out.preemption_attempt = True
            # The nodes preemption could not use, at most PREEMPTION_TRACE_NODES names (the rest counted): a
            # failed attempt's row stays small on a big cluster.
            outcome = preemption(result.decision, max_nodes=PREEMPTION_TRACE_NODES)
            if outcome is not None and settings.SCHEDBOARD_TRACE == "off":
                # Untraced, an attempt keeps only a preemption's outcome (what its victims' pages link to).
                outcome = {k: outcome[k] for k in ("nominated", "victims", "message", "code", "plugin")
                           } if outcome["nominated"] else None
            if outcome is not None:
                attempt.trace = {**(attempt.trace or {}), "preemption": outcome}
            out.nominate, out.victims = result.nominated_node, result.victims
            if result.nominated_node is not None and result.nominated_node != pod.nominated_node:
                # As updatePod's nnnNeedsUpdate: only a nomination that changes goes out (the row as read is the
                # pod's status before this attempt).
                out.reported = (*out.reported[:3], result.nominated_node)
            out.cleared = tuple(p for p in (self._pk_of(c) for c in result.cleared_nominations) if p)
        return out

    def _failure(self, pod: Pod, info: QueuedPodInfo, attempt: Attempt, unschedulable: bool, message: str, now,
                 cycle_seconds: float = 0.0) -> _Scheduled:
        """As handleSchedulingFailure: the event, PodScheduled=False, back to the queue (unschedulable or backoff)."""
        event = EventSpec("Warning", "FailedScheduling", message, "Pod", pod.namespace, pod.name,
                          pod.uid, action="Scheduling", reporting_controller=pod.scheduler_name)
        _set_condition(pod, False, "Unschedulable" if unschedulable else "SchedulerError", message, now)
        return _Scheduled(pod, info, attempt=attempt, events=[event], failed=True, requeue=(unschedulable, message),
                          reported=(pod, pod.scheduled_reason, message), cycle_seconds=cycle_seconds)

    def _sync_nominator(self) -> None:
        """The nominated pods as the shared state has them (nominated, not yet placed), once per batch."""
        nominator = Nominator()
        self._nominated_pks: dict[str, int] = {}
        for pod in select_models(Pod, _NOMINATED):
            try:
                spec = self.pod_spec(pod)
            except Exception:  # noqa: BLE001 - an unreadable pod fails in its own cycle, not here
                continue
            nominator.add(spec, pod.nominated_node)
            self._nominated_pks[pod.key] = pod.pk
        self.algorithm.nominator = nominator

    def _pk_of(self, spec: PodSpec) -> int | None:
        return getattr(self, "_nominated_pks", {}).get(spec.key)

    def _error_attempt(self, pod: Pod, info: QueuedPodInfo, message: str, now, popped_at: float) -> Attempt:
        profile = self.profiles.get(pod.scheduler_name)
        return Attempt(
            pod=pod, namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid, number=pod.attempts,
            started_at=now, finished_at=timezone.now(), result=RESULT_ERROR, message=message,
            profile_name=pod.scheduler_name, profile_version=profile.version if profile else self.version,
            worker=self.identity, queue_wait_ms=ms(max(0.0, popped_at - info.timestamp)))

    def _unreadable(self, pod: Pod, info: QueuedPodInfo, exc: Exception, now, popped_at: float) -> _Scheduled:
        """A pod whose stored spec cannot be read: it fails (SchedulerError, backoff), the rest of the batch goes on."""
        if isinstance(exc, ManifestError):
            what = "; ".join(f"{p.path}: {p.message}" if p.path else p.message for p in exc.problems)
            message = f"the pod's spec cannot be read: {what}"
        else:
            log.exception("reading the spec of %s failed", pod.key)
            message = f"internal error reading the pod's spec: {why(exc)}"
        pod.attempts += 1
        return self._failure(pod, info, self._error_attempt(pod, info, message, now, popped_at), False, message, now)

    def _failed_internally(self, pod: Pod, info: QueuedPodInfo, result, exc: Exception, now,
                           popped_at: float) -> _Scheduled:
        if result.status == cycle.SCHEDULED:  # its reservation stands: give it back before failing the pod
            # (and the attempt its claim counted: the failure below counts the attempt, as it always did)
            release_assumed(pod_id=pod.pk, node_name=result.node_name, usage=row_usage(pod), uncount_attempt=True)
        message = f"internal error recording the scheduling result: {why(exc)}"
        pod.attempts = max(pod.attempts, 1)
        return self._failure(pod, info, self._error_attempt(pod, info, message, now, popped_at), False, message, now)

    def _write(self, outcomes: list[_Scheduled]) -> None:
        """The batch's attempts, events and conditions in one transaction; pod by pod only if that raises."""
        try:
            with transaction.atomic() if _batch_write_needs_transaction(outcomes) else nullcontext():
                _write_scheduled(outcomes)
            for o in outcomes:
                o.written = True
            return
        except SYSTEMIC_ERRORS:
            raise
        except Exception:  # noqa: BLE001 - find the pod whose rows the database refuses
            log.exception("writing a scheduling batch of %d pods failed: writing them one by one", len(outcomes))
        for o in outcomes:
            try:
                with transaction.atomic():
                    _write_scheduled([o])
                o.written = True
            except SYSTEMIC_ERRORS:
                raise
            except Exception as exc:  # noqa: BLE001
                log.exception("writing the scheduling result of %s failed", o.pod.key)
                self._write_failed(o, exc)

    def _write_failed(self, o: _Scheduled, exc: Exception) -> None:
        """The pod's own rows were refused: give back its reservation, back it off; record what can be recorded."""
        message = f"internal error recording the scheduling result: {why(exc)}"
        if o.placed:  # the attempt its claim counted goes too: the attempt was not recorded
            release_assumed(pod_id=o.pod.pk, node_name=o.node, usage=row_usage(o.pod), uncount_attempt=True)
        o.placed, o.attempt, o.reported, o.again = False, None, (o.pod, "SchedulerError", message), False
        o.requeue = (False, message)
        try:
            with transaction.atomic():
                events_record([EventSpec("Warning", "FailedScheduling", message, "Pod", o.pod.namespace, o.pod.name,
                                         o.pod.uid, action="Scheduling", reporting_controller=o.pod.scheduler_name)])
                Pod.objects.filter(pk=o.pod.pk, node_name="").update(
                    scheduled_status="False", scheduled_reason="SchedulerError", scheduled_message=message,
                    scheduled_transition_at=timezone.now())
        except SYSTEMIC_ERRORS:
            raise
        except Exception:  # noqa: BLE001 - the log line above is all that is left to say
            log.exception("could not record the failure of %s either", o.pod.key)

    def _attempt(self, pod: Pod, info: QueuedPodInfo, result, profile, now, popped_at: float) -> Attempt:
        decision = result.decision
        table = self.snapshot.cache.table
        attempt = _new_attempt(
            pod, number=pod.attempts, started_at=now, snapshot_at=getattr(self, "_snapshot_at", None),
            snapshot_deleted_pod=getattr(self, "_snapshot_deleted", None), finished_at=timezone.now(),
            node_name=result.node_name or "", message=result.message,
            profile_name=profile.scheduler_name, profile_version=profile.version, worker=self.identity,
            queue_wait_ms=ms(max(0.0, popped_at - info.timestamp)), algorithm_ms=ms(result.algorithm_seconds),
            attempt_ms=ms(result.cycle_seconds),
            result={cycle.SCHEDULED: RESULT_SCHEDULED, cycle.UNSCHEDULABLE: RESULT_UNSCHEDULABLE}.get(result.status, RESULT_ERROR),
        )
        if decision is not None:
            if decision.tiebreak is not None:
                attempt.tiebreak_seed, attempt.tiebreak_position, attempt.start_node_index = decision.tiebreak
            attempt.num_nodes = decision.num_all_nodes
            attempt.feasible_nodes = len(decision.candidates)
            attempt.evaluated_nodes = decision.evaluated_nodes
            if result.status == cycle.SCHEDULED:
                # Encoded here, as the COPY writes it: every scheduled attempt has them, and their dicts cost
                # more to build and encode than the rest of the row.
                attempt.candidates = JSONText(top_candidates_json(decision, table))
            else:
                attempt.reasons = decision.reason_histogram()
            # The attempt page's per-node verdicts (and, traced "all", every candidate's scores).
            mode = settings.SCHEDBOARD_TRACE
            if mode == "all" or (mode == "failures" and result.status != cycle.SCHEDULED):
                attempt.trace = trace(decision, table, scores=mode == "all")
        return attempt


def _batch_write_needs_transaction(outcomes: list[_Scheduled]) -> bool:
    """Whether the batch's write needs a transaction: it writes events, failed pods' conditions, nominations or
    preemptions besides its attempts (all of which come with a failed or skipped pod). With its attempts alone
    it writes one statement (insert_many's COPY, atomic by itself), and a transaction around it would only cost
    its BEGIN and COMMIT: two round trips of every batch whose pods were all placed. Inside a caller's
    transaction the savepoint stays: a refused COPY must not abort that transaction before the pod by pod retry."""
    return connection.in_atomic_block or any(o.events or o.failed for o in outcomes)


def _new_attempt(pod: Pod, **values) -> Attempt:
    """An Attempt of `pod` for insert_many (new_row: one per pod of every batch, so not through Model.__init__)."""
    attempt = new_row(Attempt, pod_id=pod.pk, namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid, **values)
    attempt._state.fields_cache["pod"] = pod  # as Attempt(pod=pod): attempt.pod without a query
    return attempt


def _in_flight_since(info: QueuedPodInfo) -> float | None:
    """The pop time the in-flight hint check is given (it looks back a clock margin before it), never reaching
    back before the pod's last put-back: a binding before that was seen then (by that put-back's own check, or
    by the binding's move while the pod waited in the queue). Else a pod popped from backoffQ just after a
    binding that cannot help it would be sent back there, and popped again at once, for the whole margin."""
    if info.popped_at is None:
        return None
    return max(info.popped_at, info.timestamp + hints._CLOCK_MARGIN_SECONDS)  # (hints.py is not ours to edit)


def _hold_gated(pod: Pod) -> None:
    """Gives a gated pod kube-scheduler's PodScheduled=False/SchedulingGated condition: no attempt, no event.
    Only the version read (updated_at): an update meanwhile that removed its gates has queued it again.
    queued_at (the SLI's start) is cleared: as upstream, time spent gated is not scheduling latency."""
    if pod.scheduled_reason == scheduling_gates.REASON and pod.queued_at is None:
        return
    now = timezone.now()
    already = pod.scheduled_reason == scheduling_gates.REASON and pod.scheduled_transition_at is not None
    Pod.objects.filter(pk=pod.pk, node_name="", assumed_node="", updated_at=pod.updated_at).update(
        queued_at=None, scheduled_status="False", scheduled_reason=scheduling_gates.REASON,
        scheduled_message=scheduling_gates.MESSAGE, updated_at=now,
        scheduled_transition_at=pod.scheduled_transition_at if already else now)


def _pods_by_key(keys: list[str]) -> dict[str, Pod]:
    pairs = [k.split("/", 1) for k in keys]
    names = {n for _, n in pairs}
    namespaces = {ns for ns, _ in pairs}
    wanted = set(keys)
    by_name, params = in_list("name", names)
    by_namespace, more = in_list("namespace", namespaces)
    return {p.key: p for p in select_models(Pod, f"{by_name} AND {by_namespace}", [*params, *more]) if p.key in wanted}


def _set_condition(pod: Pod, ok: bool, reason: str, message: str, now) -> None:
    status = "True" if ok else "False"
    if pod.scheduled_status != status:
        pod.scheduled_transition_at = now
    pod.scheduled_status = status
    pod.scheduled_reason = reason
    pod.scheduled_message = message


_worker: Worker | None = None


def reset_worker(worker: Worker | None = None) -> None:
    """Use `worker` for this process's batches, or forget the worker so that the next batch builds a new one
    (tests and benchmarks start afresh)."""
    global _worker
    _worker = worker


def get_worker() -> Worker:
    global _worker
    if _worker is None:
        _worker = Worker()
    return _worker


def prewarm() -> None:
    """Read the node snapshot before the first task, as kube-scheduler waits for its informers' caches to sync
    before it schedules: a worker's first batch would otherwise parse every node first (seconds at 5,000 nodes,
    with its pods waiting). A failure (the database not there yet) leaves it to the first batch."""
    try:
        get_worker().snapshot.refresh()
    except Exception:  # noqa: BLE001 - the first batch reads it again, and reports what is wrong
        log.warning("reading the node snapshot at start failed; the first batch reads it", exc_info=True)
    # What the first batch's end would do (a full collection, the survivors frozen), done here with the
    # snapshot in the heap: otherwise a worker's first batch with pods paid it, live (collector.after_batch was
    # 11 % of a live-bench worker's task samples), and the next is due only a minute from now.
    collector.after_batch()


# The Celery task's budget (tasks.schedule): while pods are waiting it goes on to the next batch itself for this
# long, instead of ending and sending the task that pops them. Live arrival makes batches of a few pods, whose
# fixed costs (the task's consume, the next kick's publish) were as much as scheduling them; a batch that starts
# within the budget runs whole, so a big batch (a backlog's, ~0.25 s) is the last of its task, as before. The
# bound is for what queues behind a task in the Celery queue (bind, reconcile tasks): it waits at most this
# much longer than behind one batch, and the slot (kick._SLOT_SECONDS) never expires under a running task.
TASK_BUDGET_SECONDS = 0.05


def run_schedule_task(token: str | None = None, budget: float = 0.0) -> BatchStats:
    """One batch, then hand on: binding runs as its own task, and the next batch is another kick. With a
    `budget` (seconds), the next batch runs in this task while the last one popped pods and the task has
    run less than that: it stops at a pop that finds nothing (as the task the kick would send would have)."""
    started = time.monotonic()
    total = BatchStats()
    try:
        worker = get_worker()
        while True:
            worker.queue.flush()
            stats = worker.schedule_batch()
            if stats.bind_items:
                items = stats.bind_items
                backend = get_backend()
                transaction.on_commit(lambda items=items: backend.hand_off(items))
            _add_stats(total, stats)
            if not stats.popped or time.monotonic() - started >= budget:
                break
            collector.after_batch()  # as between two tasks
    except BaseException:
        if token:
            slot_release(token)
        raise
    if stats.popped:
        kick(release=token)  # the slot given back and the next task sent, in one round trip
        collector.after_batch()  # (after the kick: the other workers go on meanwhile)
    elif token:
        kick_if_waiting(worker.queue, release=token)  # the slot given back first
    return total


def _add_stats(total: BatchStats, stats: BatchStats) -> None:
    for f in ("popped", "scheduled", "unschedulable", "errors", "skipped", "conflicts"):
        setattr(total, f, getattr(total, f) + getattr(stats, f))
    total.bind_items += stats.bind_items
