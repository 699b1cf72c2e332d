"""What blocks pending pods, cluster-wide, read from the Attempt rows: each unschedulable attempt's main
reason (the reason that rejected the most nodes), per pod now (the /metrics gauge) and over time (/pending/)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q

from scheduler.models import RESULT_UNSCHEDULABLE, Attempt, Pod
from scheduler.state.rewind import latest_attempts

# Our own gauge: kube-scheduler has no per-reason count of pending pods (its scheduler_pending_pods is per queue).
PENDING_BY_REASON = "schedboard_pending_pods_by_reason"
PENDING_BY_REASON_HELP = ("Pending pods whose latest scheduling attempt was unschedulable, by the reason that rejected "
                          "the most nodes in that attempt (schedboard's own metric; kube-scheduler has none)")
NO_REASON = "(none recorded)"  # an unschedulable attempt with no per-node reason (e.g. a PreFilter rejection)


def main_reason(reasons: dict[str, int] | None, message: str = "") -> str:
    """The reason that rejected the most nodes (ties by name); a PreFilter rejection's message otherwise."""
    if reasons:
        return min(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    if message and ": " in message:
        return message.split(": ", 1)[1].rstrip(".").split(". ")[0] or NO_REASON
    return NO_REASON


def pending_by_reason() -> dict[str, int]:
    """Pods pending now (not bound, not assumed, PodScheduled=False Unschedulable), by their latest
    unschedulable attempt's main reason."""
    pending = set(Pod.objects.filter(node_name="", assumed_node="", scheduled_reason="Unschedulable")
                  .values_list("namespace", "name"))
    latest = latest_attempts(Attempt.objects.filter(result=RESULT_UNSCHEDULABLE).only("namespace", "pod_name", "reasons", "message"),
                             pending)
    out: dict[str, int] = {}
    for attempt in latest.values():
        reason = main_reason(attempt.reasons, attempt.message)
        out[reason] = out.get(reason, 0) + 1
    return out


def reasons_over_time(*, start: datetime, end: datetime, buckets: int) -> dict:
    """Per time bucket, the pods with an unschedulable attempt in it, by that bucket's latest attempt's
    main reason: {"times": [bucket start, epoch seconds], "series": {reason: [pods per bucket]}}, the
    reasons ordered by their total, largest first."""
    width = (end - start) / buckets
    latest: list[dict[str, tuple[datetime, str]]] = [{} for _ in range(buckets)]
    rows = (Attempt.objects.filter(Q(result=RESULT_UNSCHEDULABLE), started_at__gte=start, started_at__lt=end)
            .values_list("started_at", "namespace", "pod_name", "reasons", "message").iterator(chunk_size=2000))
    for started, namespace, name, reasons, message in rows:
        b = min(int((started - start) / width), buckets - 1)
        key = f"{namespace}/{name}"
        seen = latest[b].get(key)
        if seen is None or seen[0] <= started:
            latest[b][key] = (started, main_reason(reasons, message))
    totals: dict[str, int] = {}
    series: dict[str, list[int]] = {}
    for b, pods in enumerate(latest):
        for _, reason in pods.values():
            series.setdefault(reason, [0] * buckets)[b] += 1
            totals[reason] = totals.get(reason, 0) + 1
    order = sorted(series, key=lambda r: (-totals[r], r))
    return {"times": [(start + width * b).timestamp() for b in range(buckets)],
            "series": {r: series[r] for r in order}, "totals": {r: totals[r] for r in order},
            "bucket_seconds": width / timedelta(seconds=1)}
