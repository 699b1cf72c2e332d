"""The cyclic garbage collector in a worker process.

A worker keeps a large heap for good (the node snapshot and its pod index, the parsed pod specs) and
makes many short-lived objects per pod. With Python's default thresholds the collector walks the
long-lived heap again every few thousand pods: a full collection took ~150 ms at 5,000 nodes, and the
collector a fifth of the loop's CPU in all (SchedulingBasic, measured in one process: 256 of 1,137
us per pod). So a worker process raises the young generation's threshold (most of its objects die by
reference count long before 10,000 allocations) and moves what survives into the permanent generation
(gc.freeze) after its first batch and at most once a minute after that, each time after a full
collection, so nothing the collector could free is frozen for more than a minute. Frozen objects are
still freed when nothing refers to them; only cycles among them wait for the next refreeze.
"""

from __future__ import annotations

import gc
import time

YOUNG_THRESHOLD = 10_000
REFREEZE_SECONDS = 60.0

_installed = False
_frozen_at: float | None = None
_defaults = gc.get_threshold()


def install() -> None:
    """Use the worker's thresholds in this process (a Celery worker process, at start)."""
    global _installed
    gc.set_threshold(YOUNG_THRESHOLD, 20, 100)
    _installed = True


def start_up_done() -> None:
    """A long-running process at the end of its start-up (`kube run`, before its threads start): what it
    imported and built lives as long as it does, so it is frozen as it is (no collection: what the imports
    left is code, settings and registries, not garbage) and the worker's thresholds are used from here on;
    the collector is enabled again if the start-up ran without it (manage.py, for `kube run`).

    In a replica the collector walked that heap twice during its start-up and twice more while storing a
    backlog's pod list (~0.2 s of a ~3 s start on 1,000 pods), each time finding nothing to free."""
    gc.freeze()
    install()
    gc.enable()


def after_batch(clock=time.monotonic) -> bool:
    """After a scheduling batch: collect everything and freeze the survivors when the last freeze is a
    minute old (or there was none). True when it did. Nothing unless install() ran in this process."""
    global _frozen_at
    if not _installed:
        return False
    now = clock()
    if _frozen_at is not None and now - _frozen_at < REFREEZE_SECONDS:
        return False
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _frozen_at = clock()
    return True


def uninstall() -> None:
    """Back to the interpreter's defaults, nothing frozen (tests)."""
    global _installed, _frozen_at
    gc.unfreeze()
    gc.set_threshold(*_defaults)
    _installed, _frozen_at = False, None
