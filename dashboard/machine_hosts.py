"""kubelet's probes and Prometheus's scrapes reach a pod by its IP: answered whatever their Host header.

They send `Host: <pod IP>:<port>`, which no ALLOWED_HOSTS list names (pod IPs change with every pod),
and Django refuses an unlisted Host with 400 before any view runs. /metrics and the health checks never
build anything from the Host, so for them alone an unlisted Host is let through, as an anonymous caller;
every other page still refuses it. With a listed Host they go through the whole middleware stack as before.
"""

from __future__ import annotations

from django.core.exceptions import DisallowedHost
from django.urls import Resolver404, resolve

MACHINE_PATHS = frozenset({"metrics", "healthz", "livez", "readyz"})


class MachineEndpointsAnyHostMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path_info.split("/", 2)[1] in MACHINE_PATHS:
            try:
                request.get_host()
            except DisallowedHost:
                try:
                    match = resolve(request.path_info)
                except Resolver404:
                    match = None  # not one of them after all: refused below like any other unlisted Host
                # Only a view open to anyone (@login_not_required): nothing behind a login skips the stack.
                if match is not None and getattr(match.func, "login_required", True) is False:
                    return match.func(request, *match.args, **match.kwargs)
        return self.get_response(request)
