"""The live pages: server-rendered shells; their JS module fills them from the page's websocket."""

from django.shortcuts import render
from django.views.decorators.http import require_GET


@require_GET
def overview(request):
    return render(request, "dashboard/live/overview.html")


@require_GET
def queue(request):
    return render(request, "dashboard/live/queue.html")


@require_GET
def nodes(request):
    return render(request, "dashboard/live/nodes.html")
