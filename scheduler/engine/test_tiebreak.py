"""The worker's random choices: one counter-based stream, so (seed, position) says where a worker stood."""

from collections import Counter

import pytest

from scheduler.engine.config import default_profile
from scheduler.engine.framework import Algorithm
from scheduler.engine.nodes import NodeSpec, NodeTable
from scheduler.engine.pods import Container, PodSpec
from scheduler.engine.tiebreak import MAX_SEED, TieBreak


def test_seeking_a_position_draws_what_the_stream_drew_there():
    stream = TieBreak(7)
    drawn = [stream.randrange(1000) for _ in range(50)]
    assert stream.state() == (7, 50)
    for position in (0, 1, 17, 49):
        again = TieBreak(3)
        again.seek(7, position)
        assert [again.randrange(1000) for _ in range(50 - position)] == drawn[position:]


def test_each_draw_is_one_step_whatever_its_range_and_the_range_is_covered_evenly():
    stream = TieBreak(11)
    counts = Counter(stream.randrange(5) for _ in range(10_000))
    assert stream.position == 10_000 and set(counts) == {0, 1, 2, 3, 4}
    assert all(1800 < n < 2200 for n in counts.values()), counts
    assert TieBreak(11).randrange(1) == 0


def test_an_unseeded_stream_draws_a_seed_of_its_own_and_keeps_it():
    a, b = TieBreak(), TieBreak()
    assert 0 <= a.seed <= MAX_SEED and a.seed != b.seed
    first = [a.randrange(100) for _ in range(20)]
    assert [TieBreak(a.seed).randrange(100) for _ in range(1)] == first[:1]


@pytest.mark.parametrize("seed", [-1, MAX_SEED + 1])
def test_a_seed_a_column_cannot_hold_is_refused(seed):
    with pytest.raises(ValueError, match="tie-break seed must be between 0 and"):
        TieBreak(seed)


def test_a_decision_records_where_the_draws_stood_when_its_cycle_began():
    nodes = NodeTable([NodeSpec(name=f"n{i}", allocatable={"cpu": 4000, "memory": 8 << 30, "pods": 110}) for i in range(4)])
    pod = PodSpec("default", "p", containers=(Container("c", requests={"cpu": 100}),))
    profile = default_profile().build()
    algorithm = Algorithm(5)
    first = algorithm.schedule(profile, pod, nodes)
    second = algorithm.schedule(profile, pod, nodes)
    # Four equal nodes: each cycle draws once among them.
    assert first.tiebreak == (5, 0, 0) and second.tiebreak == (5, 1, 0)
    replayed = Algorithm(9)
    replayed.tiebreak.seek(5, 1)
    assert replayed.schedule(profile, pod, nodes).selected_row == second.selected_row
