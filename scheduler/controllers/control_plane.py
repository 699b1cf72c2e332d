"""The simulated cluster's controllers ticked at their periods on a given clock: what beat does in the full
stack, done in-process by `manage.py run` (wall clock) and by a scenario (its own clock, which may run
faster than the wall's so a 300 s toleration passes in seconds). Each controller measures its times on
the clock it is given: tolerations, PodGC's quarantine, taint timeAdded."""

from __future__ import annotations

from datetime import datetime, timezone as dt_timezone
from typing import Callable

from django.conf import settings

from . import node_lifecycle, podgc, taint_eviction, workloads


def wall_now() -> datetime:
    return datetime.now(dt_timezone.utc)


class ControlPlane:
    def __init__(self, now: Callable[[], datetime] = wall_now):
        self.now = now
        self.next: dict[str, float] = {}

    def _due(self, name: str, period: float, t: float) -> bool:
        if t < self.next.get(name, float("-inf")):
            return False
        self.next[name] = t + period
        return True

    def tick(self) -> dict:
        """Each controller whose period has passed on this clock, once: what they did (only non-empty results)."""
        now = self.now()
        t = now.timestamp()
        out = {}
        if self._due("node-lifecycle", settings.SCHEDBOARD_NODE_MONITOR_PERIOD, t):
            tainted = node_lifecycle.monitor(now=now)
            evictions = taint_eviction.run(now=now, record_at=wall_now())
            if tainted or evictions["evicted"] or evictions["cancelled"]:
                out["node-lifecycle"] = {"tainted": tainted, "evicted": evictions["evicted"],
                                         "cancelled": evictions["cancelled"]}
        if self._due("podgc", settings.SCHEDBOARD_PODGC_PERIOD, t):
            got = podgc.gc(now=t)
            if got["orphaned"]:
                out["podgc"] = got
        if self._due("workloads", settings.SCHEDBOARD_WORKLOAD_SYNC_PERIOD, t):
            got = workloads.sync_all(wait=0)  # another process's pass is doing it: do not stall this clock
            if got:
                out["workloads"] = got
        return out
