"""A plain, server-rendered Overview: the current counts and the latest decisions (the live
Overview replaces this view)."""

from django.db.models import Count, Q
from django.shortcuts import render
from django.views.decorators.http import require_GET

from scheduler.models import Binding, Event, Pod


@require_GET
def overview(request):
    pods = Pod.objects.aggregate(
        total=Count("id"),
        pending=Count("id", filter=Q(node_name="")),
        bound=Count("id", filter=~Q(node_name="")),
    )
    return render(request, "dashboard/overview.html", {
        "pods": pods,
        "bindings": Binding.objects.order_by("-bound_at", "-id")[:10],
        "failures": Event.objects.filter(reason="FailedScheduling").order_by("-last_timestamp", "-id")[:10],
    })
