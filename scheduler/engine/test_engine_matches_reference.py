"""The columnar engine as a whole against the plain per-node reference of schedulePod
(reference/pipeline.py): random clusters and pods, under the default profile and random ones."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings, strategies as st

from .config import ProfileConfig, default_profile
from .explain import explain
from .framework import Algorithm
from .nodes import NodeSpec, NodeTable, NodeUsage
from .perf import upstream_default_profile
from .plugins.inter_pod_affinity import InterPodAffinityArgs
from .plugins.pod_topology_spread import PodTopologySpreadArgs
from .pods import Container, NodeSelectorTerm, PodSpec, Requirement, TopologySpreadConstraint
from scheduler.engine.testing import (
    FILTERS,
    GI,
    PODS,
    SCORES,
    TOPO_KEYS,
    cases,
    clusters,
    random_existing_pod,
    random_incoming_pod,
    random_objects,
    random_topology_node,
)

from .reference import resources as ref_resources
from .reference.pipeline import reference_pipeline, reference_schedule


# ---- the comparison --------------------------------------------------------------------------

def check_engine_matches_reference(specs, use, pod, profile_config, seed) -> None:
    table = NodeTable(specs, use)
    decision = Algorithm(seed).schedule(profile_config.build(), pod, table, all_nodes=True)
    got = explain(decision, table)
    ref = reference_pipeline(specs, use, pod, profile_config)

    assert got["pod"] == ref.pod_key
    assert got["feasible"] == ref.feasible
    assert got["filtered"] == ref.filtered
    assert set(got["filtered"]) | set(got["feasible"]) == {s.name for s in specs}
    assert got["scores"] == ref.scores
    if ref.top:
        assert got["selected"] in ref.top
        assert got["message"] is None
    else:
        assert got["selected"] is None
        assert got["message"] == ref.message
    assert decision.reason_histogram() == ref.reason_counts


SETTINGS = settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(cases(random_profile=False))
def test_engine_matches_reference_under_the_default_profile(case):
    check_engine_matches_reference(*case)


@SETTINGS
@given(cases(random_profile=True))
def test_engine_matches_reference_under_random_profiles(case):
    check_engine_matches_reference(*case)


@settings(max_examples=40, deadline=None)
@given(clusters(max_nodes=12), st.data())
def test_the_pipelines_image_locality_is_the_reference_plugins(cluster, data):
    specs, use = cluster
    pod = data.draw(PODS)
    profile = ProfileConfig(filters=[], scores=[("ImageLocality", 1)])
    ref = reference_pipeline(specs, use, pod, profile)
    for name, entry in ref.scores.items():
        node = next(s for s in specs if s.name == name)
        assert entry["plugins"]["ImageLocality"]["raw"] == ref_resources.image_locality_score(pod, node, specs)


def test_reference_schedule_picks_among_the_top_nodes():
    specs = [NodeSpec(f"n{i}", allocatable={"cpu": 1000, "memory": GI, "pods": 10}) for i in range(4)]
    use = [NodeUsage() for _ in specs]
    pod = PodSpec("default", "p", containers=(Container("c", requests={"cpu": 100}),))
    picked = {reference_schedule(specs, use, pod, default_profile()) for _ in range(200)}
    assert picked == {"n0", "n1", "n2", "n3"}
    specs[0].unschedulable = True
    specs[1].unschedulable = True
    specs[2].unschedulable = True
    assert reference_schedule(specs, use, pod, default_profile()) == "n3"


# ---- cases found by the property tests --------------------------------------------------------

def test_a_node_name_outside_the_node_affinity_prefilter_result_is_rejected_by_the_node_name_filter():
    # Upstream's NodeName has no PreFilter: NodeAffinity narrows to n1 and NodeName's Filter rejects it.
    specs = [NodeSpec(f"n{i}", allocatable={"cpu": 1000, "memory": GI, "pods": 10}) for i in range(3)]
    use = [NodeUsage() for _ in specs]
    pod = PodSpec("default", "p", node_name="n0",
                  required_terms=(NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("n1",)),)),))
    profile = default_profile()
    ref = reference_pipeline(specs, use, pod, profile)
    assert ref.message == ("0/3 nodes are available: 1 node(s) didn't match the requested node name, "
                           "2 node(s) didn't satisfy plugin(s) [NodeAffinity].")
    table = NodeTable(specs, use)
    decision = Algorithm(0).schedule(profile.build(), pod, table, all_nodes=True)
    assert explain(decision, table)["message"] == ref.message


# ---- PodTopologySpread and InterPodAffinity --------------------------------------------------------
# Clusters whose nodes carry topology labels and hold labelled pods (some with their own affinity
# terms), incoming pods with random spread constraints and (anti-)affinity terms (testing.py), under the
# default profile with both plugins where upstream has them, and under random profiles with random args.


def random_spread_args(rng: random.Random) -> PodTopologySpreadArgs:
    if rng.random() < 0.5:
        return PodTopologySpreadArgs()
    keys = rng.sample(TOPO_KEYS[:4], rng.randint(0, 2))
    return PodTopologySpreadArgs(
        default_constraints=tuple(TopologySpreadConstraint(rng.randint(1, 3), k, rng.choice(["DoNotSchedule", "ScheduleAnyway"]))
                                  for k in keys),
        defaulting_type="List")


TOPOLOGY_FILTERS = FILTERS + ["PodTopologySpread", "InterPodAffinity"]
TOPOLOGY_SCORES = SCORES + ["PodTopologySpread", "InterPodAffinity"]


@st.composite
def topology_cases(draw, random_profile: bool):
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    n = rng.randint(1, 24)
    specs = [random_topology_node(rng, f"n{i}") for i in range(n)]
    use = [NodeUsage() for _ in specs]
    pods_by_node = [[random_existing_pod(rng, i * 10 + j) for j in range(rng.choice([0, 0, 1, 2, 3, 6]))] for i in range(n)]
    if random_profile:
        filters = [f for f in rng.sample(TOPOLOGY_FILTERS, len(TOPOLOGY_FILTERS)) if rng.random() < 0.8]
        # At least one score plugin, as the profiles above (without any, the engine stops at the
        # first feasible node, which the reference does not model).
        scores = [(s, rng.randint(1, 5)) for s in TOPOLOGY_SCORES if rng.random() < 0.6] or [("InterPodAffinity", 2)]
        profile = ProfileConfig(scheduler_name="random", filters=filters, scores=scores, plugin_args={
            "PodTopologySpread": random_spread_args(rng),
            "InterPodAffinity": InterPodAffinityArgs(hard_pod_affinity_weight=rng.choice([0, 1, 5]),
                                                     ignore_preferred_terms_of_existing_pods=rng.random() < 0.3),
        })
    else:
        profile = upstream_default_profile()
    return specs, use, pods_by_node, random_incoming_pod(rng), random_objects(rng), profile, rng.randint(0, 2**31)


def check_topology_case(specs, use, pods_by_node, pod, objects, profile_config, seed) -> None:
    table = NodeTable(specs, use)
    table.pods.load((row, p) for row, ps in enumerate(pods_by_node) for p in ps)
    table.objects = objects
    decision = Algorithm(seed).schedule(profile_config.build(), pod, table, all_nodes=True)
    got = explain(decision, table)
    ref = reference_pipeline(specs, use, pod, profile_config, pods_by_node, objects)
    assert got["filtered"] == ref.filtered
    assert got["feasible"] == ref.feasible
    assert got["scores"] == ref.scores
    if ref.top:
        assert got["selected"] in ref.top and got["message"] is None
    else:
        assert got["selected"] is None and got["message"] == ref.message
    assert decision.reason_histogram() == ref.reason_counts


TOPOLOGY_SETTINGS = settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@TOPOLOGY_SETTINGS
@given(topology_cases(random_profile=False))
def test_engine_matches_reference_for_spread_and_affinity_under_the_upstream_default_profile(case):
    check_topology_case(*case)


@TOPOLOGY_SETTINGS
@given(topology_cases(random_profile=True))
def test_engine_matches_reference_for_spread_and_affinity_under_random_profiles(case):
    check_topology_case(*case)


def test_the_index_kept_through_assume_and_forget_equals_a_fresh_load():
    # The incremental path (assume/forget on a live cache) must give the same decisions as a table
    # loaded from scratch with the same pods.
    rng = random.Random(7)
    specs = [random_topology_node(rng, f"n{i}") for i in range(12)]
    live = NodeTable(specs)
    live.objects = random_objects(rng)
    placed: dict[str, tuple[int, PodSpec]] = {}
    profile = upstream_default_profile().build()
    for step in range(60):
        if placed and rng.random() < 0.3:
            key = rng.choice(sorted(placed))
            row, p = placed.pop(key)
            live.pods.remove_pod(row, p)
        else:
            p = random_existing_pod(rng, 1000 + step)
            row = rng.randrange(len(specs))
            live.pods.add_pod(row, p)
            placed[p.key] = (row, p)
        incoming = random_incoming_pod(rng)
        fresh = NodeTable(specs)
        fresh.objects = live.objects
        fresh.pods.load(placed.values())
        a = explain(Algorithm(1).schedule(profile, incoming, live, all_nodes=True), live)
        b = explain(Algorithm(1).schedule(profile, incoming, fresh, all_nodes=True), fresh)
        assert (a["filtered"], a["scores"], a["message"]) == (b["filtered"], b["scores"], b["message"])
