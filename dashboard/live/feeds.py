"""What each live page receives: a frame from the coalesced events and the shared state.

Every frame is bounded: the overview lists the last few pods by name and counts the rest, the
queue lists the head of each sub-queue with exact counts, and the nodes page gets changed rows
only (at most MAX_NODE_ROWS a frame; the rest follow in the next frames). A full frame replaces
what the page shows; the nodes page's full frame is the one frame whose size grows with the cluster.
"""

from __future__ import annotations

import json
import time

from channels.db import database_sync_to_async

from . import hist, state
from .tally import LATENCIES, Tally

MAX_NODE_ROWS = 1000


class OverviewFeed:
    view = "overview"

    async def frame(self, full: bool, tally: Tally, dt: float) -> dict | None:
        c = tally.counts
        frame = {
            "type": "frame", "view": self.view, "full": full, "t": time.time(), "dt": round(dt, 3),
            "rates": {"scheduled": c["bound"] / dt, "attempts": c["attempts"] / dt, "failures": c["failures"] / dt},
            "counts": c,
            "lat": {k: [hist.quantile(tally.hists[k], 0.5), hist.quantile(tally.hists[k], 0.99)] for k in LATENCIES},
            "gauges": await state.shared("gauges", 0.2, state.gauges),
            "bindings": list(tally.bindings), "failed": list(tally.failed),
            "commits": tally.commits,  # [commit time, pods]: lets a client measure bind -> frame
        }
        if full:
            # What the page shows after a full frame, whole: the last rows in the database merged with this
            # interval's events (some already committed and read, some not yet), each pod listed once.
            recent = await state.shared("recent", 0.2, state.recent)
            frame["recent"] = {"bindings": merge_recent(recent["bindings"], tally.bindings, lambda b: (b[0], b[1])),
                               "failed": merge_recent(recent["failed"], tally.failed,
                                                      lambda f: (f[0], f[1], round(f[4], 3), f[3][:300]))}
        return frame


def merge_recent(rows, events, key) -> list:
    """rows then events (each oldest first), one per key (the later wins), oldest first, the last state.RECENT."""
    merged = {}
    for row in (*rows, *events):
        merged.pop(key(row), None)
        merged[key(row)] = row
    return sorted(merged.values(), key=lambda r: r[4])[-state.RECENT:]


class QueueFeed:
    """The head of each sub-queue, read from the queue itself: exact whenever it is sent."""

    view = "queue"

    def __init__(self):
        self._last = None

    async def frame(self, full: bool, tally: Tally, dt: float) -> dict | None:
        snap = await state.shared("queue", 0.2, state.queue_state)
        body = json.dumps([snap["lengths"], snap["lists"]])
        if not full and body == self._last:
            return None
        self._last = body
        return {"type": "frame", "view": self.view, "full": True, "t": time.time(), **snap}


class NodesFeed:
    """Node rows: static once (and again when a node's spec changes), then changed usage rows only."""

    view = "nodes"

    def __init__(self):
        self._key = None
        self._sent: dict[str, list] = {}

    async def frame(self, full: bool, tally: Tally, dt: float) -> dict | None:
        snap = await state.shared("node_usage", 0.5, state.node_usage)
        usage = snap["usage"]
        frame = {"type": "frame", "view": self.view, "t": time.time(), "full": False}
        if full or snap["key"] != self._key:
            self._key = snap["key"]
            self._sent = dict(usage)
            # Read fresh (not shared): it must match the usage key just seen, and it is rare.
            nodes = await database_sync_to_async(state.node_static)()
            frame.update(full=True, nodes=nodes, usage=[usage.get(row[0], [0, 0, 0, 0]) for row in nodes])
            return frame
        changed = [[name, *row] for name, row in usage.items() if self._sent.get(name) != row]
        if not changed:
            return None
        changed = changed[:MAX_NODE_ROWS]  # the rest differ still and go in the next frames
        for name, *row in changed:
            self._sent[name] = row
        frame["changed"] = changed
        return frame


FEEDS = {f.view: f for f in (OverviewFeed, QueueFeed, NodesFeed)}
