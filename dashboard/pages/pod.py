"""The pod page: its spec summary, its Events as `kubectl describe pod` prints them, and every attempt."""

from django.http import Http404
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from scheduler.models import Attempt, Event, Pod

from ..describe import event_rows, pod_summary


@require_GET
def pod_detail(request, namespace: str, name: str):
    pod = Pod.objects.filter(namespace=namespace, name=name).first()
    attempts = list(Attempt.objects.filter(namespace=namespace, pod_name=name)
                    .select_related("binding").order_by("-started_at", "-id"))
    # A deleted pod keeps its attempts and events: the page still answers for them.
    if pod is None and not attempts:
        raise Http404(f"pod {namespace}/{name} not found")
    events = Event.objects.filter(involved_kind="Pod", involved_namespace=namespace, involved_name=name)
    return render(request, "dashboard/pod.html", {
        "namespace": namespace,
        "name": name,
        "pod": pod,
        "summary": pod_summary(pod) if pod else [],
        "events": event_rows(list(events), now=timezone.now()),
        "attempts": attempts,
    })
