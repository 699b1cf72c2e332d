"""Whom a session still logs in: a live socket asks again every SCHEDBOARD_LIVE_SESSION_CHECK seconds,
so logging out (or being deactivated) ends the sockets a page opened, not only its next page load."""

from __future__ import annotations

from importlib import import_module
from types import SimpleNamespace

from django.conf import settings
from django.contrib import auth


class _SessionCopy(dict):
    """The session's data as get_user reads it; what get_user would change in the stored session (flush it
    when the auth hash fails, cycle its key when a fallback secret verified it) it changes in this copy only:
    a socket cannot hand the browser a new cookie, and the user's next page load does the same anyway."""

    def flush(self) -> None:
        self.clear()

    def cycle_key(self) -> None:
        pass


def session_user_pk(session_key: str | None):
    """The pk of the user this session logs in now, or None: the decision Django's get_user makes for a
    page request (the session gone or expired, the user deleted or inactive, the password changed since
    the login), read from the session store afresh, not from the copy the socket loaded at connect."""
    if not session_key:
        return None
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user = auth.get_user(SimpleNamespace(session=_SessionCopy(store.load())))
    return user.pk if user.is_authenticated else None
