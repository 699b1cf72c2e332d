"""One readiness wait for every test that polls: a wait, never a timing assertion."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(predicate: Callable[[], object], what: str, timeout: float = 120.0, interval: float = 0.2, *,
             detail: Callable[[], str] | None = None):
    """Poll until predicate() is truthy and return its value; past `timeout`, fail naming `what` (and what
    `detail()` says of the state then)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            extra = f"\n{detail()}" if detail is not None else ""
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}{extra}")
        time.sleep(interval)
