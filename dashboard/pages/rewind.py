"""/nodes/?at=T and /queue/?at=T: the node cache and the three sub-queues (and the gated pods) as they were at a past instant
(scheduler.state.rewind rebuilds them from the recorded history), with the attempts and bindings around it.
Without `at` those URLs are the live pages (dashboard/live/views.py)."""

from __future__ import annotations

from datetime import datetime, timezone as dt_timezone

from django.http import HttpResponseBadRequest
from django.shortcuts import render
from django.utils import timezone

from scheduler.replay.natural import natural_key
from scheduler.state.rewind import ACTIVE, BACKOFF, UNSCHEDULABLE, rewind
from scheduler.versions.profiles import scheduler_names

QUEUE_TITLES = ((ACTIVE, "Active", "pods in priority order, next first"),
                (BACKOFF, "Backoff", "pods waiting out their backoff"),
                (UNSCHEDULABLE, "Unschedulable", "pods waiting for a cluster event, or 5 minutes"))


class BadInstant(ValueError):
    pass


def parse_at(text: str) -> datetime:
    """`at` as the time control sends it (datetime-local: no zone, read as UTC) or any ISO 8601 instant."""
    try:
        at = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadInstant(f"at: {text!r} is not a date and time (ISO 8601, e.g. 2026-12-01T10:00:00Z)") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=dt_timezone.utc)
    if at > timezone.now():
        raise BadInstant(f"at: {text!r} is in the future; the rewind shows the past (the live page shows now)")
    return at


def _rewound(request, template: str):
    try:
        at = parse_at(request.GET["at"])
    except BadInstant as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    r = rewind(at=at, scheduler_names=set(scheduler_names()))
    return render(request, template, {
        "r": r, "at_value": at.astimezone(dt_timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"),
        "nodes": sorted(r.nodes, key=lambda n: natural_key(n.name)),  # node-2 before node-10
        "queues": [(q, title, note, r.queues[q]) for q, title, note in QUEUE_TITLES],
        "before_retention": r.oldest_attempt is None or at < r.oldest_attempt,
    })


def nodes_at(request):
    return _rewound(request, "dashboard/rewind_nodes.html")


def queue_at(request):
    return _rewound(request, "dashboard/rewind_queue.html")
