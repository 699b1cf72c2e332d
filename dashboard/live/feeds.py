"""What each live page receives: a frame from the coalesced events and the shared state.

Every frame is bounded: the overview lists the last few pods by name and counts the rest, the
queue lists the head of each sub-queue with exact counts, and the nodes page gets static rows in chunks when the node set
changes and changed usage rows otherwise (at most NODE_FRAME_BYTES of rows a frame; the rest follow
in the next frames).
"""

from __future__ import annotations

import json
import time
from collections import deque

from . import hist, state
from .rates import RATE_WINDOW_SECONDS, SlidingRates
from .tally import LATENCIES, Tally

MAX_NODE_ROWS = 1000  # usage rows a frame at most
NODE_FRAME_BYTES = 48 * 1024  # a nodes frame stops adding rows past this many bytes (it may end one row over)
# While a node set's static rows are still going out: bigger frames, since frames go at most 4 a second. At 48 KB
# the 50,000 nodes of `bench --nodes-page` took 78 frames, 24.3 s, to arrive whole.
NODE_STATIC_FRAME_BYTES = 256 * 1024


class OverviewFeed:
    view = "overview"

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.rates = SlidingRates(("bound", "attempts", "failures", "preemption_attempts", "preemption_victims"))

    async def frame(self, full: bool, tally: Tally, dt: float) -> dict | None:
        c = tally.counts
        rates = self.rates.add(self.clock(), dt, c)
        frame = {
            "type": "frame", "view": self.view, "full": full, "t": time.time(), "dt": round(dt, 3),
            # Over the last RATE_WINDOW_SECONDS (the page says so), not this frame alone.
            "rates": {"scheduled": rates["bound"], "attempts": rates["attempts"], "failures": rates["failures"],
                      # scheduler_preemption_attempts_total and the victims they chose, as rates too.
                      "preemption_attempts": rates["preemption_attempts"], "preemption_victims": rates["preemption_victims"]},
            "rate_window_s": RATE_WINDOW_SECONDS,
            "counts": c,
            "lat": {k: [hist.quantile(tally.hists[k], 0.5), hist.quantile(tally.hists[k], 0.99)] for k in LATENCIES},
            "gauges": await state.latest("gauges", 0.2, state.gauges),
            "bindings": list(tally.bindings), "failed": list(tally.failed),
            # The charts' markers: pods a controller took away, nodes that changed state.
            "disruptions": list(tally.disrupted), "node_events": list(tally.node_events),
            "commits": tally.commits,  # [commit time, pods]: lets a client measure bind -> frame
        }
        if full:
            # What the page shows after a full frame, whole: the last rows in the database merged with this
            # interval's events (some already committed and read, some not yet), each pod listed once.
            recent = await state.shared("recent", 0.2, state.recent)
            frame["recent"] = {"bindings": merge_recent(recent["bindings"], tally.bindings, lambda b: (b[0], b[1])),
                               "failed": merge_recent(recent["failed"], tally.failed,
                                                      lambda f: (f[0], f[1], round(f[4], 3), f[3][:300])),
                               # The charts' marks as recorded, so a page opened after them still shows them.
                               "marks": recent["marks"]}
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
    """Node rows in frames of at most about NODE_FRAME_BYTES, whatever the cluster's size.

    When the node generation changes (and on connecting) a frame says `start: N`, and the N static rows
    (each with its usage) follow in `nodes`, in chunks over this and the next frames; the page drops the
    nodes not in the set once N have arrived. Otherwise `changed` carries changed usage rows only; a full
    (resync) frame forgets what was sent, so every usage row goes again, in chunks too."""

    view = "nodes"
    shared = False  # what a frame carries depends on what this socket has been sent: a View per socket

    def __init__(self):
        self._key = None
        self._sent: dict[str, list] = {}
        self._static: deque = deque()  # static rows of this generation not sent yet
        self._pending: set[str] = set()

    @property
    def more(self) -> bool:
        """Rows are waiting: the next frame is worth sending as soon as one may go out."""
        return bool(self._static)

    async def frame(self, full: bool, tally: Tally, dt: float) -> dict | None:
        snap = await state.shared("node_usage", 0.5, state.node_usage)
        usage = snap["usage"]
        frame = {"type": "frame", "view": self.view, "t": time.time(), "full": False}
        if snap["key"] != self._key:
            self._key, rows = await state.shared_node_static(snap["key"])
            self._static = deque(rows)
            self._pending = {row[0] for row in rows}
            self._sent = {}
            frame.update(full=True, start=len(rows))
        elif full:
            self._sent = {}
        budget = NODE_STATIC_FRAME_BYTES if self._static else NODE_FRAME_BYTES
        nodes = []
        while self._static and budget > 0:
            row = self._static.popleft()
            u = usage.get(row[0], [0, 0, 0, 0])
            nodes.append([*row, u])
            self._sent[row[0]] = u
            self._pending.discard(row[0])
            budget -= len(json.dumps(nodes[-1]))
        changed = []
        for name, row in usage.items():
            if budget <= 0 or len(changed) >= MAX_NODE_ROWS:
                break  # the rest differ still and go in the next frames
            if name not in self._pending and self._sent.get(name) != row:
                changed.append([name, *row])
                self._sent[name] = row
                budget -= len(json.dumps(changed[-1]))
        if nodes:
            frame["nodes"] = nodes
        if changed:
            frame["changed"] = changed
        if not (nodes or changed or "start" in frame):
            return None
        return frame


FEEDS = {f.view: f for f in (OverviewFeed, QueueFeed, NodesFeed)}
