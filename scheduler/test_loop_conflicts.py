"""A lost reservation race in the loop: the pod is placed again, and the loss is counted in
schedboard_reservation_conflicts_total (what `bench --workers 1,2,4` reports as the conflict rate)."""

import pytest

from scheduler.loop import schedule
from scheduler.models import Attempt, Pod
from scheduler.testing.loop import apply, drain, node, pod
from scheduler.testing.metrics import counters

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]

CONFLICTS = "schedboard_reservation_conflicts_total"


def _conflicts() -> float:
    return counters().get_sample_value(CONFLICTS) or 0.0


def test_a_reservation_lost_to_another_placement_is_counted_and_the_pod_placed_on_another_node(monkeypatch):
    apply(node("a", cpu="1"), node("b", cpu="1"), pod("web", cpu="1"))
    real = schedule._DbCluster.reserve_many
    taken = []

    def another_worker_first(self, placements):
        if not taken:  # between this worker's snapshot and its reservation, a pod arrives bound on the chosen node
            taken.append(placements[0][1])
            apply({**pod("intruder", cpu="1"), "spec": {**pod("intruder", cpu="1")["spec"], "nodeName": taken[0]}})
        return real(self, placements)

    monkeypatch.setattr(schedule._DbCluster, "reserve_many", another_worker_first)
    before = _conflicts()
    drain()
    web = Pod.objects.get(name="web")
    assert web.node_name and web.node_name != taken[0]
    assert _conflicts() - before == 1
    assert list(Attempt.objects.filter(pod_name="web").values_list("result", flat=True)) == ["scheduled"]


def test_a_batch_without_races_counts_no_conflict():
    apply(node("a"), *[pod(f"p{i}", cpu="100m") for i in range(5)])
    before = _conflicts()
    drain()
    assert Pod.objects.exclude(node_name="").count() == 5
    assert _conflicts() == before
