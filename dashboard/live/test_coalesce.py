"""The coalescer on an injected clock: a burst becomes a few frames, a gap or a new viewer a snapshot."""

from .coalesce import Coalescer
from .tally import Tally


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def msg(seq, src="w1", bound=1, name="p"):
    return {"src": src, "seq0": seq, "seq1": seq, "bound": bound, "bindings": [["ns", name, "n", 1.0, 0.0]],
            "commits": [[float(seq), bound]]}


def drain(co, clock, frames):
    if co.due():
        frames.append(co.take())


def test_a_burst_of_5000_events_in_one_second_makes_at_most_five_frames_that_add_up():
    clock = Clock()
    co = Coalescer(fps=4, clock=clock)
    frames = []
    for i in range(1, 5001):
        clock.now += 1 / 5000  # 5,000 events spread over one second
        co.add(msg(i, name=f"p{i}"))
        drain(co, clock, frames)
    clock.now += 1
    drain(co, clock, frames)
    assert len(frames) <= 5
    assert frames[0][0] is True and not any(full for full, _, _ in frames[1:])  # only the first is a snapshot
    assert sum(t.counts["bound"] for _, t, _ in frames) == 5000
    shown = [b[1] for _, t, _ in frames for b in t.bindings][-15:]  # what a page appends, frame by frame
    assert shown == [f"p{i}" for i in range(4986, 5001)]
    assert all(len(t.bindings) <= 15 and len(t.commits) <= 64 for _, t, _ in frames)
    assert sum(n for _, t, _ in frames for _, n in t.commits) == 5000


def test_a_gap_in_a_source_s_sequence_makes_the_next_frame_a_snapshot():
    clock = Clock()
    co = Coalescer(fps=4, clock=clock)
    clock.now += 1
    assert co.take()[0] is True
    co.add(msg(1))
    co.add(msg(2))
    co.add(msg(1, src="w2"))  # a new source may start anywhere
    clock.now += 1
    assert co.take()[0] is False
    co.add(msg(5))  # 3 and 4 never came
    clock.now += 1
    assert co.take()[0] is True and co.gaps == 1


def test_a_message_that_says_it_lost_something_makes_a_snapshot():
    clock = Clock()
    co = Coalescer(fps=4, clock=clock)
    co.take()
    co.add({**msg(1), "lost": True})
    clock.now += 1
    assert co.take()[0] is True


def test_nothing_is_due_before_the_frame_interval_nor_when_idle_until_the_idle_beat():
    clock = Clock()
    co = Coalescer(fps=4, clock=clock, idle=1.0)
    co.take()
    co.add(msg(1))
    clock.now += 0.1
    assert not co.due() and abs(co.wait() - 0.15) < 1e-9
    clock.now += 0.2
    assert co.due()
    co.take()
    clock.now += 0.5
    assert not co.due()  # nothing new
    clock.now += 0.5
    assert co.due()  # the idle beat


def test_a_snapshot_comes_at_least_every_resync_period():
    clock = Clock()
    co = Coalescer(fps=4, clock=clock, resync=30.0)
    co.take()
    for i in range(1, 40):
        clock.now += 1
        co.add(msg(i))
        full, _, _ = co.take()
        assert full is (i == 30)


def test_a_tally_folds_oldest_commit_times_together_keeping_the_count():
    t = Tally()
    for i in range(100):
        t.add({"commits": [[float(i), 2]]})
    assert len(t.commits) == 64 and sum(n for _, n in t.commits) == 200 and t.commits[0][0] == 0.0
