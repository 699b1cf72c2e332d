"""`bench --arrival-rate R [--duration S]`: SchedulingBasic pods fed at a steady R pods/s for S seconds through
the real end-to-end stack (run_e2e's workers, beat, Redis queue and Postgres), and the latency each saw.

The SLI is upstream's pod_scheduling_sli_duration_seconds: from the pod's first entering the active queue
(InitialAttemptTimestamp, set only once PreEnqueue lets it in, so gated time is excluded) to its binding.
Here that is Attempt.e2e_ms: the binder's commit time minus Pod.queued_at, which the feed sets to the instant
it queued the pod (and _hold_gated clears for a gated one). Speed is reported, never asserted.
"""

from __future__ import annotations

import math
import time

import numpy as np
from django.utils import timezone

from . import e2e

DEFAULT_DURATION = 20.0
# The feed's ticker: each tick queues the pods the schedule owes by then. At 1,000 pods/s that is ~10 pods
# per tick, one UPDATE and one Redis pipeline each: a watch batch's size, far below a scheduling batch.
TICK_SECONDS = 0.01


def _ms(values) -> list[float]:
    return [float(v) for v in values if v is not None]


def _pct(values, q):
    return e2e.pct(values, q)


class ArrivalFeed:
    """run_e2e's `feed`: releases the measured pods (loaded held) at `rate` pods/s for `duration` seconds.

    The pods are created before the clock (held under HELD_SCHEDULER_NAME, as run_e2e holds its measured
    pods) and each tick releases its due pods: one UPDATE handing them to the default profile with queued_at
    set to this tick's instant, one pipeline of queue adds, then a kick, as the pod mirror queues a watch
    batch. Releasing is cheaper than inserting in the tick (no manifest built and serialised, no rows or index
    entries added while the workers run), so the feeder keeps up at 1,000 pods/s on this 2-core machine, and
    it measures the scheduler's latency from queueing, which is what the SLI starts from; the creation cost
    is the API server's, not the scheduler's. The feed's own lag (a tick releasing a pod later than its due
    time) is reported, so a slow feeder shows instead of hiding as a lower offered rate."""

    def __init__(self, rate: float, duration: float, tick: float = TICK_SECONDS):
        self.rate, self.duration, self.tick = float(rate), float(duration), float(tick)
        self.pods = max(1, math.ceil(self.rate * self.duration))
        self.lags: list[float] = []  # per tick: seconds from its oldest pod's due time to its release
        self.tick_seconds: list[float] = []  # per tick: the release's own cost
        self.fed = 0
        self.seconds = 0.0
        self.started_wall = None

    def run(self, *, measured: list[str], namespaces, redis, prefix: str) -> None:
        """Feed `measured` (in order) on the ticker; returns when every one is queued."""
        from ..models import Pod
        from ..queue.kick import kick
        from ..queue.redis_queue import RedisQueue

        queue = RedisQueue(redis, prefix=prefix)
        names = [k.split("/", 1) for k in measured]
        t0 = time.monotonic()
        self.started_wall = timezone.now()
        k = 0
        while self.fed < len(measured):
            next_tick = t0 + k * self.tick
            k += 1
            delay = next_tick - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            now = time.monotonic()
            # Pod i is due at i / rate: the pods owed by now, all at once if the feeder fell behind.
            owed = min(len(measured), int((now - t0) * self.rate) + 1)
            if owed <= self.fed:
                continue
            chunk = names[self.fed:owed]
            at = timezone.now()
            # Postgres first: a worker popping the pod must find it ours (one statement, autocommitted).
            Pod.objects.filter(namespace__in={ns for ns, _ in chunk}, name__in=[n for _, n in chunk]).update(
                queued_at=at, scheduler_name="default-scheduler")
            queue.add_many([(key, 0) for key in measured[self.fed:owed]])
            kick()
            self.lags.append(max(0.0, now - (t0 + self.fed / self.rate)))
            self.fed = owed
            self.tick_seconds.append(time.monotonic() - now)
        self.seconds = time.monotonic() - t0

    def report(self, namespaces) -> dict:
        """The feed's figures and where each fed pod's SLI went (run in the bench database, all bound)."""
        from django.db.models import Count

        from ..models import RESULT_SCHEDULED, Attempt, Binding

        start = self.started_wall
        bound_at = list(Binding.objects.filter(namespace__in=namespaces, bound_at__gte=start)
                        .values_list("bound_at", flat=True))
        last = max(bound_at) if bound_at else None
        rows = list(Attempt.objects.filter(namespace__in=namespaces, started_at__gte=start, result=RESULT_SCHEDULED)
                    .values_list("e2e_ms", "queue_wait_ms", "attempt_ms", "binding_ms", "finished_at",
                                 "binding__bound_at"))
        sli = _ms(r[0] for r in rows)
        # The time from the attempt's end (its batch's cycle for this pod) to the binding's commit: the rest of
        # the batch's cycles, its writes, the hand-off to the bind task and the binding batch.
        after = [(r[5] - r[4]).total_seconds() * 1000.0 for r in rows if r[4] is not None and r[5] is not None]
        lags = [x * 1000.0 for x in self.lags]
        # A scheduling batch's attempts share its worker and start instant: how many pods each pop took.
        batches = list(Attempt.objects.filter(namespace__in=namespaces, started_at__gte=start)
                       .values("worker", "started_at").annotate(n=Count("id")).values_list("n", flat=True))
        return {
            "offered_pods_per_s": self.rate,
            "duration_s": self.duration,
            "fed_pods": self.fed,
            "feed_seconds": round(self.seconds, 3),
            "feed_pods_per_s": round(self.fed / self.seconds, 1) if self.seconds else None,
            "feed_ticks": len(self.lags),
            "feed_lag_p99_ms": _pct(lags, 99),
            "feed_lag_max_ms": round(max(lags), 3) if lags else None,
            "feed_tick_p99_ms": _pct([x * 1000.0 for x in self.tick_seconds], 99),
            "bound_pods": len(bound_at),
            # From the first pod's queueing to the last binding: the offered rate when the scheduler keeps up.
            "achieved_pods_per_s": round(len(bound_at) / (last - start).total_seconds(), 1) if last else None,
            "drain_seconds": round((last - start).total_seconds() - self.seconds, 3) if last else None,
            "sli_p50_ms": _pct(sli, 50),
            "sli_p99_ms": _pct(sli, 99),
            "sli_max_ms": round(max(sli), 3) if sli else None,
            "queue_wait_p50_ms": _pct(_ms(r[1] for r in rows), 50),
            "queue_wait_p99_ms": _pct(_ms(r[1] for r in rows), 99),
            "attempt_end_to_bound_p50_ms": _pct(after, 50),
            "attempt_end_to_bound_p99_ms": _pct(after, 99),
            "scheduling_batches": len(batches),
            "batch_pods_p50": _pct(batches, 50),
            "batch_pods_p99": _pct(batches, 99),
        }


# What the arrival run prints of run_e2e's figures (the rest describe the backlog run's shape).
E2E_KEYS = ("attempts", "attempt_p50_ms", "attempt_p99_ms", "binding_p50_ms", "binding_p99_ms", "worker_peak_rss_mb",
            "cpu_ms_per_pod_workers", "cpu_ms_per_pod_beat", "cpu_ms_per_pod_postgres", "overcommitted_nodes",
            "viewers", "frame_p50_ms", "frame_p99_ms", "frame_max_ms", "frame_bindings_seen",
            "frames_per_s_per_client", "bytes_per_s_per_client", "daphne_cpu_s", "daphne_cpu_cores",
            "viewer_clients_cpu_s")


def run_arrival(*, rate: float, duration: float = DEFAULT_DURATION, nodes: int = 5000, placed: int = 1000,
                workers: int = 2, seed: int = 0, viewers: int = 0, progress=None) -> dict:
    """SchedulingBasic's cluster (basic_loader), its measured pods fed at `rate` for `duration` end to end."""
    feed = ArrivalFeed(rate, duration)
    result = e2e.run_e2e(nodes=nodes, placed=placed, pods=feed.pods, workers=workers, seed=seed, progress=progress,
                         viewers=viewers, feed=feed, timeout=max(120.0, 5 * duration))
    return {"workload": "SchedulingBasic-arrival", "nodes": nodes, "placed": placed, "workers": workers,
            **result["feed"], **{k: result[k] for k in E2E_KEYS if k in result}}
