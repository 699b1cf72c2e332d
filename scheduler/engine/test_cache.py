"""The scheduler cache over a NodeTable, one transition per test: assume, forget,
finish_binding and expiry (on an injected clock), confirm."""

from __future__ import annotations

import pytest

from .cache import Cache
from .nodes import NodeSpec, NodeTable
from .pods import Container, HostPort, PodSpec

GI = 1024 * 1024 * 1024


class Clock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_cache(ttl: float = 30.0) -> tuple[Cache, Clock]:
    nodes = NodeTable([NodeSpec(f"n{i}", allocatable={"cpu": 4000, "memory": 4 * GI, "pods": 110}) for i in range(3)])
    clock = Clock()
    return Cache(nodes, ttl=ttl, clock=clock), clock


def pod(name: str = "p", cpu: int = 500, port: int | None = None) -> PodSpec:
    ports = (HostPort(port),) if port else ()
    return PodSpec("default", name, containers=(Container("c", requests={"cpu": cpu, "memory": GI}, ports=ports),))


def usage(cache: Cache, row: int) -> tuple[int, int, int, int, int]:
    t = cache.table
    return (int(t.requested["cpu"][row]), int(t.requested["memory"][row]), int(t.pod_count[row]),
            int(t.nonzero_requested["cpu"][row]), int(t.nonzero_requested["memory"][row]))


EMPTY = (0, 0, 0, 0, 0)


def test_assume_counts_the_pod_against_its_node():
    cache, _ = make_cache()
    cache.assume(pod(port=8080), 1)
    assert usage(cache, 1) == (500, GI, 1, 500, GI)
    assert usage(cache, 0) == EMPTY and usage(cache, 2) == EMPTY
    assert cache.table.ports == {("TCP", 8080): {1: ["0.0.0.0"]}}
    assert cache.node_name("default/p") == "n1"


def test_assume_of_a_pod_without_requests_counts_the_scoring_defaults():
    cache, _ = make_cache()
    cache.assume(PodSpec("default", "p", containers=(Container("c"),)), 0)
    assert usage(cache, 0) == (0, 0, 1, 100, 200 * 1024 * 1024)


def test_forget_gives_the_room_back():
    cache, _ = make_cache()
    cache.assume(pod("a"), 1)
    cache.assume(pod("b", port=80), 1)
    cache.forget("default/b")
    assert usage(cache, 1) == (500, GI, 1, 500, GI)
    assert cache.table.usage_of(1).ports == ()
    assert cache.node_name("default/b") is None
    cache.forget("default/a")
    assert usage(cache, 1) == EMPTY
    assert cache.assumed == {}


def test_forget_of_an_unknown_pod_changes_nothing():
    cache, _ = make_cache()
    cache.assume(pod("a"), 0)
    cache.forget("default/zzz")
    assert usage(cache, 0) == (500, GI, 1, 500, GI)


def test_assuming_the_same_pod_twice_is_rejected_and_counts_it_once():
    cache, _ = make_cache()
    cache.assume(pod(), 0)
    with pytest.raises(ValueError, match="already assumed"):
        cache.assume(pod(), 2)
    assert usage(cache, 0) == (500, GI, 1, 500, GI)
    assert usage(cache, 2) == EMPTY


def test_a_pod_still_binding_never_expires():
    cache, clock = make_cache()
    cache.assume(pod(), 0)
    clock.now += 10_000
    assert cache.cleanup_expired() == []
    assert usage(cache, 0) != EMPTY


def test_finish_binding_starts_the_expiry_clock():
    cache, clock = make_cache(ttl=30)
    cache.assume(pod(), 0)
    cache.finish_binding("default/p")
    assert cache.assumed["default/p"].deadline == 1030.0
    clock.now = 1030.0  # as upstream: expired only once the deadline has passed
    assert cache.cleanup_expired() == []
    assert usage(cache, 0) == (500, GI, 1, 500, GI)
    clock.now = 1030.5
    assert cache.cleanup_expired() == ["default/p"]
    assert usage(cache, 0) == EMPTY
    assert cache.assumed == {}


def test_expiry_takes_only_the_pods_past_their_deadline():
    cache, clock = make_cache(ttl=30)
    cache.assume(pod("early"), 0)
    cache.finish_binding("default/early")
    clock.now += 20
    cache.assume(pod("late"), 0)
    cache.finish_binding("default/late")
    clock.now += 15  # early: 35s after binding, late: 15s
    assert cache.cleanup_expired() == ["default/early"]
    assert usage(cache, 0) == (500, GI, 1, 500, GI)
    assert set(cache.assumed) == {"default/late"}


def test_confirm_keeps_the_pod_counted_but_no_longer_assumed():
    cache, clock = make_cache()
    cache.assume(pod(), 2)
    cache.finish_binding("default/p")
    cache.confirm("default/p")
    assert cache.assumed == {}
    clock.now += 10_000
    assert cache.cleanup_expired() == []
    assert usage(cache, 2) == (500, GI, 1, 500, GI)
    cache.forget("default/p")  # no longer assumed: forget does not touch it
    assert usage(cache, 2) == (500, GI, 1, 500, GI)


def test_finish_binding_of_an_unknown_pod_is_ignored():
    cache, _ = make_cache()
    cache.finish_binding("default/zzz")
    assert cache.assumed == {}
