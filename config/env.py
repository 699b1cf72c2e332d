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
_DAY = 86400.0


def _parse_duration(name: str, value: str, units: dict[str, float], example: str) -> float:
    import re

    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        parts = re.findall(r"(\d+(?:\.\d+)?)(" + "|".join(sorted(units, key=len, reverse=True)) + ")", text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise ImproperlyConfigured(f"{name}: expected a duration such as {example}, got {value!r}") from None
        seconds = sum(float(n) * units[u] for n, u in parts)
    if seconds != seconds or seconds in (float("inf"), float("-inf")):  # "nan", "inf" parse as floats
        raise ImproperlyConfigured(f"{name}: expected a duration such as {example}, got {value!r}")
    return seconds


def env_duration(name: str, default: float) -> float:
    """Seconds, from a Go-style duration as kube-scheduler's flags take it ("15s", "500ms", "1m30s") or plain seconds."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    seconds = _parse_duration(name, value, _DURATION_UNITS, "15s or 500ms")
    if seconds <= 0:
        raise ImproperlyConfigured(f"{name}: must be greater than zero, got {value!r}")
    return seconds


FOREVER = None  # env_retention's "keep forever"


def env_retention(name: str, default: float | None, *, minimum: float = 0.0) -> float | None:
    """How long rows are kept, in seconds: a duration ("7d", "1h", "90m", "1h30m", plain seconds), or
    "0" / "forever" to keep them forever (None). Days are accepted beside Go's units: retention is
    counted in days more often than in hours."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    if value.strip().lower() == "forever":
        return FOREVER
    seconds = _parse_duration(name, value, {**_DURATION_UNITS, "d": _DAY}, "7d, 1h or forever")
    if seconds == 0:
        return FOREVER
    if seconds < 0:
        raise ImproperlyConfigured(f"{name}: must not be negative, got {value!r}")
    if seconds < minimum:
        raise ImproperlyConfigured(f"{name}: must be at least {_show_seconds(minimum)} (or forever), got {value!r}")
    return seconds


def _show_seconds(seconds: float) -> str:
    """As Go prints a duration, without zero parts: 6m, 6m1s, 1h30m, 0.5s."""
    whole = int(seconds)
    if whole != seconds or whole < 60:
        return f"{seconds:g}s"
    h, rest = divmod(whole, 3600)
    m, s = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v)


def env_positive_float(name: str, default: float) -> float:
    """A finite number above zero (a rate): "0", "-5", "nan" and "inf" are refused, naming the variable."""
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        parsed = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}: expected a number, got {value!r}") from None
    if not (0.0 < parsed < float("inf")):
        raise ImproperlyConfigured(f"{name}: must be a finite number above 0, got {value!r}")
    return parsed


def env_feature_gates(name: str, known: dict[str, bool]) -> dict[str, bool]:
    """Feature gates as kube-scheduler's --feature-gates takes them ("Name=true,Other=false"), over `known`
    (each gate and its default). An unknown gate or a value that is not a boolean stops start-up."""
    gates = dict(known)
    value = os.environ.get(name, "")
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        gate, sep, flag = item.partition("=")
        gate, flag = gate.strip(), flag.strip().lower()
        if not sep:
            raise ImproperlyConfigured(f"{name}: missing bool value for {gate} (expected {gate}=true or {gate}=false)")
        if gate not in known:
            raise ImproperlyConfigured(f"{name}: unrecognized feature gate: {gate} (known: {', '.join(sorted(known))})")
        if flag in ("true", "1"):
            gates[gate] = True
        elif flag in ("false", "0"):
            gates[gate] = False
        else:
            raise ImproperlyConfigured(f"{name}: invalid value of {gate}={flag!r}: expected true or false")
    return gates
