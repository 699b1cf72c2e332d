"""The kubernetes mirror's path for a gated pod. The tests' kube-apiserver v1.20.2 predates
spec.schedulingGates (1.26) and drops the field as unknown, so this feeds the mirror the pod as a current
API server returns it (gates kept, PodScheduled=False/SchedulingGated set by the API server at creation):
the mirror queues every pending pod; the loop holds a gated one unattempted; the update that removes its
last gate queues it and it binds."""

import copy

import pytest

from scheduler.kube.mirror import pod_upsert
from scheduler.models import Attempt, Event, Pod
from scheduler.queue import queues
from scheduler.state.gated import gated_count
from scheduler.testing.loop import apply, drain, node

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]

MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
GATED = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "gated", "namespace": "default", "uid": "uid-gated", "resourceVersion": "10",
                 "creationTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {"schedulerName": "default-scheduler", "schedulingGates": [{"name": "example.com/quota"}],
             "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "500m"}}}]},
    "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated", "message": MESSAGE,
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
}


def test_a_mirrored_gated_pod_waits_unattempted_and_binds_once_its_gate_is_removed():
    apply(node("node-a"))
    pod_upsert(copy.deepcopy(GATED), queue=queues.get_queue())
    drain()
    row = Pod.objects.get(name="gated")
    assert (row.node_name, row.scheduled_status, row.scheduled_reason, row.scheduled_message) == (
        "", "False", "SchedulingGated", MESSAGE)
    assert row.attempts == 0 and not Attempt.objects.exists() and not Event.objects.exists()
    assert gated_count() == 1 and row.queued_at is None  # time gated is not scheduling latency
    pod_upsert(copy.deepcopy(GATED), queue=queues.get_queue())  # a status-only update: still held
    drain()
    assert not Attempt.objects.exists()
    ungated = copy.deepcopy(GATED)
    del ungated["spec"]["schedulingGates"]
    ungated["metadata"]["resourceVersion"] = "11"
    pod_upsert(ungated, queue=queues.get_queue())  # the update (a patch on the cluster) removing the last gate
    assert Pod.objects.get(name="gated").queued_at is not None
    assert Pod.objects.get(name="gated").ungated_at is not None  # when, for the rewind
    assert gated_count() == 0 and queues.get_queue().lengths().get("active", 0) == 1
    drain()
    row = Pod.objects.get(name="gated")
    assert row.node_name == "node-a" and row.scheduled_status == "True"
    assert Attempt.objects.get(pod_name="gated").result == "scheduled"


def test_another_schedulers_gated_pod_is_not_ours_to_count():
    other = copy.deepcopy(GATED)
    other["spec"]["schedulerName"] = "other-scheduler"
    pod_upsert(other, queue=queues.get_queue())
    assert Pod.objects.get(name="gated").scheduled_reason == "SchedulingGated"  # as the API server set it
    assert gated_count({"default-scheduler"}) == 0 and gated_count() == 1


def test_the_watch_batch_path_stamps_when_the_last_gate_went():
    from django.db import transaction

    from scheduler.kube.pod_batch import pods_apply_batch

    ungated = copy.deepcopy(GATED)
    del ungated["spec"]["schedulingGates"]
    ungated["metadata"]["resourceVersion"] = "11"
    with transaction.atomic():
        pods_apply_batch([("ADDED", copy.deepcopy(GATED)), ("MODIFIED", ungated)], queue=queues.get_queue(),
                         ours={"default-scheduler"}, apply_one=lambda *a: pytest.fail(f"slow path: {a}"))
    row = Pod.objects.get(name="gated")
    assert row.ungated_at is not None and not row.manifest["spec"].get("schedulingGates")
