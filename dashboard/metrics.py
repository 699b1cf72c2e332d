"""The /metrics view's registry: what every process counted (prometheus_client's multiprocess files), and the
gauges that are current state, read at scrape time from the database and the queue."""

from __future__ import annotations

import os

from django.db.models import Count, Q
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from scheduler.models import Node, Pod
from scheduler.queue.queues import get_queue
from scheduler.state.gated import gated_count
from scheduler.versions.profiles import scheduler_names
from scheduler.telemetry.metrics import CACHE_SIZE_HELP, PENDING_PODS_HELP

from .pending import PENDING_BY_REASON, PENDING_BY_REASON_HELP, pending_by_reason


class StateCollector:
    """Gauges that are current state, read at scrape time: pending pods per queue, cache size."""

    def collect(self):
        pending = GaugeMetricFamily("scheduler_pending_pods", PENDING_PODS_HELP, labels=["queue"])
        lengths = get_queue().lengths()
        for queue in ("active", "backoff", "unschedulable"):
            pending.add_metric([queue], lengths.get(queue, 0))
        pending.add_metric(["gated"], gated_count(scheduler_names()))  # held by SchedulingGates: kept in the database, not the queue
        yield pending

        # As the cache's updateMetrics: nodes, pods (bound or assumed) and assumed pods.
        cache = GaugeMetricFamily("scheduler_scheduler_cache_size", CACHE_SIZE_HELP, labels=["type"])
        counts = Pod.objects.aggregate(
            pods=Count("id", filter=~Q(node_name="") | ~Q(assumed_node="")),
            assumed=Count("id", filter=Q(node_name="") & ~Q(assumed_node="")))
        cache.add_metric(["assumed_pods"], counts["assumed"])
        cache.add_metric(["nodes"], Node.objects.count())
        cache.add_metric(["pods"], counts["pods"])
        yield cache

        by_reason = GaugeMetricFamily(PENDING_BY_REASON, PENDING_BY_REASON_HELP, labels=["reason"])
        for reason, count in sorted(pending_by_reason().items()):
            by_reason.add_metric([reason], count)
        yield by_reason


def scrape_registry(path: str | None = None) -> CollectorRegistry:
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=path or os.environ["PROMETHEUS_MULTIPROC_DIR"])
    registry.register(StateCollector())
    return registry
