"""Natural order for names people read (node-2 before node-10), as `kubectl get` users expect of a
listing that is not sorted by the API server. For display only: the replayer keeps the worker's order
(by code point, as the snapshot is), which the tie-breaks depend on."""

from __future__ import annotations

import re

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple:
    """"node-10" -> ("node-", 10, ""): digit runs compare as numbers, the rest as text; ties (node-02 and
    node-2) fall back to the name itself so the order is total."""
    parts = _DIGITS.split(name)
    return tuple((p, 0) if i % 2 == 0 else ("", int(p)) for i, p in enumerate(parts)) + ((name, 0),)


def natural_sorted(names) -> list:
    return sorted(names, key=natural_key)
