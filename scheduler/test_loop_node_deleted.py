"""The loop's edges when a node goes away under a placement (issue 16), on the simulated cluster: a pod placed
on a node that is deleted before its binding, and one whose binding is in flight when the node is deleted.
Either way the binding never lands on the missing node, the reservation is forgotten, nothing is
overcommitted, and the pod is scheduled again onto a node that exists."""

import pytest

from scheduler import loop
from scheduler.backends import reset_backend, set_backend
from scheduler.backends.simulated import SimulatedBackend
from scheduler.cluster.services import node_delete
from scheduler.models import Attempt, Binding, Node, Pod
from scheduler.queue import queues
from scheduler.testing.loop import apply, node, pod

pytestmark = pytest.mark.django_db(transaction=True)


class DeletingDuringCall(SimulatedBackend):
    """The simulated backend, deleting a node while the first binding is in flight."""

    def __init__(self, node_name=None):
        self.node_name = node_name

    def bind(self, *, pod_manifest, node_name, **kwargs):
        if self.node_name is not None:
            doomed, self.node_name = self.node_name, None
            node_delete(name=doomed)
        super().bind(pod_manifest=pod_manifest, node_name=node_name, **kwargs)

    def hand_off(self, items):
        pass  # the test runs the binder


@pytest.fixture
def backend():
    def install(b):
        set_backend(b)
        return b

    yield install
    reset_backend()


def _placed(name):
    items = [i for i in loop.get_worker().schedule_batch().bind_items if i.key == f"default/{name}"]
    assert items, f"{name} was not placed"
    return items


def _rebound_elsewhere(name, gone):
    queue = queues.get_queue()
    assert queue.get(f"default/{name}") is not None  # back in the queue
    queue.delete(f"default/{name}")
    queue.add(f"default/{name}", 0)  # afresh, not in backoff
    again = _placed(name)
    assert again[0].node != gone
    loop.bind_batch(again)
    row = Pod.objects.get(name=name)
    assert (row.node_name, row.assumed_node) == (again[0].node, "")
    assert list(Binding.objects.filter(pod_name=name).values_list("node_name", flat=True)) == [again[0].node]


def test_a_node_deleted_after_the_placement_and_before_the_binding_gets_no_binding_and_the_pod_goes_elsewhere(
        backend):
    backend(DeletingDuringCall())
    apply(node("a", cpu="2"), node("b", cpu="1"), pod("web", cpu="2"))
    job = _placed("web")
    assert job[0].node == "a"
    apply(node("b", cpu="4"))
    assert node_delete(name="a")

    loop.bind_batch(job)

    web = Pod.objects.get(name="web")
    assert (web.node_name, web.assumed_node, web.binding_at) == ("", "", None)
    assert not Binding.objects.filter(pod_name="web").exists()
    attempt = Attempt.objects.get(pod_name="web")
    assert attempt.result == "bind_failed" and attempt.message.startswith("Binding skipped: the reservation on a")
    _rebound_elsewhere("web", "a")
    assert Node.objects.get(name="b").req_pods == 1


def test_a_node_deleted_while_its_binding_is_in_flight_gets_no_binding_and_the_pod_goes_elsewhere(backend):
    backend(DeletingDuringCall("a"))
    apply(node("a", cpu="2"), node("b", cpu="1"), pod("web", cpu="2"))
    job = _placed("web")
    assert job[0].node == "a"
    apply(node("b", cpu="4"))

    loop.bind_batch(job)  # node a is deleted during the call

    assert not Node.objects.filter(name="a").exists()
    web = Pod.objects.get(name="web")
    assert (web.node_name, web.assumed_node) == ("", "")
    assert not Binding.objects.filter(pod_name="web").exists()
    assert Attempt.objects.get(pod_name="web").result == "bind_failed"
    _rebound_elsewhere("web", "a")
