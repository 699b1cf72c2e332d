"""The dashboard's navigation, in one place, with the current section marked for every template."""

from __future__ import annotations

# (label, path, section): a page belongs to a section when its path starts with the section's prefix.
NAV = [
    ("Overview", "/", "/"),
    ("Queue", "/queue/", "/queue/"),
    ("Nodes", "/nodes/", "/nodes/"),
    ("Audit", "/bindings/", "/bindings/"),
    ("Pending", "/pending/", "/pending/"),
    ("What-if", "/whatif/", "/whatif/"),
    ("Replays", "/replays/", "/replays/"),
    ("Profiles", "/profiles/", "/profiles/"),
    ("Admin", "/admin/", "/admin/"),
    ("Metrics", "/metrics", "/metrics"),
]

# Pages reached from the audit (a pod, an attempt) count as the audit's section.
_ALIASES = {"/pods/": "/bindings/", "/attempts/": "/bindings/"}


def current_section(path: str) -> str:
    for prefix, section in _ALIASES.items():
        if path.startswith(prefix):
            return section
    best = "/" if path == "/" else ""
    for _, _, prefix in NAV:
        if prefix != "/" and path.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return best


def can_open_admin(user) -> bool:
    """Django's admin lets in active staff users only; others are not shown links into it."""
    return bool(user and user.is_active and user.is_staff)


def navigation(request):
    section = current_section(request.path)
    staff = can_open_admin(getattr(request, "user", None))
    return {"nav_items": [{"label": label, "href": href, "current": prefix == section}
                          for label, href, prefix in NAV if staff or not href.startswith("/admin/")]}
