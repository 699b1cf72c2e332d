"""/metrics of its own for a process that serves no pages: a Celery worker, celery beat, `manage.py kube run`.

With SCHEDBOARD_METRICS_PORT set, the process serves, on that port, the counters and histograms of every
process writing into its PROMETHEUS_MULTIPROC_DIR (a worker's pool children too). In Kubernetes each pod
has its own directory, so the web's /metrics never sees a worker's or the controller's: Prometheus scrapes
each pod on this port instead. The scrape-time state (pending pods, cache size) is left to the web's
/metrics: it is the same from every process, and one series of it is enough.
"""

from __future__ import annotations

import logging

from django.conf import settings

log = logging.getLogger(__name__)

_served: tuple[str, int] | None = None  # (address, port) once this process serves


def serve_metrics(component: str) -> tuple[str, int] | None:
    """Start the endpoint in a daemon thread when a port is set; once per process. Returns where it listens."""
    global _served
    port = settings.SCHEDBOARD_METRICS_PORT
    if not port or _served is not None:
        return _served
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=settings.PROMETHEUS_MULTIPROC_DIR)
    address = settings.SCHEDBOARD_METRICS_BIND_ADDRESS
    try:
        start_http_server(port, addr=address, registry=registry)
    except OSError as exc:
        # Loud, but the process goes on: scheduling matters more than its metrics, and the target shows as down.
        log.error("%s: cannot serve /metrics on %s:%s (SCHEDBOARD_METRICS_PORT): %s", component, address, port, exc)
        return None
    _served = (address, port)
    log.info("%s: serving /metrics on %s:%s", component, address, port)
    return _served
