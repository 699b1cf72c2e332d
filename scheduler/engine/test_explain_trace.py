"""An attempt's trace reads back into exactly what `explain` prints: the filter verdicts and the score matrix."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings

from .config import default_profile
from .explain import TRACE_MAX_NODES, filtered_nodes, score_matrix, trace, trace_filtered, trace_omitted, trace_scores
from .framework import Algorithm
from .nodes import NodeSpec, NodeTable, NodeUsage
from .pods import Container, PodSpec
from scheduler.engine.testing import cases
from scheduler.engine.testing import GI, POD, small_cluster


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


def _cluster_of(n: int) -> NodeTable:
    """n 4-CPU nodes, every 50th cordoned: a 64-CPU pod is rejected by every node, for two reasons."""
    specs = [NodeSpec(f"node-{i}", allocatable={"cpu": 4000, "memory": 32 * GI, "pods": 110}, unschedulable=i % 50 == 0)
             for i in range(n)]
    return NodeTable(specs, [NodeUsage() for _ in specs])


def test_a_failed_attempt_on_50000_nodes_keeps_a_bounded_trace_with_every_node_counted():
    nodes = _cluster_of(50_000)
    big = PodSpec("default", "big", containers=(Container("c", requests={"cpu": 64000, "memory": GI}),))
    decision = Algorithm(0).schedule(default_profile().build(), big, nodes)
    stored = _stored(trace(decision, nodes, scores=True))

    named = trace_filtered(stored)
    assert len(named) == TRACE_MAX_NODES == 1000
    # Every named node's verdict is the decision's own, and every rejected node is counted once.
    full = filtered_nodes(decision, nodes)
    assert all(full[name] == verdict for name, verdict in named.items())
    assert len(named) + sum(g["omitted"] for g in trace_omitted(stored)) == len(full) == 50_000
    assert {(g["plugin"], g["named"], g["omitted"]) for g in trace_omitted(stored)} == {
        ("NodeUnschedulable", 500, 500), ("NodeResourcesFit", 500, 48_500)}
    assert len(json.dumps(stored)) < 20_000  # names are ~12 bytes: 1,000 of them, not 50,000 (~690 KB)


def test_a_small_group_is_kept_whole_when_the_cap_splits_the_names():
    nodes = _cluster_of(5_000)
    cordoned = [f"node-{i}" for i in range(0, 5_000, 50)]  # 100
    big = PodSpec("default", "big", containers=(Container("c", requests={"cpu": 64000}),))
    stored = _stored(trace(Algorithm(0).schedule(default_profile().build(), big, nodes), nodes, scores=False,
                           max_nodes=300))
    groups = {g["plugin"]: g for g in stored["filtered"]}
    assert sorted(groups["NodeUnschedulable"]["nodes"]) == sorted(cordoned)
    assert "omitted" not in groups["NodeUnschedulable"]
    assert (len(groups["NodeResourcesFit"]["nodes"]), groups["NodeResourcesFit"]["omitted"]) == (200, 4_700)


def test_a_trace_within_the_cap_names_every_node_and_omits_nothing():
    nodes = _cluster_of(120)
    big = PodSpec("default", "big", containers=(Container("c", requests={"cpu": 64000}),))
    decision = Algorithm(0).schedule(default_profile().build(), big, nodes)
    stored = _stored(trace(decision, nodes, scores=False))
    assert trace_filtered(stored) == filtered_nodes(decision, nodes)
    assert trace_omitted(stored) == []
    assert trace_omitted({"v": 1, "filtered": [{"plugin": "P", "reasons": ["r"], "nodes": ["a"]}]}) == []  # old rows
