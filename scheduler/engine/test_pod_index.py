"""The pod index keeps per-node match counts and existing pods' terms exact under assume / forget,
bulk loads, row replacement and copies; the cluster objects derive the default spreading selector."""

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine import pod_index
from scheduler.engine.cache import Cache
from scheduler.engine.cluster_objects import ClusterObjects
from scheduler.engine.labels import LabelSelector, LabelSelectorRequirement, as_selector
from scheduler.engine.nodes import NodeSpec, NodeTable
from scheduler.engine.pod_info import pod_info
from scheduler.engine.pod_index import PodIndex
from scheduler.engine.pods import OwnerReference, PodAffinity, PodAffinityTerm, PodSpec

SELECTORS = [as_selector(s) for s in (
    LabelSelector.of({"app": "a"}), LabelSelector.of({"app": "b"}),
    LabelSelector.of(match_expressions=[LabelSelectorRequirement("tier", "Exists")]),
    LabelSelector.of(match_expressions=[LabelSelectorRequirement("app", "NotIn", ("a",))]),
)]
ANTI = PodAffinity(required=(PodAffinityTerm("zone", LabelSelector.of({"app": "a"})),))


def random_pod(rng, i):
    labels = {}
    if rng.random() < 0.8:
        labels["app"] = rng.choice("ab")
    if rng.random() < 0.4:
        labels["tier"] = rng.choice(["web", "db"])
    return PodSpec(rng.choice(["ns1", "ns2"]), f"p{i}", labels=labels, deleting=rng.random() < 0.1,
                   pod_anti_affinity=ANTI if rng.random() < 0.3 else None)


def brute_force(placed, n, ns, selector):
    out = np.zeros(n, dtype=np.int64)
    for row, p in placed.values():
        if p.namespace == ns and not p.deleting and selector.matches(p.labels):
            out[row] += 1
    return out


def ask(index, ns, selector):
    return index.count(("spread", ns, selector.key), frozenset((ns,)),
                       lambda pod_ns, labels, deleting: not deleting and selector.matches(labels))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_counts_stay_exact_through_any_sequence_of_adds_and_removes(seed):
    rng = random.Random(seed)
    n = 6
    index = PodIndex(n)
    placed: dict[str, tuple[int, PodSpec]] = {}
    for step in range(120):
        if placed and rng.random() < 0.35:
            key = rng.choice(sorted(placed))
            row, p = placed.pop(key)
            index.remove_pod(row, p)
        else:
            p = random_pod(rng, step)
            row = rng.randrange(n)
            index.add_pod(row, p)
            placed[p.key] = (row, p)
        if rng.random() < 0.3:  # queries asked now are then kept up to date by later changes
            ns, sel = rng.choice(["ns1", "ns2"]), rng.choice(SELECTORS)
            assert list(ask(index, ns, sel)) == list(brute_force(placed, n, ns, sel))
    for ns in ("ns1", "ns2"):
        for sel in SELECTORS:
            assert list(ask(index, ns, sel)) == list(brute_force(placed, n, ns, sel))
    # Existing pods' anti-affinity terms, by term: the term names the pod's own namespace.
    for ns in ("ns1", "ns2"):
        want = sorted(row for row, p in placed.values() if p.pod_anti_affinity is not None and p.namespace == ns)
        term = pod_info(PodSpec(ns, "x", pod_anti_affinity=ANTI)).required_anti_affinity[0]
        rows = index.required_anti_affinity.get(term)
        got = sorted(np.repeat(*rows.arrays()).tolist()) if rows is not None else []
        assert got == want
    assert index.pods_with_required_anti_affinity == sum(p.pod_anti_affinity is not None for _, p in placed.values())


def test_an_evicted_query_is_rebuilt_exactly(monkeypatch):
    monkeypatch.setattr(pod_index, "MAX_QUERIES", 2)
    index = PodIndex(2)
    index.add_pod(0, PodSpec("ns1", "a", labels={"app": "a"}))
    for sel in SELECTORS:  # three questions push the first out
        ask(index, "ns1", sel)
    index.add_pod(1, PodSpec("ns1", "b", labels={"app": "a"}))
    assert list(ask(index, "ns1", SELECTORS[0])) == [1, 1]


def test_assume_and_forget_through_the_cache_update_the_index():
    table = NodeTable([NodeSpec("n0"), NodeSpec("n1")])
    cache = Cache(table)
    p = PodSpec("ns1", "web-1", labels={"app": "a"})
    before = ask(table.pods, "ns1", SELECTORS[0]).copy()
    cache.assume(p, 1)
    assert list(ask(table.pods, "ns1", SELECTORS[0])) == [0, 1] and list(before) == [0, 0]
    cache.forget(p.key)
    assert list(ask(table.pods, "ns1", SELECTORS[0])) == [0, 0]


def test_a_copied_table_has_its_own_index():
    table = NodeTable([NodeSpec("n0"), NodeSpec("n1")])
    table.add_pod(0, PodSpec("ns1", "a", labels={"app": "a"}, pod_anti_affinity=ANTI))
    dry = table.copy()
    dry.add_pod(1, PodSpec("ns1", "b", labels={"app": "a"}, pod_anti_affinity=ANTI))
    assert list(ask(table.pods, "ns1", SELECTORS[0])) == [1, 0]
    assert list(ask(dry.pods, "ns1", SELECTORS[0])) == [1, 1]
    assert table.pods.pods_with_required_anti_affinity == 1 and dry.pods.pods_with_required_anti_affinity == 2


def test_bulk_load_and_row_replacement_replace_what_was_there():
    index = PodIndex(3)
    index.add_pod(0, PodSpec("ns1", "old", labels={"app": "a"}))
    index.load([(1, PodSpec("ns1", "x", labels={"app": "a"})), (2, PodSpec("ns1", "y", labels={"app": "a"}))])
    assert list(ask(index, "ns1", SELECTORS[0])) == [0, 1, 1]
    index.set_row(2, [PodSpec("ns1", "z", labels={"app": "b"})])
    assert list(ask(index, "ns1", SELECTORS[0])) == [0, 1, 0]
    assert sorted(index.pods()) == [("ns1/x", 1), ("ns1/z", 2)]


def test_adding_a_pod_again_moves_it():
    index = PodIndex(2)
    p = PodSpec("ns1", "a", labels={"app": "a"})
    index.add_pod(0, p)
    index.add_pod(1, p)
    assert list(ask(index, "ns1", SELECTORS[0])) == [0, 1] and len(index) == 1


# ---- the default spreading selector (helper.DefaultSelector) ---------------------------------------

def test_the_default_selector_merges_the_services_selecting_the_pod():
    objects = ClusterObjects(services={"ns": [{"app": "web"}, {"tier": "fe"}, {"app": "db"}, None]})
    pod = PodSpec("ns", "p", labels={"app": "web", "tier": "fe"})
    assert objects.default_selector(pod) == as_selector(LabelSelector.of({"app": "web", "tier": "fe"}))
    assert objects.default_selector(PodSpec("other", "p", labels={"app": "web"})).empty()


def test_the_default_selector_adds_the_owning_replicaset_or_statefulset_selector():
    rs = LabelSelector.of(match_expressions=[LabelSelectorRequirement("app", "Exists")])
    objects = ClusterObjects(replica_sets={("ns", "rs1"): rs}, stateful_sets={("ns", "db"): LabelSelector.of({"db": "x"})},
                             replication_controllers={("ns", "rc"): {"legacy": "y"}})
    owned = lambda kind, name, api="apps/v1": PodSpec(  # noqa: E731
        "ns", "p", labels={"app": "x"}, owner_references=(OwnerReference(api, kind, name, controller=True),))
    assert objects.default_selector(owned("ReplicaSet", "rs1")) == as_selector(rs)
    assert objects.default_selector(owned("StatefulSet", "db")) == as_selector(LabelSelector.of({"db": "x"}))
    assert objects.default_selector(owned("ReplicationController", "rc", "v1")) == as_selector(LabelSelector.of({"legacy": "y"}))
    # A missing owner, another API group or a non-controller reference adds nothing.
    assert objects.default_selector(owned("ReplicaSet", "rs2")).empty()
    assert objects.default_selector(owned("ReplicaSet", "rs1", "extensions/v1beta1")).empty()
    not_controller = PodSpec("ns", "p", owner_references=(OwnerReference("apps/v1", "ReplicaSet", "rs1"),))
    assert objects.default_selector(not_controller).empty()


def test_empty_groups_are_swept_once_they_are_many(monkeypatch):
    monkeypatch.setattr(pod_index, "SWEEP_EMPTY_GROUPS", 3)
    index = PodIndex(2)
    ask(index, "ns1", SELECTORS[0])
    for i in range(6):  # each pod its own labels, gone again: six empty groups, swept past three
        p = PodSpec("ns1", f"s{i}", labels={"app": "a", "statefulset.kubernetes.io/pod-name": f"s{i}"})
        index.add_pod(i % 2, p)
        index.remove_pod(i % 2, p)
    assert len(index._groups) < 6
    keep = PodSpec("ns1", "keep", labels={"app": "a"})
    index.add_pod(1, keep)
    assert list(ask(index, "ns1", SELECTORS[0])) == [0, 1]
