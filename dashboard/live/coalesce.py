"""One viewer's coalescer: folds every live message into a Tally and says when the next frame is due
(at most `fps` a second) and whether it must be a full snapshot (first frame, a gap in a source's
sequence numbers, or a periodic resync). The clock is injected so the bounds are tested without sleeping."""

from __future__ import annotations

import time

from .tally import Tally

IDLE_SECONDS = 1.0  # with nothing new, a frame still goes out this often (gauges, queue moves by the reconciler)
RESYNC_SECONDS = 30.0  # a snapshot at least this often, whatever happened


class Coalescer:
    def __init__(self, fps: int = 4, clock=time.monotonic, idle: float = IDLE_SECONDS, resync: float = RESYNC_SECONDS):
        self.interval = 1.0 / fps
        self.clock = clock
        self.idle = idle
        self.resync = resync
        self.tally = Tally()
        self.needs_snapshot = True  # the first frame after connecting is a snapshot
        self.gaps = 0
        self._seqs: dict[str, int] = {}
        self._last_frame = self._last_snapshot = self._since = clock()

    def add(self, message: dict) -> None:
        source = message.get("src", "")
        last = self._seqs.get(source)
        # A source seen before must continue where it stopped; otherwise something was dropped on the way.
        if message.get("lost") or (last is not None and message.get("seq0") != last + 1):
            self.needs_snapshot = True
            self.gaps += 1
        self._seqs[source] = int(message.get("seq1", 0))
        self.tally.add(message)

    def wait(self) -> float:
        """Seconds until a frame may go out."""
        return max(0.0, self._last_frame + self.interval - self.clock())

    def due(self) -> bool:
        now = self.clock()
        if now - self._last_frame < self.interval:
            return False
        return (self.needs_snapshot or not self.tally.empty or now - self._last_frame >= self.idle
                or now - self._last_snapshot >= self.resync)

    def take(self) -> tuple[bool, Tally, float]:
        """(full snapshot?, what arrived since the last frame, seconds it covers); starts the next frame."""
        now = self.clock()
        full = self.needs_snapshot or now - self._last_snapshot >= self.resync
        tally, dt = self.tally, max(now - self._since, 1e-6)
        self.tally = Tally()
        self._last_frame = self._since = now
        if full:
            self.needs_snapshot = False
            self._last_snapshot = now
        return full, tally, dt
