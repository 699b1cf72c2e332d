"""Overview rates over a sliding window: a steady load reads steady, frame after frame."""

import asyncio

import pytest

from . import state
from .coalesce import Coalescer
from .feeds import OverviewFeed
from .rates import RATE_WINDOW_SECONDS, SlidingRates


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


async def _no_db(name, ttl, fn):
    return {"gauges": {}, "recent": {"bindings": [], "failed": [], "marks": {"node_events": [], "disruptions": []}}}.get(name, {})


def _frames_at_steady_rate(gaps: tuple[float, ...], seconds: float, monkeypatch) -> list[tuple[float, dict]]:
    """Pods bound one at a time, `gaps` seconds apart in turn, through a 4 fps coalescer into the
    overview feed: (time, frame) for every frame sent."""
    monkeypatch.setattr(state, "shared", _no_db)
    clock = Clock()
    start = clock.now
    co = Coalescer(fps=4, clock=clock)
    feed = OverviewFeed(clock=clock)
    frames, seq, step = [], 0, 0.01
    next_pod = clock.now + gaps[0]
    for _ in range(int(seconds / step)):
        clock.now += step
        if clock.now >= next_pod:
            seq += 1
            co.add({"src": "w1", "seq0": seq, "seq1": seq, "bound": 1, "attempts": 1})
            next_pod += gaps[seq % len(gaps)]
        if co.due():
            full, tally, dt = co.take()
            frames.append((clock.now - start, asyncio.run(feed.frame(full, tally, dt))))
    return frames


def test_a_steady_two_pods_a_second_reads_two_in_every_frame_once_the_window_is_full(monkeypatch):
    # 2 pods a second, as they come in practice: not evenly spaced (0.2 s, then 0.8 s, and again).
    frames = _frames_at_steady_rate((0.2, 0.8), 40.0, monkeypatch)
    settled = [f["rates"]["scheduled"] for t, f in frames if t >= RATE_WINDOW_SECONDS + 1]
    assert len(settled) > 40
    assert all(1.8 <= r <= 2.2 for r in settled), settled
    # What the page used to show: each frame's own count over its own length, from about 1 to 4.
    per_frame = [f["counts"]["bound"] / f["dt"] for t, f in frames if t >= RATE_WINDOW_SECONDS + 1]
    assert min(per_frame) < 1.4 and max(per_frame) >= 3.9
    assert frames[-1][1]["rate_window_s"] == RATE_WINDOW_SECONDS


def test_the_rate_falls_to_zero_once_a_window_passes_with_nothing_bound():
    rates = SlidingRates(("bound",), window=10.0)
    for t in range(1, 11):
        rates.add(float(t), 1.0, {"bound": 5})
    assert rates.add(11.0, 1.0, {"bound": 5})["bound"] == pytest.approx(5.0)
    last = None
    for t in range(12, 22):
        last = rates.add(float(t), 1.0, {"bound": 0})["bound"]
    assert last == 0.0


def test_a_frame_that_straddles_the_window_start_counts_only_its_share_inside():
    rates = SlidingRates(("bound",), window=10.0)
    rates.add(4.0, 4.0, {"bound": 40})  # 10 a second over 0..4
    # At 12 the window is 2..12: half of the first frame (20 pods over 2 s) and 8 quiet seconds.
    assert rates.add(12.0, 8.0, {"bound": 0})["bound"] == pytest.approx(20 / 10)
