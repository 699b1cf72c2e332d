"""One bad pod never stops its batch (real Postgres and Redis): a pod whose spec cannot be read, whose
reservation or binding raises, or whose rows the database refuses fails alone, with a FailedScheduling
event saying what is wrong, PodScheduled=False/SchedulerError and a backoff; the rest of its batch is
bound. The bad rows are written directly: `apply` refuses most of them."""

import pytest
from django.conf import settings
from django.utils import timezone

from scheduler import loop
from scheduler.queue import queues
from scheduler.state import topology_claims
from scheduler.backends import reset_backend, set_backend
from scheduler.backends.errors import BindError
from scheduler.models import Attempt, Binding, Event, Node, Pod
from scheduler.queue.redis_queue import RedisQueue
from scheduler.testing.loop import FakeClock, apply, node, pod
from scheduler.backends.simulated import SimulatedBackend

pytestmark = pytest.mark.django_db(transaction=True)

BATCH = 30


@pytest.fixture(autouse=True)
def clock():
    """The shared Redis queue on a hand-moved clock (as test_loop.py): a backoff lasts until the test says."""
    c = FakeClock()
    queues.reset_queue(RedisQueue(queues.get_redis(), prefix=settings.SCHEDBOARD_QUEUE_PREFIX, clock=c))
    return c


def cluster_with_a_bad_pod(bad="bad", extended=None):
    big = node("big", cpu="64", memory="64Gi")
    big["status"]["allocatable"].update(extended or {})
    apply(big, *(pod(f"good-{i}", cpu="100m", memory="64Mi") for i in range(BATCH - 1)), pod(bad, cpu="100m", memory="64Mi"))


def spoil(name, change):
    """Write a pod row directly (past every check), as a bug or a hand in the database could."""
    row = Pod.objects.get(name=name)
    manifest = row.manifest
    change(manifest, row)
    Pod.objects.filter(pk=row.pk).update(manifest=manifest, **getattr(row, "_columns", {}))


def assert_isolated(bad, message_part):
    good = Pod.objects.exclude(name=bad)
    assert good.count() == BATCH - 1 and not good.filter(node_name="").exists(), "the rest of the batch is bound"
    row = Pod.objects.get(name=bad)
    assert row.node_name == "" and row.assumed_node == ""
    assert (row.scheduled_status, row.scheduled_reason) == ("False", "SchedulerError")
    assert message_part in row.scheduled_message
    events = list(Event.objects.filter(involved_name=bad, reason="FailedScheduling").values_list("message", flat=True))
    assert events and all(message_part in e for e in events)
    info = queues.get_queue().get(f"default/{bad}")
    assert info is not None and info.queue == "backoff"  # as an internal error upstream: backoff, not dropped
    big = Node.objects.get(name="big")
    assert big.req_pods == BATCH - 1 and big.req_cpu == 100 * (BATCH - 1)  # nothing leaked, nothing lost


def drain_once():
    """Schedule and bind what is active (one or two batches), without waiting out backoffs."""
    for _ in range(3):
        loop.reconcile()
        if not loop.run_schedule_task().popped:
            return


# ---- schedule -----------------------------------------------------------------------------------------

def test_a_pod_whose_stored_spec_cannot_be_read_fails_alone():
    cluster_with_a_bad_pod()
    spoil("bad", lambda m, row: m["spec"].update(containers=5))

    drain_once()

    assert_isolated("bad", "the pod's spec cannot be read: spec.containers: ")
    assert Attempt.objects.get(pod_name="bad").result == "error"


def test_a_pod_whose_reservation_raises_fails_alone():
    gpu = "example.com/gpu"
    cluster_with_a_bad_pod(extended={gpu: "4"})
    # The spec asks for a GPU; the row that the reservation reads holds garbage.
    spoil("bad", lambda m, row: m["spec"]["containers"][0]["resources"].update(
        requests={"cpu": "100m", "memory": "64Mi", gpu: "1"}, limits={gpu: "1"}))
    Pod.objects.filter(name="bad").update(req_scalar={gpu: "one"})

    drain_once()

    assert_isolated("bad", "internal error reserving the pod on node big: TypeError")
    assert Node.objects.get(name="big").req_scalar == {}


def test_a_pod_changed_between_the_batch_read_and_the_claim_is_reserved_with_its_new_requests(monkeypatch):
    apply(node("node-a", cpu="4"), pod("web", cpu="1"))
    real = topology_claims.reserve_many

    def changed_first(placements, **kwargs):
        apply(pod("web", cpu="2"))  # the requests change after the worker read the row
        monkeypatch.setattr(topology_claims, "reserve_many", real)
        return real(placements, **kwargs)

    monkeypatch.setattr(topology_claims, "reserve_many", changed_first)

    drain_once()

    web = Pod.objects.get(name="web")
    assert web.node_name == "node-a" and web.req_cpu == 2000
    assert Node.objects.get(name="node-a").req_cpu == 2000  # the room taken is what the pod now asks for


# ---- bind ---------------------------------------------------------------------------------------------

def annotations(value):
    def change(manifest, row):
        manifest["metadata"]["annotations"] = value
    return change


def uid_bound_before():
    """The pod's uid was bound once already (a deleted pod's Binding stays for the audit; the same uid
    re-applied from a `kubectl get -o yaml` dump): the audit's one-binding-per-uid refuses a second."""
    def change(manifest, row):
        Binding.objects.create(namespace="old", pod_name="gone", pod_uid=manifest["metadata"]["uid"],
                               node_name="node-a", bound_at=timezone.now())
    return change


@pytest.mark.parametrize("spoiled, message_part", [
    (annotations(5), "metadata.annotations: must be a map of string to string, got int"),
    (annotations(["a", "b"]), "metadata.annotations: must be a map of string to string, got list"),
    (uid_bound_before(), 'UniqueViolation: duplicate key value violates unique constraint "binding_once_per_pod_uid"'),
], ids=["annotations-5", "annotations-list", "uid-bound-before"])
def test_a_pod_whose_binding_raises_fails_alone_and_the_rest_of_its_batch_is_bound(spoiled, message_part):
    cluster_with_a_bad_pod(bad="z-bad")  # last in its batch: the others are bound in the same batch
    spoil("z-bad", spoiled)

    drain_once()

    assert_isolated("z-bad", message_part)
    assert Binding.objects.filter(namespace="default").count() == BATCH - 1
    assert Attempt.objects.get(pod_name="z-bad").result == "bind_failed"


class RaisesFor(SimulatedBackend):
    """The simulated backend, except that its binding of one pod raises what no backend should (a bug)."""

    def __init__(self, bad):
        self.bad = bad

    def bind(self, *, pod_manifest, node_name, **kwargs):
        if pod_manifest["metadata"]["name"] == self.bad:
            raise RuntimeError("a bug in the backend")
        if pod_manifest["metadata"]["name"] == "refused":
            raise BindError("the API said no")

    def hand_off(self, items):
        loop.bind_batch(items)


def test_a_backend_that_raises_for_one_pod_fails_that_pod_only():
    set_backend(RaisesFor("bad"))
    try:
        cluster_with_a_bad_pod()
        drain_once()
    finally:
        reset_backend()

    assert_isolated("bad", "Binding rejected: internal error: RuntimeError: a bug in the backend")


def test_a_bad_pod_keeps_failing_alone_with_backoff_round_after_round(clock):
    cluster_with_a_bad_pod(bad="z-bad")
    spoil("z-bad", annotations(5))

    drain_once()
    for _ in range(2):
        clock.advance(30)  # past the backoff: it is tried again, and fails alone again
        drain_once()

    assert_isolated("z-bad", "metadata.annotations")
    assert Attempt.objects.filter(pod_name="z-bad", result="bind_failed").count() >= 2
