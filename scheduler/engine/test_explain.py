"""explain(): a decision as the `explain` command's JSON object, and the audit's top candidates."""

from __future__ import annotations

import json
from typing import ClassVar

import numpy as np

from .config import default_profile
from .explain import TOP_CANDIDATES, explain, top_candidates, top_candidates_json
from .framework import Algorithm, FilterResult, Profile
from .nodes import NodeSpec, NodeTable
from .pods import Container, PodSpec
from .reference.pipeline import reference_pipeline
from scheduler.engine.testing import POD, small_cluster


def test_explain_has_the_issue_shape_for_a_scheduled_pod():
    specs, usages = small_cluster()
    nodes = NodeTable(specs, usages)
    out = explain(Algorithm(0).schedule(default_profile().build(), POD, nodes, all_nodes=True), nodes)

    assert json.loads(json.dumps(out)) == out  # plain JSON all the way down
    assert list(out) == ["pod", "feasible", "filtered", "scores", "selected", "message"]
    assert out["pod"] == "web/frontend"
    assert out["feasible"] == ["n2", "n3"]
    assert out["filtered"] == {
        "n0": [{"plugin": "TaintToleration", "reasons": ["node(s) had untolerated taint(s)"]}],
        "n1": [{"plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu", "Insufficient memory"]}],
    }
    # NodeAffinity's PreScore skips (no preferred terms), so it has no column.
    plugins = ["TaintToleration", "NodeResourcesFit", "NodeResourcesBalancedAllocation", "ImageLocality"]
    assert set(out["scores"]) == {"n2", "n3"}
    for entry in out["scores"].values():
        assert list(entry) == ["plugins", "total"]
        assert list(entry["plugins"]) == plugins
        for cell in entry["plugins"].values():
            assert list(cell) == ["raw", "normalized", "weight", "weighted"]
            assert cell["weighted"] == cell["normalized"] * cell["weight"]
        assert entry["total"] == sum(c["weighted"] for c in entry["plugins"].values())
    # No PreferNoSchedule taints: everyone gets the reversed maximum, times weight 3.
    assert out["scores"]["n2"]["plugins"]["TaintToleration"] == {"raw": 0, "normalized": 100, "weight": 3, "weighted": 300}
    # LeastAllocated: cpu (3500*100)/4000 = 87, memory 7/8 -> 87.
    assert out["scores"]["n2"]["plugins"]["NodeResourcesFit"]["raw"] == 87
    # Balanced with and without the pod: 50 + (50 + 100 - 100) / 2.
    assert out["scores"]["n2"]["plugins"]["NodeResourcesBalancedAllocation"]["raw"] == 75
    # 500MB on 1 of 4 nodes -> 125MB: 100 * (125 - 23) / (1000 - 23) = 10.
    assert out["scores"]["n3"]["plugins"]["ImageLocality"]["raw"] == 10
    assert out["scores"]["n2"]["plugins"]["ImageLocality"]["raw"] == 0
    assert out["scores"]["n2"]["total"] == 462 and out["scores"]["n3"]["total"] == 472
    assert out["selected"] == "n3"
    assert out["message"] is None

    ref = reference_pipeline(specs, usages, POD, default_profile())
    assert (out["filtered"], out["scores"], {out["selected"]}) == (ref.filtered, ref.scores, ref.top)


def test_explain_of_an_unschedulable_pod_carries_the_fit_error():
    specs, usages = small_cluster()
    nodes = NodeTable(specs, usages)
    big = PodSpec("web", "big", containers=(Container("c", requests={"cpu": 5000}),))
    out = explain(Algorithm(0).schedule(default_profile().build(), big, nodes, all_nodes=True), nodes)
    assert out["feasible"] == [] and out["scores"] == {} and out["selected"] is None
    assert set(out["filtered"]) == {"n0", "n1", "n2", "n3"}
    assert out["message"] == "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu."


def test_explain_of_a_single_feasible_node_has_no_scores():
    specs, usages = small_cluster()
    nodes = NodeTable(specs, usages)
    pinned = PodSpec("web", "pinned", node_name="n2")
    out = explain(Algorithm(0).schedule(default_profile().build(), pinned, nodes, all_nodes=True), nodes)
    assert out["feasible"] == ["n2"] and out["selected"] == "n2" and out["scores"] == {}
    assert out["filtered"]["n0"] == [{"plugin": "NodeName", "reasons": ["node(s) didn't match the requested node name"]}]


# ---- top_candidates --------------------------------------------------------------------------

class PassAll:
    name: ClassVar[str] = "PassAll"

    def filter(self, pod, nodes):
        return FilterResult.all_pass(nodes.n)


class ScoreByName:
    name: ClassVar[str] = "ScoreByName"

    def __init__(self, scores):
        self.scores = scores

    def score(self, pod, nodes, rows):
        return np.asarray([self.scores.get(nodes.names[r], 0) for r in rows], dtype=np.int64)

    def normalize(self, scores):
        return scores


def decide(scores: dict[str, int], n: int, seed: int = 0):
    nodes = NodeTable([NodeSpec(f"n{i}") for i in range(n)])
    profile = Profile(filters=[PassAll()], scores=[(ScoreByName(scores), 2)])
    return Algorithm(seed).schedule(profile, PodSpec("default", "p"), nodes), nodes


def test_top_candidates_lists_the_winner_first_then_by_total_at_most_ten():
    decision, nodes = decide({f"n{i}": 3 * i % 17 for i in range(14)}, 14)
    rows = top_candidates(decision, nodes)
    assert len(rows) == TOP_CANDIDATES == 10
    assert rows[0]["node"] == nodes.names[decision.selected_row]
    totals = [r["total"] for r in rows]
    assert totals == sorted(totals, reverse=True)
    every = sorted((2 * (3 * i % 17) for i in range(14)), reverse=True)
    assert totals == every[:10]
    assert rows[0] == {"node": rows[0]["node"], "plugins": {"ScoreByName": {
        "raw": totals[0] // 2, "normalized": totals[0] // 2, "weight": 2, "weighted": totals[0]}}, "total": totals[0]}


def test_top_candidates_puts_the_chosen_node_first_among_ties():
    for seed in range(10):
        decision, nodes = decide({}, 12, seed)
        rows = top_candidates(decision, nodes)
        assert len(rows) == 10
        assert rows[0]["node"] == nodes.names[decision.selected_row]
        assert len({r["node"] for r in rows}) == 10


def test_top_candidates_with_fewer_nodes_and_with_k():
    decision, nodes = decide({"n1": 5}, 3)
    assert [r["node"] for r in top_candidates(decision, nodes)][0] == "n1"
    assert len(top_candidates(decision, nodes)) == 3
    assert [r["node"] for r in top_candidates(decision, nodes, k=1)] == ["n1"]


def test_top_candidates_of_an_unscored_decision():
    decision, nodes = decide({}, 1)
    assert top_candidates(decision, nodes) == [{"node": "n0", "total": None, "plugins": {}}]
    specs, usages = small_cluster()
    table = NodeTable(specs, usages)
    big = PodSpec("web", "big", containers=(Container("c", requests={"cpu": 5000}),))
    assert top_candidates(Algorithm(0).schedule(default_profile().build(), big, table), table) == []


def test_top_candidates_puts_the_chosen_node_first_among_ties_within_k():
    for seed in range(10):
        decision, nodes = decide({}, 6, seed)
        rows = top_candidates(decision, nodes)
        assert rows[0]["node"] == nodes.names[decision.selected_row]
        assert sorted(r["node"] for r in rows) == [f"n{i}" for i in range(6)]


def test_top_candidates_json_is_the_json_of_top_candidates():
    for seed in range(5):
        for scores, n in (({f"n{i}": 3 * i % 17 for i in range(14)}, 14), ({}, 12), ({"n1": 5}, 3), ({}, 1)):
            decision, nodes = decide(scores, n, seed)
            for k in (1, 3, TOP_CANDIDATES):
                want = json.dumps(top_candidates(decision, nodes, k), separators=(",", ":"))
                assert top_candidates_json(decision, nodes, k) == want
    specs, usages = small_cluster()
    table = NodeTable(specs, usages)
    decision = Algorithm(0).schedule(default_profile().build(), POD, table, all_nodes=True)
    assert json.loads(top_candidates_json(decision, table)) == top_candidates(decision, table)
    big = PodSpec("web", "big", containers=(Container("c", requests={"cpu": 5000}),))
    assert top_candidates_json(Algorithm(0).schedule(default_profile().build(), big, table), table) == "[]"
