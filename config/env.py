"""Strict parsing of settings from the environment: a bad value stops start-up naming the variable."""

import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None) -> str:
    value = os.environ.get(name)
    if value is None:
        if default is None:
            raise ImproperlyConfigured(f"{name}: required, but not set in the environment")
        return default
    return value


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}: expected true or false, got {value!r}")


def env_hosts(name: str, default: str, *, debug: bool) -> list[str]:
    """Host names, comma-separated, for ALLOWED_HOSTS. "*" (any host) only in debug mode: it lets any
    Host header through to the links Django builds from it, and any site's page open a websocket (the
    Origin check accepts what ALLOWED_HOSTS accepts)."""
    hosts = [h.strip() for h in env_str(name, default).split(",") if h.strip()]
    for host in hosts:
        if host == "*" and not debug:
            raise ImproperlyConfigured(
                f"{name}: '*' accepts any Host header and any site's websocket; list the names the dashboard "
                f"is reached by (e.g. schedboard.example.com, .example.com for its subdomains)")
        if host != "*" and "*" in host:
            # Django matches only "*" and a leading dot; anything else with a star is taken literally.
            hint = f"write {host[1:]!r} for the domain and its subdomains" if host.startswith("*.") else \
                "'*' stands alone or not at all"
            raise ImproperlyConfigured(f"{name}: {host!r} matches nothing; {hint}")
    return hosts


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        parsed = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}: expected an integer, got {value!r}") from None
    if minimum is not None and parsed < minimum:
        raise ImproperlyConfigured(f"{name}: must be at least {minimum}, got {parsed}")
    if maximum is not None and parsed > maximum:
        raise ImproperlyConfigured(f"{name}: must be at most {maximum}, got {parsed}")
    return parsed


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value not in choices:
        raise ImproperlyConfigured(f"{name}: expected one of {', '.join(choices)}, got {value!r}")
    return value


_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def env_duration(name: str, default: float) -> float:
    """Seconds, from a Go-style duration as kube-scheduler's flags take it ("15s", "500ms", "1m30s") or plain seconds."""
    import re

    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise ImproperlyConfigured(f"{name}: expected a duration such as 15s or 500ms, got {value!r}") from None
        seconds = sum(float(n) * _DURATION_UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise ImproperlyConfigured(f"{name}: must be greater than zero, got {value!r}")
    return seconds
