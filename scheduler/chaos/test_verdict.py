"""The verdict's checks, from first principles, on hand-made cases."""

import pytest

from scheduler.chaos.verdict import (ASSUMED_STUCK, BOUND, MISSING, NO_REASON, NOT_QUEUED, PENDING_WITH_REASON,
                                     BindingRecord, PodState, Placed, classify, double_bound, overcommitted,
                                     pending_with_room, recovery)

NODES = {"a": {"cpu": 1000, "memory": 100, "pods": 3}, "g": {"cpu": 1000, "memory": 100, "pods": 3, "example.com/gpu": 1}}


def pod(node, key, cpu=100, memory=10, ports=(), **extra):
    return Placed(node, key, {"cpu": cpu, "memory": memory, "pods": 1, **extra}, tuple(ports))


@pytest.mark.parametrize("placed, found", [
    ([pod("a", "p1", cpu=500), pod("a", "p2", cpu=500)], []),
    ([pod("a", "p1", cpu=600), pod("a", "p2", cpu=500)], [("a", "cpu", 1100)]),
    ([pod("a", "p1", memory=101)], [("a", "memory", 101)]),
    ([pod("a", f"p{i}") for i in range(4)], [("a", "pods", 4)]),
    ([pod("a", "p1", **{"example.com/gpu": 1})], [("a", "example.com/gpu", 1)]),
    ([pod("g", "p1", **{"example.com/gpu": 1}), pod("g", "p2", **{"example.com/gpu": 1})], [("g", "example.com/gpu", 2)]),
    ([pod("a", "p1", ports=[("TCP", 80, "0.0.0.0")]), pod("a", "p2", ports=[("TCP", 80, "10.0.0.1")])],
     [("a", "hostPort TCP/80", 2)]),
    ([pod("a", "p1", ports=[("TCP", 80, "10.0.0.1")]), pod("a", "p2", ports=[("TCP", 80, "10.0.0.2")])], []),
    ([pod("a", "p1", ports=[("TCP", 80, "0.0.0.0")]), pod("a", "p2", ports=[("UDP", 80, "0.0.0.0")])], []),
    ([pod("a", "p1", ports=[("TCP", 80, "0.0.0.0")]), pod("g", "p2", ports=[("TCP", 80, "0.0.0.0")])], []),
    ([pod("gone", "p1")], [("gone", "node", 1)]),
])
def test_a_node_is_overcommitted_when_its_pods_sum_past_its_allocatable_or_clash_on_a_host_port(placed, found):
    assert [(f["node"], f["resource"], f["requested"]) for f in overcommitted(NODES, placed)] == found


@pytest.mark.parametrize("waiting, room", [
    (pod("", "w", cpu=500), "a"),
    (pod("", "w", cpu=900), None),
    (pod("", "w", cpu=100, **{"example.com/gpu": 1}), "g"),
    (pod("", "w", ports=[("TCP", 80, "0.0.0.0")]), "g"),
    (pod("", "w", memory=0, cpu=0), "a"),
])
def test_a_pending_pod_has_room_when_a_node_fits_it_by_the_sum_of_its_pods(waiting, room):
    placed = [pod("a", "p1", cpu=500, ports=[("TCP", 80, "0.0.0.0")]), pod("g", "p2", cpu=800)]
    found = pending_with_room(NODES, placed, [waiting])
    assert [f["node"] for f in found] == ([room] if room else [])


@pytest.mark.parametrize("state, category", [
    (PodState(exists=True, bound=True), BOUND),
    (PodState(exists=True, condition_status="False", condition_reason="Unschedulable",
              condition_message="0/3 nodes are available", queued=True), PENDING_WITH_REASON),
    (PodState(exists=False), MISSING),
    (PodState(exists=True, assumed=True, condition_status="False", condition_reason="SchedulerError",
              condition_message="x", queued=True), ASSUMED_STUCK),
    (PodState(exists=True, queued=True), NO_REASON),
    (PodState(exists=True, condition_status="False", condition_reason="Unschedulable", queued=True), NO_REASON),
    (PodState(exists=True, condition_status="False", condition_reason="Unschedulable",
              condition_message="0/3 nodes are available", queued=False), NOT_QUEUED),
])
def test_a_pod_is_lost_unless_bound_or_pending_and_queued_with_a_reason(state, category):
    assert classify(state) == category


def test_a_pod_is_double_bound_with_two_binding_records_or_a_record_naming_another_node():
    records = [BindingRecord("u1", "ns/a", "n1"), BindingRecord("u2", "ns/b", "n1"), BindingRecord("u2", "ns/b", "n2"),
               BindingRecord("u3", "ns/c", "n1"), BindingRecord("u4", "ns/gone", "n1")]
    found = double_bound(records, {"ns/a": "n1", "ns/b": "n2", "ns/c": "n3"})
    assert [(f["uid"], f["why"]) for f in found] == [("u2", "2 binding records"),
                                                       ("u3", "bound to a node other than its binding record's")]


def steady(start, end, rate):
    return [start + i / rate for i in range(int((end - start) * rate))]


def test_a_fault_that_changes_nothing_recovers_within_one_window():
    times = steady(0, 60, 10)
    assert recovery(times, 30.0, until=60) == {"pre_rate_per_s": 10.0, "recovery_s": 2.0, "first_binding_s": 0.0}


def test_recovery_counts_from_the_fault_to_the_end_of_the_first_window_back_at_half_the_rate():
    times = steady(0, 30, 10) + steady(38, 60, 10)  # nothing bound for 8 s after the fault
    measured = recovery(times, 30.0, until=60)
    assert measured["first_binding_s"] == 8.0
    assert 8.9 <= measured["recovery_s"] <= 9.1  # half of a 2 s window filled one second in


def test_with_nothing_bound_before_the_fault_recovery_is_the_first_binding_and_none_without_one():
    assert recovery([5.0, 6.0], 2.0, until=10)["recovery_s"] == 3.0
    assert recovery(steady(0, 10, 5), 10.0, until=30)["recovery_s"] is None
