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
import uuid
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from dashboard.live import publish as live

from . import metrics
from .backends import get_backend
from .backends.errors import BindError, BoundElsewhere, PodGone
from .engine import schedule_one as cycle
from .engine.config import SchedulerConfig
from .engine.explain import top_candidates, trace
from .engine.framework import Algorithm
from .engine.pods import PodSpec
from .engine.queue import QueuedPodInfo
from .manifests import pod_from_manifest
from .models import (RESULT_BIND_FAILED, RESULT_ERROR, RESULT_SCHEDULED, RESULT_UNSCHEDULABLE, Attempt, Binding,
                     ClusterEvent, Node, Pod)
from .profiles import INITIAL_VERSION, active_config, active_version_number, config_for_version, scheduler_names
from .queues import get_queue, get_redis, set_queue_backoff
from .reservations import add_node_usage, release_assumed, reserve_many
from .services import EventSpec, events_record
from .snapshot import Snapshot
from .sql import insert_many, update_from_values

log = logging.getLogger(__name__)

POD_SPEC_CACHE_SIZE = 50_000
_USAGE_FIELDS = ("req_cpu", "req_memory", "req_ephemeral", "req_scalar", "nonzero_cpu", "nonzero_memory", "host_ports")


def _usage(pod: Pod) -> dict:
    return {f: getattr(pod, f) for f in _USAGE_FIELDS}


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


class _DbCluster:
    """schedule_batch's Cluster port over Postgres for one batch of pod rows."""

    def __init__(self, worker: Worker, rows: dict[str, Pod]):
        self.worker = worker
        self.rows = rows

    def reserve_many(self, placements: list[tuple[PodSpec, str]]) -> cycle.ReserveOutcome:
        versions = self.worker.snapshot.spec_versions
        by_id = {self.rows[pod.key].pk: pod.key for pod, _ in placements}
        conflicts, gone = reserve_many([(self.rows[pod.key].pk, _usage(self.rows[pod.key]), node, versions.get(node))
                                        for pod, node in placements])
        return cycle.ReserveOutcome(conflicts={by_id[i] for i in conflicts}, gone={by_id[i] for i in gone})

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
                spec = dataclasses.replace(template, namespace=pod.namespace, name=pod.name, uid=pod.uid, deleting=deleting)
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
        attempts: list[Attempt] = []
        events: list[EventSpec] = []
        failed_pods: list[Pod] = []
        reported: list[tuple[Pod, str | None, str]] = []  # for the backend: (pod, condition reason, message)
        requeue: list[tuple[QueuedPodInfo, bool, str]] = []
        placed: list[tuple[Attempt, Pod, QueuedPodInfo]] = []

        batch: list[tuple[PodSpec, object]] = []
        batch_rows: dict[str, Pod] = {}
        batch_infos: dict[str, QueuedPodInfo] = {}
        timings = metrics.BatchTimings()  # metrics: plugin calls timed, observed once per batch below
        for info in infos:
            pod = rows.get(info.key)
            if pod is None or pod.node_name or pod.assumed_node or pod.scheduler_name not in self.profiles:
                self.queue.done(info.key)  # deleted, already placed, or not ours any more
                continue
            batch.append((self.pod_spec(pod), timings.profile(self.profiles[pod.scheduler_name], info.key)))
            batch_rows[info.key] = pod
            batch_infos[info.key] = info
        results = cycle.schedule_batch(batch, algorithm=self.algorithm, cache=cache, cluster=_DbCluster(self, batch_rows))

        failed_seconds: dict[tuple[str, str], list[float]] = {}  # metrics: (result, profile) -> attempt seconds
        algorithm_seconds: list[float] = []
        for (spec, profile), result in zip(batch, results):
            pod, info = batch_rows[spec.key], batch_infos[spec.key]
            stats.conflicts += result.conflicts
            if result.status == cycle.GONE:
                self.queue.done(info.key)
                continue
            if result.status == cycle.SKIPPED:
                stats.skipped += 1
                events.append(EventSpec("Warning", "FailedScheduling", result.message, "Pod", pod.namespace, pod.name,
                                        pod.uid, action="Scheduling", reporting_controller=pod.scheduler_name))
                reported.append((pod, None, result.message))
                self.queue.done(info.key)
                continue
            pod.attempts += 1
            attempt = self._attempt(pod, info, result, profile, now, popped_at)
            attempts.append(attempt)
            if result.status == cycle.SCHEDULED:
                stats.scheduled += 1
                placed.append((attempt, pod, info))
                # As schedulingCycle: the algorithm latency is observed when schedulePod succeeded.
                algorithm_seconds.append(result.algorithm_seconds)
                continue
            unschedulable = result.status == cycle.UNSCHEDULABLE
            failed_seconds.setdefault((attempt.result, profile.scheduler_name), []).append(result.cycle_seconds)
            stats.unschedulable += unschedulable
            stats.errors += not unschedulable
            events.append(EventSpec("Warning", "FailedScheduling", result.message, "Pod", pod.namespace, pod.name,
                                    pod.uid, action="Scheduling", reporting_controller=pod.scheduler_name))
            _set_condition(pod, False, "Unschedulable" if unschedulable else "SchedulerError", result.message, now)
            reported.append((pod, pod.scheduled_reason, result.message))
            failed_pods.append(pod)
            requeue.append((info, unschedulable, result.message))

        with transaction.atomic():
            insert_many(Attempt, attempts)
            events_record(events, now=now)
            condition = ["scheduled_status", "scheduled_reason", "scheduled_message", "scheduled_transition_at", "attempts"]
            update_from_values(Pod, condition, [(p.pk, *(getattr(p, f) for f in condition)) for p in failed_pods])
            update_from_values(Pod, ["attempts"], [(pod.pk, pod.attempts) for _, pod, _ in placed])
        if reported:  # committed: the backend may tell the cluster (the kubernetes backend's leader does)
            get_backend().report(failed=reported, scheduled=[])
        for info, unschedulable, message in requeue:
            self.queue.add_unschedulable_if_not_present(info, unschedulable=unschedulable, message=message)
        stats.bind_items = [
            # "cycle_s" carries the scheduling cycle's time to the binder for scheduling_attempt_duration_seconds.
            {"attempt": attempt.pk, "pod": pod.pk, "node": attempt.node_name, "info": asdict(info),
             "cycle_s": (attempt.attempt_ms or 0.0) / 1000.0}
            for attempt, pod, info in placed
        ]
        # Metrics, once per batch: failed attempts (scheduled ones count when bound), algorithm and
        # extension point latencies (the queue counts the pods it takes back itself).
        for (result, profile_name), seconds in failed_seconds.items():
            metrics.record_attempts(result, profile_name, seconds)
        metrics.observe_many(metrics.scheduling_algorithm_duration, algorithm_seconds)
        timings.record({key: pod.scheduler_name for key, pod in batch_rows.items()}, [r.decision for r in results])
        # The live dashboard: one message per batch, buffered and sent by another thread (never waits).
        transaction.on_commit(lambda: live.schedule_batch_done(attempts, stats.popped))
        return stats

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


def _bind_batch(items: list[dict], queue, backend) -> dict:
    # The usage columns too: releasing a reservation must not re-read a row the watch may have deleted.
    pods = Pod.objects.only("id", "namespace", "name", "uid", "scheduler_name", "manifest", "attempts",
                            "queued_at", "created_at", *_USAGE_FIELDS).in_bulk([i["pod"] for i in items])
    now = timezone.now()
    done_keys: list[str] = []
    accepted: list[tuple[dict, Pod, float]] = []
    refused: list[tuple[dict, Pod, str, float]] = []
    dropped: list[tuple[tuple[dict, Pod, str, float], BindError]] = []  # bound elsewhere or deleted: no retry
    present = []  # the items whose pod still exists
    for item in items:
        pod = pods.get(item["pod"])
        if pod is None:  # deleted while in flight: its reservation went with it
            done_keys.append(item["info"]["key"])
            continue
        present.append((item, pod))
    requests = [{"pod_manifest": pod.manifest, "node_name": item["node"], "attempt_number": pod.attempts,
                 "previous_bind_failures": Attempt.objects.filter(pod=pod, result=RESULT_BIND_FAILED).count()
                 if _wants_failures(pod) else 0} for item, pod in present]
    if hasattr(backend, "bind_many"):  # bindings in parallel, as upstream's binding goroutines
        answered = backend.bind_many(requests)
        outcomes, seconds = [a[0] for a in answered], [a[1] for a in answered]
    else:
        outcomes, seconds = [], []
        for request in requests:
            t0 = time.perf_counter()
            try:
                backend.bind(**request)
                outcomes.append(None)
            except BindError as exc:
                outcomes.append(exc)
            seconds.append(time.perf_counter() - t0)
    for (item, pod), outcome, took in zip(present, outcomes, seconds):
        if outcome is None:
            accepted.append((item, pod, took))
        elif isinstance(outcome, (BoundElsewhere, PodGone)):
            dropped.append(((item, pod, f"Binding rejected: {outcome}", took), outcome))
        else:
            refused.append((item, pod, f"Binding rejected: {outcome}", took))

    events: list[EventSpec] = []
    retry: list[tuple[QueuedPodInfo, str]] = []
    with transaction.atomic():
        # The binding itself, for every accepted pod at once: only where our reservation still stands
        # (or, with a cluster that reports bindings, where its watch already recorded this very binding).
        fields = ["node_name", "assumed_node", "assumed_at", "phase", "bound_at", "scheduled_status",
                  "scheduled_reason", "scheduled_message", "scheduled_transition_at"]
        where = "scheduler_pod.assumed_node = v.node_name AND scheduler_pod.node_name = ''"
        if backend.mirrors_bindings:
            where = f"(({where}) OR scheduler_pod.node_name = v.node_name)"
        phase = getattr(backend, "bound_phase", Pod.RUNNING)
        bound_ids = set(update_from_values(
            Pod, fields, [(pod.pk, item["node"], "", None, phase, now, "True", "", "", now) for item, pod, _ in accepted],
            where=where, returning=True))
        already = set(Binding.objects.filter(pod_uid__in=[pod.uid for _, pod, _ in accepted if pod.pk in bound_ids])
                      .values_list("pod_uid", flat=True))
        bindings, attempt_rows = [], []
        for item, pod, seconds in accepted:
            if pod.pk not in bound_ids:
                refused.append((item, pod, "Binding rejected: the reservation expired before the binding", seconds))
                continue
            node = item["node"]
            done_keys.append(item["info"]["key"])
            if pod.uid in already:
                continue  # this binding was handed to us twice (a redelivered job): recorded once
            bindings.append(Binding(pod_id=pod.pk, namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid,
                                    node_name=node, attempt_id=item["attempt"], bound_at=now))
            events.append(EventSpec("Normal", "Scheduled", f"Successfully assigned {pod.namespace}/{pod.name} to {node}",
                                    "Pod", pod.namespace, pod.name, pod.uid, action="Binding",
                                    reporting_controller=pod.scheduler_name))
            first = pod.queued_at or pod.created_at
            attempt_rows.append((item["attempt"], RESULT_SCHEDULED, "", _ms(seconds),
                                 _ms(max(0.0, (now - first).total_seconds())) if first else None))
        for item, pod, error, seconds in refused:
            release_assumed(pod_id=pod.pk, node_name=item["node"], usage=_usage(pod))
            events.append(EventSpec("Warning", "FailedScheduling", error, "Pod", pod.namespace, pod.name, pod.uid,
                                    action="Scheduling", reporting_controller=pod.scheduler_name))
            Pod.objects.filter(pk=pod.pk).update(scheduled_status="False", scheduled_reason="SchedulerError",
                                                 scheduled_message=error, scheduled_transition_at=now)
            attempt_rows.append((item["attempt"], RESULT_BIND_FAILED, error, _ms(seconds), None))
            retry.append((QueuedPodInfo(**item["info"]), error))
        for (item, pod, error, seconds), outcome in dropped:
            # Not ours to place any more: give the room back. A pod the API says is bound elsewhere
            # counts there from now on (unless the watch recorded it first), so it is not requeued.
            release_assumed(pod_id=pod.pk, node_name=item["node"], usage=_usage(pod))
            if isinstance(outcome, BoundElsewhere):
                moved = Pod.objects.filter(pk=pod.pk, node_name="", assumed_node="").update(
                    node_name=outcome.node_name, bound_at=now)
                if moved and Node.objects.filter(name=outcome.node_name).exists():
                    add_node_usage(node_name=outcome.node_name, usage=_usage(pod))
            attempt_rows.append((item["attempt"], RESULT_BIND_FAILED, error, _ms(seconds), None))
            done_keys.append(item["info"]["key"])
        insert_many(Binding, bindings)
        update_from_values(Attempt, ["result", "message", "binding_ms", "e2e_ms"], attempt_rows)
        events_record(events, now=now)

    def publish():
        queue.done_many(done_keys)
        for info, message in retry:
            queue.add_unschedulable_if_not_present(info, unschedulable=False, message=message)
        backend.report(failed=[(pod, "SchedulerError", error) for _, pod, error, _ in refused],
                       scheduled=[(pod, item["node"]) for item, pod, _ in accepted
                                  if pod.pk in bound_ids and pod.uid not in already])
        if retry:
            kick()

    # Metrics, after commit and once per batch: as the binding cycle, a bound pod counts as "scheduled"
    # (attempt = scheduling cycle + binding), with its attempts and its SLI; a refused binding is an "error".
    bound_pods = [(item, pod, seconds) for item, pod, seconds in accepted if pod.pk in bound_ids]
    transaction.on_commit(lambda: _observe_bind_batch(bound_pods, refused, now))
    transaction.on_commit(lambda: live.bind_batch_done(bound_pods, refused, now))  # live dashboard, never waits

    transaction.on_commit(publish)
    return {"bound": len(bindings), "failed": len(refused), "dropped": len(dropped)}


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


def _wants_failures(pod: Pod) -> bool:
    from .backends.simulated import FAIL_BINDS_ANNOTATION

    return FAIL_BINDS_ANNOTATION in ((pod.manifest.get("metadata") or {}).get("annotations") or {})


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

    # Reservations whose binding never came (a worker died between reserve and bind).
    stale = now - timedelta(seconds=settings.SCHEDBOARD_ASSUME_TTL_SECONDS)
    for pod in Pod.objects.filter(node_name="").exclude(assumed_node="").filter(assumed_at__lt=stale):
        if release_assumed(pod_id=pod.pk, node_name=pod.assumed_node, usage=_usage(pod)):
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


# ---- waking workers ---------------------------------------------------------------------

_KICK_SLOTS = "schedboard:schedule-slots"
_SLOT_SECONDS = 5  # a dead worker holds its slot this long at most


def kick() -> None:
    """Make sure up to SCHEDBOARD_PARALLELISM schedule tasks are queued or running (Redis only)."""
    r = get_redis()
    if r is None or settings.CELERY_TASK_ALWAYS_EAGER:
        return  # embedded (or inline tasks): the caller's own loop polls
    from .tasks import schedule

    now = time.time()
    r.zremrangebyscore(_KICK_SLOTS, 0, now)
    while r.zcard(_KICK_SLOTS) < settings.SCHEDBOARD_PARALLELISM:
        token = uuid.uuid4().hex
        r.zadd(_KICK_SLOTS, {token: now + _SLOT_SECONDS})
        if r.zcard(_KICK_SLOTS) > settings.SCHEDBOARD_PARALLELISM:  # lost a race with another kicker
            r.zrem(_KICK_SLOTS, token)
            break
        schedule.delay(token)


def slot_release(token: str) -> None:
    r = get_redis()
    if r is not None:
        r.zrem(_KICK_SLOTS, token)


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
