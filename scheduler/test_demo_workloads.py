"""The demo's topology workloads (manage.py run seeds them, scheduler/cluster/simulation.py): the ReplicaSet
"web" spread two per zone, the StatefulSet "cache" one per host, "cache-exporter" on a cache's host (found
through its namespace's labels), and "loner", anti-affine to everything, left pending with upstream's reason."""

import pytest
import yaml
from django.conf import settings

from scheduler.cluster.services import cluster_apply
from scheduler.cluster.simulation import DEMO_NAMESPACE, MONITORING_NAMESPACE, ZONE_KEY, seed_nodes
from scheduler.management.commands.run import seed_workloads
from scheduler.manifests.files import parse_documents
from scheduler.models import ClusterObject, Node, Pod
from scheduler.queue import queues
from scheduler.queue.redis_queue import RedisQueue
from scheduler.telemetry import metrics
from scheduler.testing.loop import drain

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def queue():
    """The shared Redis queue on the real clock: the demo's pods are queued in the order they are applied."""
    queues.reset_queue(RedisQueue(queues.get_redis(), prefix=settings.SCHEDBOARD_QUEUE_PREFIX,
                                  on_incoming=metrics.count_incoming))


def test_the_demo_workloads_load_and_schedule_as_their_constraints_say():
    nodes = seed_nodes()
    cluster_apply(parse_documents(yaml.safe_dump_all(nodes), "<demo>"))
    seed_workloads(nodes)
    assert set(ClusterObject.objects.values_list("kind", "name")) >= {
        ("Namespace", DEMO_NAMESPACE), ("Namespace", MONITORING_NAMESPACE), ("ReplicaSet", "web"), ("StatefulSet", "cache")}
    drain()
    zone = {name: (m["metadata"]["labels"] or {}).get(ZONE_KEY) for name, m in Node.objects.values_list("name", "manifest")}
    placed = dict(Pod.objects.filter(namespace=DEMO_NAMESPACE).values_list("name", "node_name"))

    web = [node for name, node in placed.items() if name.startswith("web-")]
    assert len(web) == 6 and all(web)
    assert sorted(zone[n] for n in web) == ["zone-a", "zone-a", "zone-b", "zone-b", "zone-c", "zone-c"]

    caches = [placed[f"cache-{i}"] for i in range(3)]
    assert all(caches) and len(set(caches)) == 3
    exporter = Pod.objects.get(namespace=MONITORING_NAMESPACE, name="cache-exporter")
    assert exporter.node_name in caches, exporter.scheduled_message

    loner = Pod.objects.get(namespace=DEMO_NAMESPACE, name="loner")
    assert loner.node_name == "" and loner.scheduled_reason == "Unschedulable"
    assert "12 node(s) didn't match pod anti-affinity rules" in loner.scheduled_message, loner.scheduled_message


@pytest.mark.django_db(transaction=True)
def test_the_demo_workloads_are_their_controllers_own_so_the_controllers_run_leaves_them_be(clock):
    from scheduler.controllers import workloads
    from scheduler.management.commands.run import parse_documents_list, seed_workloads
    from scheduler.models import Event, Pod
    from scheduler.cluster.services import cluster_apply
    from scheduler.cluster.simulation import seed_nodes

    nodes = seed_nodes()
    cluster_apply(parse_documents_list(nodes))
    seed_workloads(nodes)
    before = sorted(Pod.objects.values_list("namespace", "name", "uid"))
    assert workloads.sync_all() == {}
    assert sorted(Pod.objects.values_list("namespace", "name", "uid")) == before
    # Nor once they are bound (Running and Ready here): the StatefulSet's pods carry the revision it is at, so
    # its rolling update has nothing to replace.
    from scheduler.testing.loop import drain

    drain(clock)
    clock.advance(60)
    workloads.sync_all()
    assert sorted(Pod.objects.values_list("namespace", "name", "uid")) == before
    assert not Event.objects.filter(reason__in=["FailedCreate", "SuccessfulDelete"]).exists()
