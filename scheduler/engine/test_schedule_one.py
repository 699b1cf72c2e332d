"""schedule_one (skip, schedule and assume, report an unschedulable pod) and schedule_batch against
a fake Cluster port (reserve, lose the race, forget, refresh and retry, give up)."""

from __future__ import annotations

from .cache import Cache
from .config import default_profile
from .framework import Algorithm
from .nodes import NodeSpec, NodeTable, NodeUsage
from .pods import Container, PodSpec
from .schedule_one import (
    ERROR,
    GONE,
    MAX_RESERVE_CONFLICTS,
    SCHEDULED,
    SKIPPED,
    UNSCHEDULABLE,
    ReserveOutcome,
    schedule_batch,
    schedule_one,
)

GI = 1024 * 1024 * 1024


class FakeCluster:
    """Answers reserve_many() from a script of lost pod keys per call (nothing lost once it runs
    out) and records every call."""

    def __init__(self, conflicts=(), gone=(), full_after_conflict: bool = False):
        self.conflicts = [set(c) for c in conflicts]
        self.gone = [set(g) for g in gone]
        self.full_after_conflict = full_after_conflict
        self.reserved: list[list[tuple[str, str]]] = []
        self.refreshed: list[set[str]] = []

    def reserve_many(self, placements: list[tuple[PodSpec, str]]) -> ReserveOutcome:
        self.reserved.append([(p.key, node) for p, node in placements])
        conflicts = self.conflicts.pop(0) if self.conflicts else set()
        gone = self.gone.pop(0) if self.gone else set()
        keys = {p.key for p, _ in placements}
        return ReserveOutcome(conflicts=conflicts & keys, gone=gone & keys)

    def refresh_nodes(self, cache: Cache, node_names: set[str]) -> None:
        self.refreshed.append(set(node_names))
        if self.full_after_conflict:
            # Another worker took the whole node: that is what the shared state now says.
            for name in node_names:
                cache.table.set_row_usage(cache.table.index[name],
                                          NodeUsage(requested={"cpu": 4000, "pods": 1}, nonzero_cpu=4000))


def setup(n: int = 2, cpu: int = 4000) -> tuple[Cache, Algorithm]:
    nodes = NodeTable([NodeSpec(f"n{i}", allocatable={"cpu": cpu, "memory": 8 * GI, "pods": 110}) for i in range(n)])
    return Cache(nodes), Algorithm(seed=1)


def pod(name: str = "p", cpu: int = 1000, deleting: bool = False) -> PodSpec:
    return PodSpec("default", name, deleting=deleting, containers=(Container("c", requests={"cpu": cpu}),))


PROFILE = default_profile().build()


def run(p: PodSpec, cache: Cache, algorithm: Algorithm):
    return schedule_one(p, profile=PROFILE, algorithm=algorithm, cache=cache)


def batch(pods: list[PodSpec], cache: Cache, algorithm: Algorithm, cluster: FakeCluster):
    return schedule_batch([(p, PROFILE) for p in pods], algorithm=algorithm, cache=cache, cluster=cluster)


# ---- schedule_one ------------------------------------------------------------------------------

def test_it_skips_a_pod_being_deleted():
    cache, algorithm = setup()
    result = run(pod("gone", deleting=True), cache, algorithm)
    assert result.status == SKIPPED
    assert result.message == "skip schedule deleting pod: default/gone"
    assert result.decision is None
    assert cache.assumed == {}


def test_a_scheduled_pod_is_assumed_in_the_cache():
    cache, algorithm = setup()
    result = run(pod(), cache, algorithm)
    assert result.status == SCHEDULED
    assert result.node_name in ("n0", "n1")
    assert result.conflicts == 0 and result.message == ""
    assert cache.node_name("default/p") == result.node_name
    row = cache.table.index[result.node_name]
    assert int(cache.table.requested["cpu"][row]) == 1000
    assert int(cache.table.requested["cpu"].sum()) == 1000


def test_an_unschedulable_pod_returns_the_fit_error():
    cache, algorithm = setup(cpu=500)
    result = run(pod(cpu=1000), cache, algorithm)
    assert result.status == UNSCHEDULABLE
    # The default profile's PostFilter (DefaultPreemption) adds its part: 1 cpu fits neither node even emptied.
    assert result.message == ("0/2 nodes are available: 2 Insufficient cpu. "
                              "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
    assert result.message == result.decision.fit_error_message()
    assert cache.assumed == {}


def test_the_next_cycle_sees_the_room_the_last_one_took():
    cache, algorithm = setup(n=2, cpu=1500)
    first = run(pod("a"), cache, algorithm)
    second = run(pod("b"), cache, algorithm)
    third = run(pod("c"), cache, algorithm)
    assert {first.node_name, second.node_name} == {"n0", "n1"}
    assert third.status == UNSCHEDULABLE
    assert third.message == ("0/2 nodes are available: 2 Insufficient cpu. "
                             "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.")


# ---- schedule_batch: reservations ----------------------------------------------------------------

def test_a_batch_reserves_every_placement_in_one_call():
    cache, algorithm = setup()
    cluster = FakeCluster()
    results = batch([pod("a"), pod("b", deleting=True), pod("c")], cache, algorithm, cluster)
    assert [r.status for r in results] == [SCHEDULED, SKIPPED, SCHEDULED]
    assert cluster.reserved == [[("default/a", results[0].node_name), ("default/c", results[2].node_name)]]
    assert cluster.refreshed == []
    assert set(cache.assumed) == {"default/a", "default/c"}


def test_a_lost_reservation_forgets_refreshes_and_retries():
    cache, algorithm = setup()
    cluster = FakeCluster(conflicts=[{"default/p"}], full_after_conflict=True)
    [result] = batch([pod()], cache, algorithm, cluster)
    lost = cluster.reserved[0][0][1]
    assert result.status == SCHEDULED
    assert result.conflicts == 1
    assert cluster.refreshed == [{lost}]
    # The refreshed node is full now, so the retry goes to the other one.
    assert result.node_name != lost
    assert cluster.reserved[1] == [("default/p", result.node_name)]
    # Assumed once, on the winning node; the lost node shows only what the refresh loaded.
    assert cache.node_name("default/p") == result.node_name
    assert int(cache.table.requested["cpu"][cache.table.index[result.node_name]]) == 1000
    assert int(cache.table.requested["cpu"][cache.table.index[lost]]) == 4000


def test_it_gives_up_after_max_reserve_conflicts_retries():
    cache, algorithm = setup()
    cluster = FakeCluster(conflicts=[{"default/p"}] * 10)
    [result] = batch([pod()], cache, algorithm, cluster)
    assert result.status == ERROR
    # The first try and MAX_RESERVE_CONFLICTS retries all lost.
    assert len(cluster.reserved) == MAX_RESERVE_CONFLICTS + 1
    assert len(cluster.refreshed) == MAX_RESERVE_CONFLICTS
    assert result.conflicts == MAX_RESERVE_CONFLICTS + 1
    assert result.message == f"lost the reservation race {MAX_RESERVE_CONFLICTS + 1} times"
    # Every assumption was forgotten: the cache holds nothing for the pod.
    assert cache.assumed == {}
    assert int(cache.table.requested["cpu"].sum()) == 0


def test_a_pod_gone_meanwhile_is_forgotten_and_not_retried():
    cache, algorithm = setup()
    cluster = FakeCluster(gone=[{"default/a"}])
    results = batch([pod("a"), pod("b")], cache, algorithm, cluster)
    assert [r.status for r in results] == [GONE, SCHEDULED]
    assert len(cluster.reserved) == 1 and cluster.refreshed == []
    assert set(cache.assumed) == {"default/b"}
    assert int(cache.table.requested["cpu"].sum()) == 1000


def test_an_unschedulable_pod_in_a_batch_is_not_reserved():
    cache, algorithm = setup(cpu=500)
    cluster = FakeCluster()
    [result] = batch([pod(cpu=1000)], cache, algorithm, cluster)
    assert result.status == UNSCHEDULABLE
    assert result.message.startswith("0/2 nodes are available: 2 Insufficient cpu. preemption: ")
    assert cluster.reserved == []


class _Explodes:
    """A filter plugin with a bug that only one pod triggers."""

    name = "Explodes"

    def __init__(self, inner, victim: str):
        self.inner, self.victim = inner, victim

    def filter(self, pod, nodes):
        if pod.name == self.victim:
            raise ZeroDivisionError("division by zero")
        return self.inner.filter(pod, nodes)


def test_a_pod_whose_cycle_raises_fails_alone_and_the_rest_of_the_batch_is_placed():
    import dataclasses

    cache, algorithm = setup(n=2)
    profile = dataclasses.replace(PROFILE, filters=[_Explodes(PROFILE.filters[-1], "bad"), *PROFILE.filters[:-1]])
    cluster = FakeCluster()
    pods = [pod("a"), pod("bad"), pod("b")]

    results = schedule_batch([(p, profile) for p in pods], algorithm=algorithm, cache=cache, cluster=cluster)

    assert [r.status for r in results] == [SCHEDULED, ERROR, SCHEDULED]
    assert results[1].message == "internal error scheduling the pod: ZeroDivisionError: division by zero"
    assert "default/bad" not in cache.assumed
    assert [key for key, _ in cluster.reserved[0]] == ["default/a", "default/b"]


def test_a_pod_whose_reservation_raises_fails_alone_with_the_reason():
    cache, algorithm = setup()

    class ReserveRaisesFor(FakeCluster):
        def reserve_many(self, placements):
            out = super().reserve_many(placements)
            out.errors = {"default/bad": "internal error reserving the pod on node n0: TypeError: bad row"}
            return out

    results = batch([pod("a"), pod("bad")], cache, algorithm, ReserveRaisesFor())

    assert [r.status for r in results] == [SCHEDULED, ERROR]
    assert results[1].message == "internal error reserving the pod on node n0: TypeError: bad row"
    assert "default/bad" not in cache.assumed and "default/a" in cache.assumed
