"""The live pages: server-rendered shells; their JS module fills them from the page's websocket."""

from django.shortcuts import render
from django.views.decorators.http import require_GET

from ..pages import rewind
from .rates import RATE_WINDOW_SECONDS


@require_GET
def overview(request):
    return render(request, "dashboard/live/overview.html", {"rate_window_s": int(RATE_WINDOW_SECONDS)})


@require_GET
def queue(request):
    if request.GET.get("at"):  # the time control: the queue at a past instant
        return rewind.queue_at(request)
    return render(request, "dashboard/live/queue.html")


@require_GET
def nodes(request):
    if request.GET.get("at"):  # the time control: the node cache at a past instant
        return rewind.nodes_at(request)
    # ?group=KEY groups the heat map by that node label (the topology keys are offered; any key is taken).
    from ..pages.domain import MAX_KEY, TOPOLOGY_KEYS

    group = request.GET.get("group", "").strip()[:MAX_KEY]
    keys = TOPOLOGY_KEYS if not group or group in TOPOLOGY_KEYS else (*TOPOLOGY_KEYS, group)
    return render(request, "dashboard/live/nodes.html", {"group": group, "keys": keys})
