"""The pod page: its spec summary, its Events as `kubectl describe pod` prints them, its queue timeline, and
every attempt."""

from django.conf import settings
from django.http import Http404
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from scheduler.models import Attempt, Event, Pod

from ..audit import DETAIL_FIELDS
from ..describe import event_rows, pod_summary
from .preemption import preempted_by
from .pod_lifecycle import lifecycle
from .queue_timeline import queue_timeline
from .why import why_section

# A pod unschedulable for days retries every few minutes: the page lists the latest attempts and
# links the audit (filtered to this pod) for the rest.
MAX_ATTEMPTS = 100


@require_GET
def pod_detail(request, namespace: str, name: str):
    pod = Pod.objects.filter(namespace=namespace, name=name).first()
    attempts = list(Attempt.objects.defer(*DETAIL_FIELDS).filter(namespace=namespace, pod_name=name)
                    .select_related("binding").order_by("-started_at", "-id")[: MAX_ATTEMPTS + 1])
    life = lifecycle(namespace, name, pod)
    events = Event.objects.filter(involved_kind="Pod", involved_namespace=namespace, involved_name=name)
    # A deleted pod keeps its attempts, events and the row as it was (a preempted pod that was never
    # scheduled here has only its events): the page still answers for them.
    if pod is None and not attempts and life.deleted is None and not events.exists():
        raise Http404(f"pod {namespace}/{name} not found")
    return render(request, "dashboard/pod.html", {
        "namespace": namespace,
        "name": name,
        "pod": pod,
        "why": why_section(namespace, name) if pod and pod.scheduled_reason == "Unschedulable" else None,
        "summary": pod_summary(pod) if pod else [],
        "preempted_by": preempted_by(namespace, name),
        "events": event_rows(list(events), now=timezone.now()),
        "attempts": attempts[:MAX_ATTEMPTS],
        "more_attempts": len(attempts) > MAX_ATTEMPTS,
        "life": life,
        "timeline": queue_timeline(namespace, name, pod),
        "timeline_ttl": settings.SCHEDBOARD_QUEUE_TIMELINE_TTL,
        "owner_sections": [(o, event_rows(o.events, now=timezone.now())) for o in life.owners],
    })
