"""Endpoints for machines: /metrics for Prometheus, /healthz /readyz /livez as Kubernetes components answer them.

No login, as kube-scheduler serves them: the health answers withhold failure reasons, and the
metrics carry no pod names.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpResponse
from django.views.decorators.http import require_GET

log = logging.getLogger(__name__)


# ---- /metrics ---------------------------------------------------------------------------

@login_not_required
@require_GET
def metrics(request):
    from prometheus_client.exposition import choose_encoder

    from .metrics import scrape_registry

    # Content negotiation as prometheus_client's own handler: text 0.0.4 unless the scraper asks for more.
    encoder, content_type = choose_encoder(request.META.get("HTTP_ACCEPT", ""))
    return HttpResponse(encoder(scrape_registry(settings.PROMETHEUS_MULTIPROC_DIR)), content_type=content_type)


# ---- health -----------------------------------------------------------------------------

def check_ping() -> None:
    """As healthz.PingHealthz: always passes."""


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def check_redis() -> None:
    import redis

    redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1).ping()


def _checks(path: str) -> list[tuple[str, object]]:
    if path != "readyz":
        return [("ping", check_ping)]
    checks = [("ping", check_ping), ("database", check_database)]
    if settings.REDIS_URL:
        checks.append(("redis", check_redis))
    return checks


def _plain(body: str, status: int = 200) -> HttpResponse:
    response = HttpResponse(body, status=status, content_type="text/plain; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _health(request, path: str) -> HttpResponse:
    """As healthz.handleRootHealth: "ok", "?verbose" lists the checks, a failure is always verbose and 500."""
    excluded = set(request.GET.getlist("exclude"))
    lines, failed, reasons = [], [], []
    for name, check in _checks(path):
        if name in excluded:
            excluded.discard(name)
            lines.append(f"[+]{name} excluded: ok\n")
            continue
        try:
            check()
        except Exception as exc:  # noqa: BLE001 - any failure fails the check
            # The reason stays out of the public answer and goes to the log, as upstream.
            lines.append(f"[-]{name} failed: reason withheld\n")
            reasons.append(f"[-]{name} failed: {exc}")
            failed.append(name)
        else:
            lines.append(f"[+]{name} ok\n")
    if excluded:
        quoted = ",".join(f'"{n}"' for n in sorted(excluded))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}\n")
    if failed:
        log.info("%s check failed: %s\n%s", ",".join(failed), path, "\n".join(reasons))
        # As http.Error: the text and a newline.
        return _plain("".join(lines) + f"{path} check failed\n", status=500)
    if "verbose" not in request.GET:
        return _plain("ok")
    return _plain("".join(lines) + f"{path} check passed\n")


def _single(request, path: str, name: str) -> HttpResponse:
    """As adaptCheckToHandler: /<path>/<check> runs one check; a failure is "internal server error: …".

    Upstream prints the error there because only a caller with explicit permission reaches the per-check
    paths (system:public-info-viewer grants anonymous callers the root paths alone). Here they need no
    login, so, as handleRootHealth does for its public answer, an anonymous or non-staff caller gets
    "reason withheld" and the reason (a database or Redis error names hosts and users) goes to the log;
    a logged-in staff user, the one with that permission here, sees it."""
    checks = dict(_checks(path))
    if name not in checks:
        return _plain("404 page not found\n", status=404)
    try:
        checks[name]()
    except Exception as exc:  # noqa: BLE001
        log.info("%s check failed: %s\n[-]%s failed: %s", name, path, name, exc)
        user = getattr(request, "user", None)
        reason = exc if user is not None and user.is_active and user.is_staff else "reason withheld"
        return _plain(f"internal server error: {reason}\n", status=500)
    return _plain("ok")


@login_not_required
@require_GET
def healthz(request, check: str | None = None):
    return _single(request, "healthz", check) if check else _health(request, "healthz")


@login_not_required
@require_GET
def livez(request, check: str | None = None):
    return _single(request, "livez", check) if check else _health(request, "livez")


@login_not_required
@require_GET
def readyz(request, check: str | None = None):
    return _single(request, "readyz", check) if check else _health(request, "readyz")
