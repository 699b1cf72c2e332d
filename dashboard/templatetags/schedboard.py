"""Small template helpers shared by the dashboard's pages."""

from django import template
from django.utils.html import format_html

register = template.Library()

# A result's badge: the word always, a symbol from the stylesheet, colour only as a third cue.
_BADGE = {"scheduled": "ok", "unschedulable": "fail", "error": "warn", "bind_failed": "warn", "Normal": "ok",
          "Warning": "warn"}


@register.simple_tag
def badge(value: str, label: str | None = None):
    return format_html('<span class="badge {}">{}</span>', _BADGE.get(value, "pending"), label or value)


@register.filter
def ms(value):
    """A latency in milliseconds, or an em dash when it was not measured."""
    if value is None:
        return "—"
    return f"{value:,.3f} ms" if value < 10 else f"{value:,.1f} ms"


@register.filter
def get(mapping, key):
    return mapping.get(key) if mapping else None
