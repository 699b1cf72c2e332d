"""PodGC's orphan pass on the real stack: a pod bound to a deleted node goes once its node has been missing
for the quarantine time, with upstream's condition, its room and its queue entry handled."""

import pytest

from scheduler.cluster.services import node_delete
from scheduler.controllers import podgc
from scheduler.models import Node, Pod
from scheduler.telemetry import live
from scheduler.testing.loop import apply, drain, node, pod

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


class Heard:
    def __init__(self):
        self.disrupted = []

    def schedule_batch_done(self, attempts, popped):
        pass

    def bind_batch_done(self, bound, refused, now):
        pass

    def pods_disrupted(self, pods):
        self.disrupted += pods


def test_an_orphaned_pod_is_deleted_only_after_its_node_has_been_missing_for_the_quarantine_time(monkeypatch):
    apply(node("a"), node("b", cpu="1"), pod("web", cpu="1"))
    drain()
    on = Pod.objects.get(name="web").node_name
    node_delete(name=on)
    assert podgc.gc(now=100.0, quarantine=40) == {"orphaned": [], "quarantined": [on]}
    assert podgc.gc(now=139.0, quarantine=40)["orphaned"] == []
    heard = Heard()
    monkeypatch.setattr(live, "_subscribers", [heard])
    assert podgc.gc(now=140.0, quarantine=40) == {"orphaned": ["default/web"], "quarantined": []}
    assert not Pod.objects.filter(name="web").exists()
    assert heard.disrupted == [{"namespace": "default", "name": "web", "node": on, "reason": "DeletionByPodGC",
                                "message": "PodGC: node no longer exists"}]


def test_a_node_that_comes_back_within_the_quarantine_keeps_its_pods():
    apply(node("a"), pod("p", nodeName="a"))
    node_delete(name="a")
    podgc.gc(now=0.0, quarantine=40)
    apply(node("a"))
    assert podgc.gc(now=50.0, quarantine=40) == {"orphaned": [], "quarantined": []}
    assert Pod.objects.filter(name="p", node_name="a").exists()


def test_the_condition_is_written_before_the_delete_and_the_surviving_nodes_usage_is_untouched(monkeypatch):
    apply(node("a"), node("b"), pod("x", cpu="1", nodeName="a"), pod("y", cpu="1", nodeName="b"))
    seen = []
    from scheduler.cluster import disruption

    real_delete = disruption.pod_delete

    def spy(*, namespace, name):
        seen.append(Pod.objects.get(namespace=namespace, name=name).manifest["status"])
        return real_delete(namespace=namespace, name=name)

    monkeypatch.setattr(disruption, "pod_delete", spy)
    node_delete(name="a")
    podgc.gc(now=0.0, quarantine=0)
    assert seen[0]["phase"] == "Failed"
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in seen[0]["conditions"]] == [
        ("DisruptionTarget", "True", "DeletionByPodGC", "PodGC: node no longer exists")]
    assert Node.objects.get(name="b").req_cpu == 1000
    assert list(Pod.objects.values_list("name", flat=True)) == ["y"]
