"""Opportunistic batching (batching.py) against the per-pod cycle: the same pod streams through two
Algorithms, one sharing work between pods of a signature and one scheduling every pod from scratch, on
two copies of a random cluster, give the same decision for every pod (candidates, scores, the pick, the
statuses and messages) and leave the same round-robin index, through assumes, forgets, rows reloaded
and whole reloads in between."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from .batching import pod_signature
from .cache import Cache
from .config import default_profile
from .explain import filtered_nodes, top_candidates, trace
from .framework import Algorithm
from .nodes import NodeSpec, NodeTable, NodeUsage
from .nominator import Nominator
from .perf import basic_pod, build_scheduling_basic, upstream_default_profile
from .pods import (Container, HostPort, NodeSelectorTerm, PodAffinity, PodAffinityTerm, PodSpec, Requirement, Taint,
                   TopologySpreadConstraint)
from .labels import LabelSelector
from scheduler.engine.testing import (
    GI,
    PODS,
    PROFILES,
    random_existing_pod,
    random_incoming_pod,
    random_node,
    random_objects,
    random_topology_node,
    random_usage,
)

# ---- the comparison --------------------------------------------------------------------------


def decision_view(decision, table: NodeTable) -> dict:
    """Everything a decision tells its readers (the loop, the audit, explain, preemption)."""
    return {
        "selected": decision.selected_row,
        "candidates": decision.candidates.tolist(),
        "evaluated": decision.evaluated_nodes,
        "totals": decision.totals.tolist(),
        "scores": [(p.plugin, p.weight, np.asarray(p.raw).tolist(), np.asarray(p.normalized).tolist())
                   for p in decision.plugin_scores],
        "rejected_by": decision.rejected_by.tolist(),
        "histogram": decision.reason_histogram(),
        "message": decision.fit_error_message(),
        "error": decision.error,
        "filtered": filtered_nodes(decision, table),
        "unschedulable_rows": decision.unschedulable_rows().tolist(),
        "trace": trace(decision, table, scores=True),
        "top": top_candidates(decision, table),
        "skipped": sorted(decision.skipped_filters),
        "nominated_counted": decision.nominated_pods_counted,
    }


class Pair:
    """One cluster twice: a batching Algorithm on one copy, the per-pod Algorithm on the other."""

    def __init__(self, specs, usage, seed: int, nominated: list[tuple[PodSpec, str]] = (), placed=()):
        self.tables = [NodeTable(specs, usage), NodeTable(specs, usage)]
        for table in self.tables:
            table.pods.load(placed)
        self.caches = [Cache(t) for t in self.tables]
        self.algorithms = [Algorithm(seed, batching=True), Algorithm(seed, batching=False)]
        for alg in self.algorithms:
            alg.nominator = Nominator()
            for pod, node in nominated:
                alg.nominator.add(pod, node)
        self.assumed: list[PodSpec] = []
        self.made = 0  # pods made so far (their names are unique)

    def schedule(self, profile, pod: PodSpec):
        views = []
        for alg, table in zip(self.algorithms, self.tables):
            views.append(decision_view(alg.schedule(profile, pod, table), table))
        assert views[0] == views[1], pod.key
        assert self.algorithms[0].next_start_node_index == self.algorithms[1].next_start_node_index
        return views[0]["selected"]

    def assume(self, pod: PodSpec, row: int) -> None:
        for cache in self.caches:
            cache.assume(pod, row)
        self.assumed.append(pod)

    def forget(self, rng: random.Random) -> None:
        if self.assumed:
            pod = self.assumed.pop(rng.randrange(len(self.assumed)))
            for cache in self.caches:
                cache.forget(pod.key)

    def set_row(self, row: int, usage: NodeUsage) -> None:
        for table in self.tables:
            table.set_row_usage(row, usage)

    def reload(self, usage: list[NodeUsage]) -> None:
        for table in self.tables:
            table.reset_usage(usage)

    def load_columns(self, rng: random.Random) -> None:
        """A snapshot's reload (NodeTable.load_usage) in which a few rows' cpu, memory and pod counts moved."""
        table = self.tables[0]
        standard = {r: col.copy() for r, col in table.requested.items() if r in ("cpu", "memory", "ephemeral-storage", "pods")}
        nz_cpu, nz_mem = table.nonzero_requested["cpu"].copy(), table.nonzero_requested["memory"].copy()
        for row in rng.sample(range(table.n), min(table.n, rng.randint(1, 3))):
            standard["cpu"][row] += rng.choice([-200, 100, 3000])
            standard["pods"][row] += rng.choice([-1, 1, 50])
            nz_cpu[row] += 100
            nz_mem[row] += rng.choice([0, GI])
        for t in self.tables:
            t.load_usage({r: c.copy() for r, c in standard.items()}, nz_cpu.copy(), nz_mem.copy(), {}, {})


def run_stream(pair: Pair, profile, templates: list[PodSpec], rng: random.Random, steps: int,
               usage_of=random_usage) -> int:
    """Schedule `steps` pods made from `templates` (so signatures repeat), assuming each placed pod, with
    now and then a forget, a row reloaded or every row reloaded; returns how many were placed."""
    placed = 0
    n = pair.tables[0].n
    for i in range(steps):
        roll = rng.random()
        if roll < 0.06:
            pair.forget(rng)
        elif roll < 0.10:
            pair.set_row(rng.randrange(n), usage_of(rng))
        elif roll < 0.12:
            pair.reload([usage_of(rng) for _ in range(n)])
        elif roll < 0.16:
            pair.load_columns(rng)
        template = rng.choice(templates)
        pair.made += 1
        pod = dataclasses.replace(template, name=f"{template.name}-{pair.made}", uid=f"u{pair.made}")
        row = pair.schedule(profile, pod)
        if row is not None and rng.random() < 0.9:
            pair.assume(pod, row)
            placed += 1
    return placed


# ---- random clusters, templates and streams ----------------------------------------------------

SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def streams(draw, random_profile: bool):
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    # Up to 260 nodes, so that numFeasibleNodesToFind cuts (from 100 nodes) and the start index rotates.
    n = rng.choice([1, 3, 12, 40, 100, 150, 260])
    specs = [random_node(rng, f"n{i}") for i in range(n)]
    usage = [random_usage(rng) for _ in range(n)]
    templates = [dataclasses.replace(draw(PODS), name=f"t{k}") for k in range(draw(st.integers(1, 3)))]
    profile = draw(PROFILES) if random_profile else default_profile()
    pct = draw(st.sampled_from([None, None, 1, 5, 30, 100]))
    profile = dataclasses.replace(profile, percentage_of_nodes_to_score=pct)
    return specs, usage, templates, profile, rng


@SETTINGS
@given(streams(random_profile=False))
def test_batched_decisions_are_the_per_pod_decisions_under_the_default_profile(case):
    specs, usage, templates, profile, rng = case
    run_stream(Pair(specs, usage, rng.randrange(2**31)), profile.build(), templates, rng, steps=rng.randint(5, 40))


@SETTINGS
@given(streams(random_profile=True))
def test_batched_decisions_are_the_per_pod_decisions_under_random_profiles(case):
    specs, usage, templates, profile, rng = case
    run_stream(Pair(specs, usage, rng.randrange(2**31)), profile.build(), templates, rng, steps=rng.randint(5, 40))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(random_profile=False), st.data())
def test_batched_decisions_count_nominated_pods_as_the_per_pod_decisions(case, data):
    specs, usage, templates, profile, rng = case
    nominated = []
    for k in range(rng.randint(1, 3)):
        pod = dataclasses.replace(data.draw(PODS), name=f"nominated-{k}", priority=rng.choice([0, 10]))
        nominated.append((pod, rng.choice(specs).name))
    pair = Pair(specs, usage, rng.randrange(2**31), nominated)
    run_stream(pair, profile.build(), templates, rng, steps=rng.randint(5, 30))


@st.composite
def topology_streams(draw):
    """Topology-labelled nodes, existing pods (some with affinity terms, or none), incoming pods with and
    without spread constraints and terms, under upstream's default profile (both topology plugins)."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    n = rng.choice([3, 24, 120])
    specs = [random_topology_node(rng, f"n{i}") for i in range(n)]
    existing = [random_existing_pod(rng, i) for i in range(rng.choice([0, 5, 30]))]
    if rng.random() < 0.5:
        existing = [dataclasses.replace(p, pod_affinity=None, pod_anti_affinity=None) for p in existing]
    placed = [(rng.randrange(n), p) for p in existing]
    plain = PodSpec("default", "plain", labels={"app": "a"}, containers=(Container("c", requests={"cpu": 300}),))
    templates = [random_incoming_pod(rng) for _ in range(rng.randint(1, 3))] + [plain]
    return specs, placed, templates, random_objects(rng), rng


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topology_streams())
def test_batched_decisions_are_the_per_pod_decisions_with_spread_and_affinity(case):
    specs, placed, templates, objects, rng = case
    pair = Pair(specs, [NodeUsage() for _ in specs], rng.randrange(2**31), placed=placed)
    for table in pair.tables:
        table.objects = objects
    run_stream(pair, upstream_default_profile().build(), templates, rng, steps=rng.randint(5, 40),
               usage_of=lambda r: NodeUsage())


# ---- what is shared, and what is not -------------------------------------------------------------


def test_scheduling_basic_shares_the_work_of_every_pod_after_the_first_and_places_them_as_the_per_pod_cycle():
    for batching in (True, False):
        cache, profile, make_pod = build_scheduling_basic(nodes=500, placed=100, seed=3)
        alg = Algorithm(seed=3, batching=batching)
        rows = []
        for i in range(1500):
            pod = make_pod(i)
            decision = alg.schedule(profile, pod, cache.table)
            cache.assume(pod, decision.selected_row)
            rows.append(decision.selected_row)
        if batching:
            shared, batched_rows = alg.batch.batched_pods, rows
    assert shared == 1499
    assert batched_rows == rows


def test_pods_with_affinity_terms_or_spread_constraints_are_not_signed():
    profile = upstream_default_profile().build()
    table = NodeTable([NodeSpec("n0", labels={"zone": "a"}, allocatable={"cpu": 1000, "memory": GI, "pods": 10})])
    plain = basic_pod("plain")
    assert pod_signature(profile, plain, table) is not None
    spread = dataclasses.replace(plain, topology_spread_constraints=(
        TopologySpreadConstraint(1, "zone", label_selector=LabelSelector.of({"app": "a"})),))
    assert pod_signature(profile, spread, table) is None
    term = PodAffinityTerm("zone", LabelSelector.of({"app": "a"}))
    assert pod_signature(profile, dataclasses.replace(plain, pod_anti_affinity=PodAffinity(required=(term,))), table) is None
    assert pod_signature(profile, dataclasses.replace(plain, nominated_node_name="n0"), table) is None
    # Once a pod with terms is on a node, no pod is signed: its terms may read the incoming pod's labels.
    table.pods.add_pod(0, dataclasses.replace(basic_pod("other"), pod_affinity=PodAffinity(required=(term,))))
    assert pod_signature(profile, plain, table) is None


def test_pods_differing_in_what_a_plugin_reads_have_different_signatures():
    profile = default_profile().build()
    table = NodeTable([NodeSpec("n0", allocatable={"cpu": 1000, "memory": GI, "pods": 10})])
    base = basic_pod("a")
    same = basic_pod("b", namespace="elsewhere")
    assert pod_signature(profile, base, table) == pod_signature(profile, same, table)
    bigger = dataclasses.replace(base, containers=(Container("c", image=base.containers[0].image, requests={"cpu": 200}),))
    other_image = dataclasses.replace(base, containers=(dataclasses.replace(base.containers[0], image="nginx"),))
    selected = dataclasses.replace(base, node_selector={"zone": "a"})
    for other in (bigger, other_image, selected):
        assert pod_signature(profile, other, table) != pod_signature(profile, base, table)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.sampled_from([40, 130, 260]))
def test_batched_decisions_follow_a_snapshot_reload_that_moved_a_few_rows(seed, n):
    # Nodes without extended resources or host ports: a reload notes only the rows that moved.
    rng = random.Random(seed)
    specs = [NodeSpec(f"n{i}", allocatable={"cpu": rng.choice([1000, 4000]), "memory": rng.choice([GI, 8 * GI]),
                                            "pods": rng.choice([2, 110])}) for i in range(n)]
    pair = Pair(specs, [NodeUsage() for _ in specs], rng.randrange(2**31))
    templates = [PodSpec("default", f"t{k}", containers=(Container("c", requests={"cpu": c, "memory": m}),))
                 for k, (c, m) in enumerate([(100, GI // 2), (500, GI), (0, 0)])]
    for _ in range(4):
        run_stream(pair, default_profile().build(), templates, rng, steps=20, usage_of=lambda r: NodeUsage())
        pair.load_columns(rng)
    assert pair.algorithms[0].batch.batched_pods > 0


@pytest.mark.parametrize("nodes", [120, 300])
def test_a_node_filling_up_under_a_batch_is_rejected_as_the_per_pod_cycle_rejects_it(nodes):
    # Few pods fit each node: the batch's rows go from feasible to "Too many pods" / "Insufficient cpu".
    specs = [NodeSpec(f"n{i}", allocatable={"cpu": 1000 * (1 + i % 3), "memory": 4 * GI, "pods": 1 + i % 4})
             for i in range(nodes)]
    pair = Pair(specs, [NodeUsage() for _ in specs], seed=11)
    profile = default_profile().build()
    template = PodSpec("default", "t", containers=(Container("c", requests={"cpu": 500, "memory": GI}),))
    placed = run_stream(pair, profile, [template], random.Random(5), steps=nodes * 4)
    assert placed > nodes  # the cluster filled up, and the last pods fit nowhere
    assert pair.algorithms[0].batch.batched_pods > 0


@pytest.mark.parametrize("narrowed", [False, True])
def test_the_last_feasible_node_past_the_cut_taken_under_a_batch_makes_the_cycle_examine_every_node(narrowed):
    # 120 nodes considered, 19 tainted: 101 feasible, one more than numFeasibleNodesToFind (100), so each cut
    # stops at the 100th feasible node with one left past it. A pod taking the host port on that one, under
    # the batch, leaves 100 feasible: the per-pod cycle no longer cuts (every node is examined and carries
    # its status, the round-robin index moves by all of them), though the node is past the batch's cut.
    # `narrowed`: 20 more nodes that the pod's metadata.name term leaves out (a PreFilterResult).
    specs = [NodeSpec(f"n{i}", taints=(Taint("dedicated"),) if i < 19 else (),
                      allocatable={"cpu": 4000, "memory": 8 * GI, "pods": 110}) for i in range(140 if narrowed else 120)]
    pair = Pair(specs, [NodeUsage() for _ in specs], seed=7)
    profile = default_profile().build()
    template = PodSpec("default", "web", containers=(Container("c", requests={"cpu": 100}, ports=(HostPort(80),)),))
    if narrowed:
        template = dataclasses.replace(template, required_terms=tuple(
            NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", (f"n{i}",)),)) for i in range(120)))
    pods = [dataclasses.replace(template, name=f"web-{k}", uid=f"u{k}") for k in range(5)]
    pair.schedule(profile, pods[0])
    pair.schedule(profile, pods[1])  # the signature's batch is made
    alg = pair.algorithms[0]
    last = (alg.next_start_node_index - 1) % 120  # the one feasible node the next cut leaves past it
    assert last >= 19
    pair.assume(pods[2], last)
    pair.schedule(profile, pods[3])
    decision = alg.schedule(profile, pods[4], pair.tables[0])
    assert decision.evaluated_nodes == 120
    assert alg.batch.batched_pods >= 2


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 12))
def test_a_filter_that_says_it_passes_everywhere_passes_on_every_node(seed, n):
    # A refresh skips filter_rows on a plugin's word (passes_everywhere): that word must be its Filter's verdict.
    rng = random.Random(seed)
    table = NodeTable([random_node(rng, f"n{i}") for i in range(n)], [random_usage(rng) for _ in range(n)])
    pod = random_incoming_pod(rng)
    for plugin in default_profile().build().filters:
        if hasattr(plugin, "passes_everywhere") and plugin.passes_everywhere(pod, table):
            assert bool(plugin.filter_rows(pod, table, np.arange(n)).passed.all()), plugin.name
            assert bool(plugin.filter(pod, table).passed.all()), plugin.name
