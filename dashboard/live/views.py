"""The live pages: server-rendered shells; their JS module fills them from the page's websocket."""

from django.shortcuts import render
from django.views.decorators.http import require_GET

from .rates import RATE_WINDOW_SECONDS


@require_GET
def overview(request):
    return render(request, "dashboard/live/overview.html", {"rate_window_s": int(RATE_WINDOW_SECONDS)})


@require_GET
def queue(request):
    return render(request, "dashboard/live/queue.html")


@require_GET
def nodes(request):
    return render(request, "dashboard/live/nodes.html")
