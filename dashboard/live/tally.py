"""The one shape of live events: what a loop batch publishes, what the publisher merges before sending,
and what a websocket folds into a frame. Bounded whatever it absorbs: counts are summed, latencies go
into fixed histograms, and only the last few pods are kept by name."""

from __future__ import annotations

from collections import deque

from . import hist

LAST_ITEMS = 15  # pods listed by name per message and per frame (the rest are counted)
MAX_COMMITS = 64  # binding commit times per message/frame, for the bench's bind -> frame latency
COUNTS = ("attempts", "assumed", "failures", "bound", "bind_failed", "popped", "disrupted",
          "preemption_attempts", "preemption_victims")
LATENCIES = ("algorithm", "binding", "e2e")
MOVES = ("active", "backoff", "unschedulable")


class Tally:
    def __init__(self, items: int = LAST_ITEMS):
        self.counts = dict.fromkeys(COUNTS, 0)
        self.moves = dict.fromkeys(MOVES, 0)
        self.hists: dict[str, dict[int, int]] = {name: {} for name in LATENCIES}
        self.bindings: deque = deque(maxlen=items)  # [ns, name, node, e2e_ms, t]
        self.failed: deque = deque(maxlen=items)  # [ns, name, result, message, t]
        # Pods a controller took away (PodGC, taint eviction, drain): the charts mark them.
        self.disrupted: deque = deque(maxlen=items)  # [ns, name, node, reason, t]
        self.node_events: deque = deque(maxlen=items)  # [node, state, t]: NotReady, Unreachable, Ready, Deleted
        self.commits: list[list[float]] = []  # [commit time, pods bound]
        self.messages = 0

    @property
    def empty(self) -> bool:
        return self.messages == 0

    def add(self, msg: dict) -> None:
        self.messages += 1
        for k in COUNTS:
            self.counts[k] += int(msg.get(k, 0))
        for k, n in (msg.get("moves") or {}).items():
            if k in self.moves:
                self.moves[k] += int(n)
        for k, pairs in (msg.get("lat") or {}).items():
            if k in self.hists:
                hist.merge(self.hists[k], pairs)
        self.bindings.extend(msg.get("bindings") or ())
        self.failed.extend(msg.get("failed") or ())
        self.disrupted.extend(msg.get("disruptions") or ())
        self.node_events.extend(msg.get("node_events") or ())
        self.commits.extend(msg.get("commits") or ())
        if len(self.commits) > MAX_COMMITS:
            # Fold the oldest together, keeping the earliest time: the latency it implies only errs long.
            extra = len(self.commits) - MAX_COMMITS + 1
            head = self.commits[:extra]
            self.commits = [[min(t for t, _ in head), sum(n for _, n in head)]] + self.commits[extra:]

    def wire(self) -> dict:
        """As a message: plain lists and string keys (channels-redis packs with msgpack)."""
        return {
            **self.counts,
            "moves": dict(self.moves),
            "lat": {k: hist.pairs(h) for k, h in self.hists.items() if h},
            "bindings": list(self.bindings),
            "failed": list(self.failed),
            "disruptions": list(self.disrupted),
            "node_events": list(self.node_events),
            "commits": list(self.commits),
        }
