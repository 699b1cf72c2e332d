"""kube-scheduler's Prometheus metrics (pkg/scheduler/metrics/metrics.go): same names, help texts,
labels and buckets, shared by every worker process through prometheus_client's multiprocess mode.

Processes write counters and histograms into PROMETHEUS_MULTIPROC_DIR (config/settings.py sets it
before prometheus_client is imported); /metrics merges the files. What is "current state" rather
than an event count (pending pods per queue, the cache size) is read from Redis and Postgres at
scrape time by the dashboard's /metrics view (dashboard/metrics.py), so it is right whichever process asks.
"""

from __future__ import annotations

import os
import random
import time

import numpy as np
from django.conf import settings

# The value class is chosen when prometheus_client is imported: the directory must be set first.
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(settings.PROMETHEUS_MULTIPROC_DIR))

from prometheus_client import Counter, Gauge, Histogram, values  # noqa: E402
from prometheus_client.multiprocess import mark_process_dead  # noqa: E402

SUBSYSTEM = "scheduler"

# As metrics.go: extension_point label values.
PRE_FILTER, FILTER, PRE_SCORE, SCORE = "PreFilter", "Filter", "PreScore", "Score"
SCORE_EXTENSION_NORMALIZE, RESERVE, PERMIT, BIND = "ScoreExtensionNormalize", "Reserve", "Permit", "Bind"
# As framework.Code.String().
SUCCESS, ERROR_STATUS, UNSCHEDULABLE_STATUS = "Success", "Error", "Unschedulable"
UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
# As schedule_one.go: pluginMetricsSamplePercent = 10.
PLUGIN_METRICS_SAMPLE_PERCENT = 10
# As metrics.go: the operation label of goroutines.
BINDING = "binding"


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """As component-base metrics.ExponentialBuckets (prometheus.ExponentialBuckets): multiplied step by step."""
    out = []
    for _ in range(count):
        out.append(start)
        start *= factor
    return out


if not isinstance(values.ValueClass, type) or values.ValueClass.__name__ != "MmapedValue":
    # prometheus_client was imported before the directory was set (or in single-process mode): switch.
    values.ValueClass = values.MultiProcessValue()

schedule_attempts = Counter(
    "schedule_attempts", "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could "
    "not be scheduled, while 'error' means an internal scheduler problem.", ["result", "profile"], subsystem=SUBSYSTEM)
scheduling_attempt_duration = Histogram(
    "scheduling_attempt_duration_seconds", "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
    ["result", "profile"], subsystem=SUBSYSTEM, buckets=exponential_buckets(0.001, 2, 15))
scheduling_algorithm_duration = Histogram(
    "scheduling_algorithm_duration_seconds", "Scheduling algorithm latency in seconds",
    subsystem=SUBSYSTEM, buckets=exponential_buckets(0.001, 2, 15))
pod_scheduling_sli_duration = Histogram(
    "pod_scheduling_sli_duration_seconds", "E2e latency for a pod being scheduled, from the time the pod enters "
    "the scheduling queue and might involve multiple scheduling attempts.", ["attempts"], subsystem=SUBSYSTEM,
    buckets=exponential_buckets(0.01, 2, 20))
pod_scheduling_attempts = Histogram(
    "pod_scheduling_attempts", "Number of attempts to successfully schedule a pod.",
    subsystem=SUBSYSTEM, buckets=exponential_buckets(1, 2, 5))
framework_extension_point_duration = Histogram(
    "framework_extension_point_duration_seconds", "Latency for running all plugins of a specific extension point.",
    ["extension_point", "status", "profile"], subsystem=SUBSYSTEM, buckets=exponential_buckets(0.0001, 2, 12))
plugin_execution_duration = Histogram(
    "plugin_execution_duration_seconds", "Duration for running a plugin at a specific extension point.",
    ["plugin", "extension_point", "status"], subsystem=SUBSYSTEM, buckets=exponential_buckets(0.00001, 1.5, 20))
queue_incoming_pods = Counter(
    "queue_incoming_pods", "Number of pods added to scheduling queues by event and queue type.",
    ["queue", "event"], subsystem=SUBSYSTEM)
# Preemption (metrics.go): attempts counted where DefaultPreemption's PostFilter runs, victims observed
# when a preemption's victims are chosen (as prepareCandidate / prepareCandidateAsync).
preemption_attempts = Counter(
    "preemption_attempts", "Total preemption attempts in the cluster till now", subsystem=SUBSYSTEM)
preemption_victims = Histogram(
    "preemption_victims", "Number of selected preemption victims for preemption initiated by a single pod",
    subsystem=SUBSYSTEM,
    # As upstream: #victims > 64 is rare, so [64, +Inf) is one bucket.
    buckets=exponential_buckets(1, 2, 7))
# A live gauge: each process's own in-flight bindings, summed over the processes still alive.
goroutines = Gauge(
    "goroutines", "Number of running goroutines split by the work they do such as binding.", ["operation"],
    subsystem=SUBSYSTEM, multiprocess_mode="livesum")
# Ours (no upstream counterpart): rows the retention task deleted (scheduler/retention.py).
retention_deleted_rows = Counter(
    "schedboard_retention_deleted_rows", "Rows deleted by retention, by kind of row.", ["kind"])

# schedboard's own: what the safety nets found and repaired (not kube-scheduler metrics).
usage_recounts = Counter(
    "usage_recounts", "Passes of the usage recount over every node (with usage_drift_repaired: how often it looked, "
    "and what it found).", namespace="schedboard")
usage_drift_repaired = Counter(
    "usage_drift_repaired", "Node usage values the recount found different from what the node's bound and assumed "
    "pods take, and repaired, by resource.", ["resource"], namespace="schedboard")
mirror_problems = Counter(
    "mirror_problems", "Objects from the API server the mirror could not apply as they are: 'unparsable' (counted "
    "as far as they can be read), 'failed' (the event raised; the rest of its batch went on).", ["kind", "problem"],
    namespace="schedboard")
reservation_conflicts = Counter(
    "reservation_conflicts", "Reservations refused because another worker took the node's room first (the pod is "
    "placed again on a refreshed snapshot): the optimistic concurrency's lost races.", namespace="schedboard")
bind_reservations_lost = Counter(
    "bind_reservations_lost", "Bindings not sent because their reservation was gone (expired and released, the pod "
    "deleted or placed again) by the time the binder took them.", namespace="schedboard")

PENDING_PODS_HELP = (
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number "
    "of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted "
    "to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to "
    "schedule because they are gated.")
CACHE_SIZE_HELP = "Number of nodes, pods, and assumed (bound) pods in the scheduler cache."


def attempts_label(attempts: int) -> str:
    # As getAttemptsLabel: "15+" from 15 attempts on.
    return "15+" if attempts >= 15 else str(attempts)


def observe_many(child, amounts) -> None:
    """Observe many values with one write per bucket (a batch costs a few mmap writes, not one per pod)."""
    if not len(amounts):
        return
    arr = np.asarray(amounts, dtype=np.float64)
    try:
        bounds, buckets, total = child._upper_bounds, child._buckets, child._sum
    except AttributeError:  # pragma: no cover - another prometheus_client layout
        for a in arr:
            child.observe(float(a))
        return
    # As Histogram.observe: each value lands in the first bucket whose upper bound is >= it.
    counts = np.bincount(np.searchsorted(np.asarray(bounds[:-1]), arr, side="left"), minlength=len(bounds))
    total.inc(float(arr.sum()))
    for i in np.flatnonzero(counts):
        buckets[i].inc(int(counts[i]))


def record_attempts(result: str, profile: str, seconds: list[float]) -> None:
    """As observeScheduleAttemptAndLatency, for a batch of attempts with the same result and profile."""
    if seconds:
        schedule_attempts.labels(result, profile).inc(len(seconds))
        observe_many(scheduling_attempt_duration.labels(result, profile), seconds)


def count_incoming(queue: str, event: str, count: int) -> None:
    """The queue's on_incoming hook: pods entering a sub-queue, by upstream's event label."""
    queue_incoming_pods.labels(queue, event).inc(count)


def should_sample_plugins() -> bool:
    # As state.SetRecordPluginMetrics(rand.Intn(100) < pluginMetricsSamplePercent).
    return random.randrange(100) < PLUGIN_METRICS_SAMPLE_PERCENT


# ---- plugin timings ----------------------------------------------------------------------

class _Timed:
    """A plugin proxy that times each extension point call into its batch's list."""

    def __init__(self, plugin, timings: BatchTimings):
        self._plugin = plugin
        self._timings = timings
        self.name = plugin.name

    def __getattr__(self, attr):
        return getattr(self._plugin, attr)

    def _timed(self, point: str, method: str, pod, *args):
        started = time.perf_counter()
        out = getattr(self._plugin, method)(*args)
        elapsed = time.perf_counter() - started
        if pod is not None:
            self._timings.current = pod.key
        status = SUCCESS
        if point == FILTER and not out.all_passed:
            status = UNSCHEDULABLE_STATUS
        elif point == PRE_FILTER and out is not None and not isinstance(out, (set, frozenset, list, tuple, dict)):
            status = UNSCHEDULABLE_AND_UNRESOLVABLE  # a PreFilterRejected (NodeAffinity, NodeName upstream)
        self._timings.calls.append((self._timings.current, self.name, point, status, elapsed))
        return out

    def filter(self, pod, nodes):
        return self._timed(FILTER, "filter", pod, pod, nodes)

    def score(self, pod, nodes, rows):
        return self._timed(SCORE, "score", pod, pod, nodes, rows)

    def normalize(self, scores):
        return self._timed(SCORE_EXTENSION_NORMALIZE, "normalize", None, scores)


class _TimedPreFilter(_Timed):
    def pre_filter(self, pod, nodes):
        return self._timed(PRE_FILTER, "pre_filter", pod, pod, nodes)


class BatchTimings:
    """One batch's timings: extension point durations for every pod, plugin durations for a sample.

    As upstream, plugin durations are recorded for a 10 % sample of the pods (timing every plugin
    call of every pod costs about 15 % of the cycle: ~35 us on a ~190 us pod, 5,000 nodes), while
    the extension point durations come from the two timers the engine keeps in every Decision
    (PreFilter; Score with its normalization and weighting). Filter has none, as upstream: it
    runs per node.
    """

    def __init__(self):
        self.calls: list[tuple[str, str, str, str, float]] = []
        self.current = ""
        self._profiles: dict[int, object] = {}

    def profile(self, profile, pod_key: str):
        """The profile to run this pod with: the same plugins, timed when the pod is in the sample."""
        if not should_sample_plugins():
            return profile
        timed = self._profiles.get(id(profile))
        if timed is None:
            import dataclasses

            def wrap(p):
                return (_TimedPreFilter if hasattr(p, "pre_filter") else _Timed)(p, self)

            timed = dataclasses.replace(profile, filters=[wrap(p) for p in profile.filters],
                                        scores=[(wrap(p), w) for p, w in profile.scores])
            self._profiles[id(profile)] = timed
        return timed

    def record(self, profiles: dict[str, str], decisions=()) -> None:
        """Observe the batch: `profiles` maps pod key -> profile name; `decisions` are the batch's Decisions."""
        by_labels: dict[tuple[str, str, str], list[float]] = {}
        for decision in decisions:
            if decision is None:
                continue
            profile = profiles.get(decision.pod_key, "")
            status = UNSCHEDULABLE_AND_UNRESOLVABLE if decision.pre_filter_msg is not None else SUCCESS
            by_labels.setdefault((PRE_FILTER, status, profile), []).append(decision.pre_filter_seconds)
            if decision.score_seconds is not None:
                status = ERROR_STATUS if decision.error else SUCCESS
                by_labels.setdefault((SCORE, status, profile), []).append(decision.score_seconds)
        for labels, seconds in by_labels.items():
            observe_many(framework_extension_point_duration.labels(*labels), seconds)
        samples: dict[tuple[str, str, str], list[float]] = {}
        for _key, plugin, point, status, seconds in self.calls:
            samples.setdefault((plugin, point, status), []).append(seconds)
        for labels, seconds in samples.items():
            observe_many(plugin_execution_duration.labels(*labels), seconds)


def process_exited(pid: int | None = None) -> None:
    """Drop an exiting process's live gauges (its counters and histograms stay counted)."""
    mark_process_dead(pid or os.getpid())
