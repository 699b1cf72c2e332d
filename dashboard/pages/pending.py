"""The /pending/ page: what blocks pending pods, stacked over time (from the Attempt rows), and now."""

from __future__ import annotations

from datetime import timedelta

from django.http import HttpResponseBadRequest
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from ..pending import PENDING_BY_REASON, pending_by_reason, reasons_over_time

WINDOWS = {"15m": timedelta(minutes=15), "1h": timedelta(hours=1), "6h": timedelta(hours=6), "24h": timedelta(hours=24)}
BUCKETS = 30


@require_GET
def pending(request):
    window = request.GET.get("window", "1h")
    if window not in WINDOWS:
        return HttpResponseBadRequest(f"window: {window!r} is not one of {', '.join(WINDOWS)}")
    end = timezone.now()
    over_time = reasons_over_time(start=end - WINDOWS[window], end=end, buckets=BUCKETS)
    now = sorted(pending_by_reason().items(), key=lambda kv: (-kv[1], kv[0]))
    return render(request, "dashboard/pending.html", {
        "window": window, "windows": list(WINDOWS), "over_time": over_time, "now": now,
        "now_total": sum(n for _, n in now), "gauge": PENDING_BY_REASON,
    })
