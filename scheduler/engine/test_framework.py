"""schedulePod's framework pieces: numFeasibleNodesToFind and the round-robin start, scoring
shortcuts, selectHost, DefaultNormalizeScore and the FitError message."""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

import numpy as np
import pytest

from .config import default_profile
from .explain import explain
from .framework import (
    SKIP,
    Algorithm,
    Decision,
    FilterResult,
    Profile,
    default_normalize_score,
    num_feasible_nodes_to_find,
    rejected_by_dtype,
)
from .nodes import NodeSpec, NodeTable, NodeUsage
from .pods import NO_SCHEDULE, Container, PodSpec, Taint

GI = 1024 * 1024 * 1024


# ---- fakes -----------------------------------------------------------------------------------

class RejectNamed:
    """A filter rejecting the nodes named in `rejected`, with `reason`."""

    name: ClassVar[str] = "RejectNamed"

    def __init__(self, rejected=(), reason: str = "node(s) were rejected"):
        self.rejected = set(rejected)
        self.reason = reason
        self.calls = 0

    def filter(self, pod: PodSpec, nodes: NodeTable) -> FilterResult:
        self.calls += 1
        mask = np.fromiter((n in self.rejected for n in nodes.names), dtype=bool, count=nodes.n)
        return FilterResult.from_reasons(nodes.n, [(self.reason, mask)])


class ScoreByName:
    """Raw score per node name (0 for the others); records the rows it was asked about."""

    name: ClassVar[str] = "ScoreByName"

    def __init__(self, scores: dict[str, int] | None = None):
        self.scores = scores or {}
        self.asked: list[np.ndarray] = []

    def score(self, pod: PodSpec, nodes: NodeTable, rows: np.ndarray) -> np.ndarray:
        self.asked.append(np.asarray(rows).copy())
        return np.asarray([self.scores.get(nodes.names[r], 0) for r in rows], dtype=np.int64)

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        return scores


def table(n: int) -> NodeTable:
    return NodeTable([NodeSpec(f"n{i}", allocatable={"cpu": 1000, "memory": GI, "pods": 110}) for i in range(n)])


POD = PodSpec("default", "p", containers=(Container("c", requests={"cpu": 100}),))


# ---- numFeasibleNodesToFind --------------------------------------------------------------------

@pytest.mark.parametrize("percentage, num_all_nodes, want", [
    # As schedule_one_test.go TestNumFeasibleNodesToFind.
    (None, 10, 10),     # not set percentageOfNodesToScore and nodes number not more than 50
    (40, 10, 10),       # set percentageOfNodesToScore and nodes number not more than 50
    (None, 1000, 420),  # not set percentageOfNodesToScore and nodes number more than 50
    (40, 1000, 400),    # set percentageOfNodesToScore and nodes number more than 50
    (None, 6000, 300),  # not set percentageOfNodesToScore and nodes number more than 50*125
    (40, 6000, 2400),   # set percentageOfNodesToScore and nodes number more than 50*125
    # Around minFeasibleNodesToFind (100) and minFeasibleNodesPercentageToFind (5).
    (0, 99, 99),
    (0, 100, 100),
    (10, 500, 100),     # 50 found is below the 100 minimum
    (100, 150, 150),
    (0, 5000, 5000 * 10 // 100),
    (0, 100_000, 5000),  # adaptive percentage floors at 5
])
def test_num_feasible_nodes_to_find_matches_upstream_table(percentage, num_all_nodes, want):
    assert num_feasible_nodes_to_find(percentage, num_all_nodes) == want


# ---- the percentage cut and the round-robin start ----------------------------------------------

def test_only_num_feasible_nodes_to_find_nodes_are_scored_and_unexamined_nodes_carry_no_status():
    nodes = table(150)
    # Rows 0..9 fail, and so do rows 120..129 -- which the search never reaches.
    rejected = {f"n{i}" for i in list(range(10)) + list(range(120, 130))}
    scorer = ScoreByName()
    profile = Profile(filters=[RejectNamed(rejected)], scores=[(scorer, 1)])
    algorithm = Algorithm(0)

    decision = algorithm.schedule(profile, POD, nodes)

    assert num_feasible_nodes_to_find(None, 150) == 100
    assert list(decision.candidates) == list(range(10, 110))
    assert len(scorer.asked) == 1 and len(scorer.asked[0]) == 100
    assert decision.evaluated_nodes == 110
    assert algorithm.next_start_node_index == 110
    filtered = explain(decision, nodes)["filtered"]
    assert set(filtered) == {f"n{i}" for i in range(10)}
    assert all(decision.rejected_by[120:130] == -1)
    assert set(explain(decision, nodes)["scores"]) == {f"n{i}" for i in range(10, 110)}


def test_all_nodes_disables_the_cut():
    nodes = table(150)
    decision = Algorithm(0).schedule(Profile(filters=[RejectNamed()], scores=[(ScoreByName(), 1)]), POD, nodes,
                                     all_nodes=True)
    assert len(decision.candidates) == 150


def test_a_profile_percentage_of_nodes_to_score_widens_the_cut():
    nodes = table(300)
    profile = Profile(filters=[RejectNamed()], scores=[(ScoreByName(), 1)], percentage_of_nodes_to_score=60)
    decision = Algorithm(0).schedule(profile, POD, nodes)
    assert len(decision.candidates) == 180


def test_the_start_index_advances_round_robin_by_the_nodes_processed():
    nodes = table(250)
    profile = Profile(filters=[RejectNamed()], scores=[(ScoreByName(), 1)])
    algorithm = Algorithm(0)
    to_find = num_feasible_nodes_to_find(None, 250)  # 50 - 2 = 48% of 250 = 120

    first = algorithm.schedule(profile, POD, nodes)
    assert to_find == 120
    assert list(first.candidates) == list(range(0, 120))
    assert algorithm.next_start_node_index == 120

    second = algorithm.schedule(profile, POD, nodes)
    assert list(second.candidates) == list(range(120, 240))
    assert algorithm.next_start_node_index == 240

    third = algorithm.schedule(profile, POD, nodes)  # wraps around the end of the node list
    assert list(third.candidates) == list(range(240, 250)) + list(range(0, 110))
    assert algorithm.next_start_node_index == (240 + 120) % 250


def test_rejected_nodes_count_as_processed():
    nodes = table(300)
    rejected = {f"n{i}" for i in range(1, 300, 2)}  # every odd row fails
    profile = Profile(filters=[RejectNamed(rejected)], scores=[(ScoreByName(), 1)])
    algorithm = Algorithm(0)
    decision = algorithm.schedule(profile, POD, nodes)
    to_find = num_feasible_nodes_to_find(None, 300)  # 48% of 300 = 144
    assert list(decision.candidates) == list(range(0, 2 * to_find, 2))
    # The last feasible node taken is row 286: rows 0..286 were examined.
    assert decision.evaluated_nodes == 2 * (to_find - 1) + 1
    assert algorithm.next_start_node_index == 2 * (to_find - 1) + 1


def test_with_fewer_than_100_nodes_every_node_is_processed_and_the_index_stays_put():
    nodes = table(30)
    algorithm = Algorithm(0)
    algorithm.schedule(Profile(filters=[RejectNamed({"n3"})], scores=[(ScoreByName(), 1)]), POD, nodes)
    assert algorithm.next_start_node_index == 0  # (0 + 30) % 30


# ---- scoring shortcuts and selectHost ----------------------------------------------------------

class ExplodingScore(ScoreByName):
    name: ClassVar[str] = "ExplodingScore"

    def score(self, pod, nodes, rows):
        raise AssertionError("schedulePod must not score a single feasible node")


def test_no_scoring_when_exactly_one_node_fits():
    nodes = table(5)
    profile = Profile(filters=[RejectNamed({"n0", "n1", "n3", "n4"})], scores=[(ExplodingScore(), 1)])
    decision = Algorithm(0).schedule(profile, POD, nodes)
    assert decision.selected_row == 2
    assert decision.plugin_scores == [] and len(decision.totals) == 0
    out = explain(decision, nodes)
    assert out["selected"] == "n2" and out["scores"] == {} and out["message"] is None


def test_the_top_score_wins_whatever_the_seed():
    nodes = table(6)
    profile = Profile(filters=[RejectNamed()], scores=[(ScoreByName({"n4": 7, "n1": 3}), 2)])
    for seed in range(20):
        decision = Algorithm(seed).schedule(profile, POD, nodes)
        assert decision.selected_row == 4
        assert list(decision.totals) == [0, 6, 0, 0, 14, 0]


def test_ties_are_broken_reproducibly_for_a_fixed_seed():
    nodes = table(8)
    profile = Profile(filters=[RejectNamed()], scores=[(ScoreByName({f"n{i}": 5 for i in (1, 3, 5, 7)}), 1)])
    picks_a = [Algorithm(42).schedule(profile, POD, nodes).selected_row for _ in range(5)]
    algorithm = Algorithm(42)
    run_a = [algorithm.schedule(profile, POD, nodes).selected_row for _ in range(30)]
    algorithm = Algorithm(42)
    run_b = [algorithm.schedule(profile, POD, nodes).selected_row for _ in range(30)]
    assert len(set(picks_a)) == 1
    assert run_a == run_b
    assert set(run_a) <= {1, 3, 5, 7}


def test_ties_are_broken_uniformly_at_random_across_seeds():
    nodes = table(8)
    tied = (1, 3, 5, 7)
    profile = Profile(filters=[RejectNamed()], scores=[(ScoreByName({f"n{i}": 5 for i in tied}), 1)])
    counts = Counter(Algorithm(seed).schedule(profile, POD, nodes).selected_row for seed in range(800))
    assert set(counts) == set(tied)
    # Each should get about 200 of 800; a uniform pick falls outside [120, 280] with negligible probability.
    assert all(120 <= counts[row] <= 280 for row in tied), counts


# ---- DefaultNormalizeScore -------------------------------------------------------------------------

@pytest.mark.parametrize("reverse, scores, expected", [
    # As helper/normalize_score_test.go TestDefaultNormalizeScore.
    (False, [1, 2, 3, 4], [25, 50, 75, 100]),
    (True, [1, 2, 3, 4], [75, 50, 25, 0]),
    (False, [1000, 10, 20, 30], [100, 1, 2, 3]),
    (True, [1000, 10, 20, 30], [0, 99, 98, 97]),
    (False, [1, 1, 1, 1], [100, 100, 100, 100]),
    (False, [1000, 1, 1, 1], [100, 0, 0, 0]),
    (True, [0, 1, 1, 1], [100, 0, 0, 0]),
    # All zero: unchanged, or all max when reversed.
    (False, [0, 0, 0], [0, 0, 0]),
    (True, [0, 0, 0], [100, 100, 100]),
    (False, [], []),
])
def test_default_normalize_score_matches_upstream_table(reverse, scores, expected):
    got = default_normalize_score(100, reverse, np.asarray(scores, dtype=np.int64))
    assert got.dtype == np.int64
    assert list(got) == expected


# ---- the FitError message --------------------------------------------------------------------------

def test_fit_error_message_counts_each_reason_sorted():
    specs = [
        NodeSpec("n0", taints=(Taint("dedicated", "a", NO_SCHEDULE),), allocatable={"cpu": 4000, "memory": GI, "pods": 110}),
        NodeSpec("n1", allocatable={"cpu": 500, "memory": GI, "pods": 110}),
        NodeSpec("n2", allocatable={"cpu": 1000, "memory": GI, "pods": 110}),
    ]
    nodes = NodeTable(specs, [NodeUsage(), NodeUsage(), NodeUsage(requested={"cpu": 500})])
    pod = PodSpec("default", "p", containers=(Container("c", requests={"cpu": 600}),))
    decision = Algorithm(0).schedule(default_profile().build(), pod, nodes)
    assert not decision.scheduled
    assert decision.fit_error_message() == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu.")


def test_fit_error_message_counts_every_reason_of_a_node():
    nodes = NodeTable([NodeSpec("n0", allocatable={"cpu": 100, "memory": 100, "pods": 110}),
                       NodeSpec("n1", allocatable={"cpu": 100, "memory": GI, "pods": 110})])
    pod = PodSpec("default", "p", containers=(Container("c", requests={"cpu": 200, "memory": 200}),))
    decision = Algorithm(0).schedule(default_profile().build(), pod, nodes)
    assert decision.fit_error_message() == "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu."


def test_fit_error_message_with_no_nodes():
    decision = Algorithm(0).schedule(default_profile().build(), POD, NodeTable([]))
    assert decision.fit_error_message() == "no nodes available to schedule pods"
    assert explain(decision, NodeTable([]))["message"] == "no nodes available to schedule pods"


def test_fit_error_message_sorts_as_strings_like_go():
    hist = {"node(s) were unschedulable": 10, "Insufficient cpu": 9, "node(s) had untolerated taint(s)": 2}
    decision = Decision(pod_key="default/p", num_all_nodes=21, candidates=np.zeros(0, dtype=np.int64),
                        rejected_by=np.zeros(0, dtype=np.int64), filter_names=[], filter_results=[])
    decision.reason_histogram = lambda: hist  # the formatting alone
    # sort.Strings on "count reason": "10 ..." sorts before "2 ..." and "9 ...".
    assert decision.fit_error_message() == (
        "0/21 nodes are available: 10 node(s) were unschedulable, 2 node(s) had untolerated taint(s), 9 Insufficient cpu.")


def test_fit_error_message_of_a_pre_filter_rejection_stands_alone():
    from .pods import NodeSelectorTerm, Requirement

    nodes = table(3)
    pod = PodSpec("default", "p", required_terms=(
        NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("n0",)), Requirement("metadata.name", "In", ("n1",)))),
    ))
    decision = Algorithm(0).schedule(default_profile().build(), pod, nodes)
    assert decision.fit_error_message() == "0/3 nodes are available: pod affinity terms conflict."


def test_the_cut_wraps_around_and_clears_the_status_of_nodes_it_never_reached():
    nodes = table(250)
    rejected = {f"n{i}" for i in list(range(5, 10)) + list(range(130, 140))}
    profile = Profile(filters=[RejectNamed(rejected)], scores=[(ScoreByName(), 1)])
    algorithm = Algorithm(0)

    first = algorithm.schedule(profile, POD, nodes)
    assert list(first.candidates) == list(range(0, 5)) + list(range(10, 125))
    assert algorithm.next_start_node_index == 125
    assert set(explain(first, nodes)["filtered"]) == {f"n{i}" for i in range(5, 10)}

    second = algorithm.schedule(profile, POD, nodes)
    assert list(second.candidates) == list(range(125, 130)) + list(range(140, 250)) + list(range(0, 5))
    assert second.evaluated_nodes == 130
    assert algorithm.next_start_node_index == 5
    # Rows 5..9 fail the filter too, but this search stopped before reaching them.
    assert set(explain(second, nodes)["filtered"]) == {f"n{i}" for i in range(130, 140)}


# ---- cycle state, PreFilter Skip and plugin errors ----------------------------------------------

class Stateful:
    """A PreFilter that writes the cycle state its Filter reads, or returns SKIP, or fails."""

    name: ClassVar[str] = "Stateful"

    def __init__(self, outcome=None):
        self.outcome = outcome
        self.filter_calls = 0
        self.seen = []

    def pre_filter(self, pod, nodes):
        from .framework import PluginError, cycle_state
        if self.outcome == "error":
            raise PluginError("something broke")
        if self.outcome == "skip":
            return SKIP
        cycle_state().write("PreFilterStateful", {"reject": nodes.names[0]})
        return None

    def filter(self, pod, nodes):
        from .framework import cycle_state
        self.filter_calls += 1
        state = cycle_state().read("PreFilterStateful")
        self.seen.append(state)
        return FilterResult.from_reasons(nodes.n, [("node(s) were rejected", nodes.name_array == state["reject"])])


def small(n=3):
    return NodeTable([NodeSpec(f"n{i}", allocatable={"cpu": 1000, "memory": GI, "pods": 10}) for i in range(n)])


def test_the_filter_reads_what_its_pre_filter_wrote_in_the_same_cycle_and_the_decision_keeps_it():
    plugin = Stateful()
    decision = Algorithm(0).schedule(Profile(filters=[plugin]), PodSpec("ns", "p"), small(), all_nodes=True)
    assert plugin.seen == [{"reject": "n0"}]
    assert decision.filter_results[0].passed.tolist() == [False, True, True]
    assert decision.cycle_state.read("PreFilterStateful") == {"reject": "n0"}
    # Outside the cycle no state is current: a plugin called on its own gets a fresh one.
    from .framework import cycle_state
    assert cycle_state().read("PreFilterStateful") is None


def test_a_pre_filter_returning_skip_has_its_filter_skipped():
    plugin = Stateful("skip")
    decision = Algorithm(0).schedule(Profile(filters=[plugin]), PodSpec("ns", "p"), small(), all_nodes=True)
    assert plugin.filter_calls == 0 and decision.scheduled
    assert decision.filter_results[0].all_passed


def test_a_plugin_error_at_pre_filter_fails_the_cycle_with_upstreams_words():
    decision = Algorithm(0).schedule(Profile(filters=[Stateful("error")]), PodSpec("ns", "p"), small())
    assert decision.error == 'running PreFilter plugin "Stateful": something broke'
    assert not decision.scheduled


def test_a_plugin_error_at_pre_score_fails_the_cycle():
    from .framework import PluginError

    class Broken:
        name: ClassVar[str] = "Broken"

        def score(self, pod, nodes, rows):
            raise PluginError("failed to parse pod: bad")

        def normalize(self, scores):
            return scores

    decision = Algorithm(0).schedule(Profile(scores=[(Broken(), 1)]), PodSpec("ns", "p"), small())
    assert decision.error == 'running PreScore plugin "Broken": failed to parse pod: bad'
    assert not decision.scheduled and len(decision.candidates) == 0


def test_a_decision_keeps_each_nodes_first_rejecting_filter_in_one_byte_and_still_names_every_reason():
    # A batch holds one decision per pod until its attempts are written: at 50,000 nodes an int64 column was
    # 400 KB a pod (100 MB a 256-pod batch). One byte holds the index of any of the profile's filters.
    nodes = NodeTable([NodeSpec(f"n{i}", allocatable={"cpu": 1000 if i % 3 else 100, "memory": 1 << 30, "pods": 110},
                                taints=(Taint("k", "v", NO_SCHEDULE),) if i % 5 == 0 else ()) for i in range(120)])
    pod = PodSpec("default", "p", containers=(Container("c", requests={"cpu": 500}),))
    decision = Algorithm(0).schedule(default_profile().build(), pod, nodes)
    assert decision.rejected_by.dtype == np.int8
    assert decision.reason_histogram() == {"Insufficient cpu": 32, "node(s) had untolerated taint(s)": 24}
    assert rejected_by_dtype(126) is np.int8 and rejected_by_dtype(127) is np.int16
