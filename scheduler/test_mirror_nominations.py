"""The kubernetes mirror and a pod's nomination, as upstream's nominator takes a pod update
(updateNominatedPodUnlocked): a nomination the API server's copy adds, changes or removes is what counts; with
none in the old copy nor in the new one, the one our worker made stays (its patch has not come back: the event
raced it). One event at a time and in a watch batch alike."""

import copy

import pytest
from django.db import transaction

from scheduler.kube.mirror import PodStore
from scheduler.models import Pod
from scheduler.queue import queues
from scheduler.state.nominations import nominations_write
from scheduler.testing.loop import apply, node
from scheduler.versions.profiles import scheduler_names

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def kpod(nominated=None, version=1):
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "vip", "namespace": "default", "uid": "uid-vip", "resourceVersion": str(version),
                        "creationTimestamp": "2026-12-01T00:00:00Z"},
           "spec": {"schedulerName": "default-scheduler", "priority": 1000,
                    "containers": [{"name": "c", "image": "app:1", "resources": {"requests": {"cpu": "2"}}}]},
           "status": {"phase": "Pending"}}
    if nominated:
        obj["status"]["nominatedNodeName"] = nominated
    return obj


# (the API server's copies in order, our worker's nomination made after the first (or None), what counts after)
CASES = {
    "the API server's copy gains one": ([kpod(), kpod("node-a", 2)], None, "node-a"),
    "it changes": ([kpod("node-a"), kpod("node-b", 2)], None, "node-b"),
    "the API server removes it (another scheduler, a user, our own clear)": ([kpod("node-a"), kpod(None, 2)], None, ""),
    "an event without one races our nomination": ([kpod(), kpod(None, 2)], "node-a", "node-a"),
    "our patch comes back": ([kpod(), kpod(None, 2), kpod("node-a", 3)], "node-a", "node-a"),
    "then the API server removes it": ([kpod(), kpod("node-a", 2), kpod(None, 3)], "node-a", ""),
}


def mirror(events, ours, batch):
    store = PodStore(queue=queues.get_queue())
    first, *rest = events
    store.apply("ADDED", copy.deepcopy(first))
    if ours:  # the worker's nomination, as the failed attempt's batch writes it on this backend
        nominations_write([(Pod.objects.get(name="vip").pk, ours)], in_manifest=False)
    updates = [("MODIFIED", copy.deepcopy(e)) for e in rest]
    if batch:
        store.apply_many(updates)
    else:
        for event_type, obj in updates:
            with transaction.atomic():
                store._apply(event_type, obj, scheduler_names())
    return Pod.objects.get(name="vip").nominated_node


@pytest.mark.parametrize("batch", [False, True], ids=["one event at a time", "a watch batch"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_mirror_keeps_a_pods_nomination_as_upstreams_nominator_does(case, batch):
    apply(node("node-a"), node("node-b"))
    events, ours, expected = CASES[case]
    assert mirror(events, ours, batch) == expected


def test_a_nomination_on_a_mirrored_cluster_leaves_the_api_servers_copy_as_it_is():
    apply(node("node-a"))
    PodStore(queue=queues.get_queue()).apply("ADDED", kpod())
    row = Pod.objects.get(name="vip")
    nominations_write([(row.pk, "node-a")], in_manifest=False)
    row.refresh_from_db()
    assert row.nominated_node == "node-a" and "nominatedNodeName" not in row.manifest["status"]
