"""An attempt's trace reads back into exactly what `explain` prints: the filter verdicts and the score matrix."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings

from .config import default_profile
from .explain import filtered_nodes, score_matrix, trace, trace_filtered, trace_scores
from .framework import Algorithm
from .nodes import NodeSpec, NodeTable, NodeUsage
from .pods import Container, PodSpec
from .test_engine_matches_reference import cases
from .test_explain import GI, POD, small_cluster


def _stored(t: dict) -> dict:
    return json.loads(json.dumps(t))  # as it comes back from a JSON column


def test_the_trace_of_a_scheduled_pod_reads_back_as_explains_verdicts_and_scores():
    specs, usages = small_cluster()
    nodes = NodeTable(specs, usages)
    decision = Algorithm(0).schedule(default_profile().build(), POD, nodes, all_nodes=True)
    stored = _stored(trace(decision, nodes, scores=True))

    assert trace_filtered(stored) == filtered_nodes(decision, nodes)
    assert trace_scores(stored) == score_matrix(decision, nodes)
    assert sorted(stored["scores"]["nodes"]) == ["n2", "n3"]


def test_the_trace_groups_nodes_rejected_for_the_same_reasons():
    specs = [NodeSpec(f"small-{i}", allocatable={"cpu": 100, "memory": GI, "pods": 110}) for i in range(3)]
    specs += [NodeSpec("tiny", allocatable={"cpu": 100, "memory": 1, "pods": 110}),
              NodeSpec("unsched", unschedulable=True, allocatable={"cpu": 100, "memory": GI, "pods": 110})]
    nodes = NodeTable(specs, [NodeUsage() for _ in specs])
    big = PodSpec("web", "big", containers=(Container("c", requests={"cpu": 500, "memory": 2}),))
    decision = Algorithm(0).schedule(default_profile().build(), big, nodes, all_nodes=True)

    stored = _stored(trace(decision, nodes, scores=True))
    assert "scores" not in stored  # nothing was scored
    groups = {(g["plugin"], tuple(g["reasons"])): sorted(g["nodes"]) for g in stored["filtered"]}
    assert groups == {
        ("NodeUnschedulable", ("node(s) were unschedulable",)): ["unsched"],
        ("NodeResourcesFit", ("Insufficient cpu",)): ["small-0", "small-1", "small-2"],
        ("NodeResourcesFit", ("Insufficient cpu", "Insufficient memory")): ["tiny"],
    }
    assert trace_filtered(stored) == filtered_nodes(decision, nodes)


def test_a_trace_without_scores_keeps_only_the_verdicts():
    specs, usages = small_cluster()
    nodes = NodeTable(specs, usages)
    decision = Algorithm(0).schedule(default_profile().build(), POD, nodes, all_nodes=True)
    stored = _stored(trace(decision, nodes, scores=False))
    assert set(stored) == {"v", "filtered"}
    assert trace_scores(stored) == {}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(random_profile=True))
def test_any_trace_reads_back_as_explain_reads_the_decision(case):
    specs, use, pod, profile_config, seed = case
    nodes = NodeTable(specs, use)
    decision = Algorithm(seed).schedule(profile_config.build(), pod, nodes, all_nodes=True)
    stored = _stored(trace(decision, nodes, scores=True))
    assert trace_filtered(stored) == filtered_nodes(decision, nodes)
    assert trace_scores(stored) == score_matrix(decision, nodes)
