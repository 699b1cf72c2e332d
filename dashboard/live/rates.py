"""Rates over a sliding window of frames, so a steady load reads steady.

A frame covers a fraction of a second (at most SCHEDBOARD_LIVE_FPS a second), and the events in it
arrive in bursts (one message per worker batch): counts divided by each frame's own length swing
between 0 and several times the true rate. Dividing what the last RATE_WINDOW_SECONDS of frames
counted by the time they cover gives the rate a person means by "pods a second".
"""

from __future__ import annotations

from collections import deque

RATE_WINDOW_SECONDS = 10.0


class SlidingRates:
    """Per-second rates of some counters over the frames of the last `window` seconds."""

    def __init__(self, keys: tuple[str, ...], window: float = RATE_WINDOW_SECONDS):
        self.keys = keys
        self.window = window
        self._frames: deque[tuple[float, float, dict[str, int]]] = deque()  # (end time, length, counts)

    def add(self, now: float, dt: float, counts: dict[str, int]) -> dict[str, float]:
        """Record a frame that ended at `now` and covered `dt` seconds; return the rates over the window."""
        self._frames.append((now, dt, {k: counts.get(k, 0) for k in self.keys}))
        start = now - self.window
        while self._frames and self._frames[0][0] <= start:
            self._frames.popleft()
        covered = 0.0
        totals = dict.fromkeys(self.keys, 0.0)
        for end, length, frame_counts in self._frames:
            # A frame that began before the window counts for the part inside it (its events are
            # taken as spread evenly over the frame).
            inside = min(length, end - start)
            share = inside / length if length > 0 else 1.0
            covered += inside
            for k in self.keys:
                totals[k] += frame_counts[k] * share
        return {k: (totals[k] / covered if covered > 0 else 0.0) for k in self.keys}
