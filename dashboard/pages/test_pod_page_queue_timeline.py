"""The pod page's queue timeline (Django test client, real Redis queue on a hand-moved clock): each move the
queue made with the pod, with its time, the event or queueing hint that moved it, and beside them the
database's facts: the removal of its scheduling gates, the node its preemption nominated."""

import html as htmllib
import re
import time

import pytest

from scheduler import loop
from scheduler.cluster.services import pod_delete
from scheduler.engine.queue import MemoryQueue
from scheduler.queue import queues
from scheduler.testing.loop import FakeClock, apply, drain, node, pod

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]

HIGH = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}


def timeline(client, name):
    """The table's rows as (time, entered, event, moved by, detail), text only."""
    page = client.get(f"/pods/default/{name}/").content.decode()
    table = re.search(r'<table class="data" id="queue-timeline">.*?</table>', page, re.S)
    assert table, page
    rows = re.findall(r"<tr><td>(.*?)</td>\s*<td>(.*?)</td>\s*<td[^>]*>(.*?)</td>\s*<td>(.*?)</td>\s*<td>(.*?)</td></tr>",
                      table.group(0), re.S)
    return [tuple(htmllib.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in row) for row in rows]


def test_a_pod_that_waited_for_a_node_shows_each_queue_move_with_its_time_and_event(admin_client, clock):
    apply(pod("big", cpu="2"), node("small", cpu="1"))
    drain()
    clock.advance(30)
    # NodeAdd moves it out of unschedulablePods (its backoff long over): NodeResourcesFit's hint said Queue.
    apply(node("large", cpu="4"))
    drain()
    rows = timeline(admin_client, "big")
    assert [r[1:4] for r in rows] == [
        ("activeQ", "UnschedulablePodAdd", "—"),
        ("popped: being scheduled", "Popped", "—"),
        ("unschedulablePods", "ScheduleAttemptFailure", "—"),
        ("activeQ", "NodeAdd", "queueing hint"),
        ("popped: being scheduled", "Popped", "—"),
        ("left the queue", "Done", "—"),
    ]
    # The queue's clock (the test's, 1970-01-12 13:46:40 at its start), to the millisecond.
    assert [r[0] for r in rows] == ["1970-01-12 13:46:40.000"] * 3 + ["1970-01-12 13:47:10.000"] * 3
    page = admin_client.get("/pods/default/big/").content.decode()
    assert 'title="popped from activeQ">Popped<' in page


def test_a_pod_deleted_and_created_again_shows_only_its_own_moves(admin_client):
    apply(node("n1"), pod("web"))
    drain()
    pod_delete(namespace="default", name="web")
    assert [r[2] for r in timeline(admin_client, "web")] == ["UnschedulablePodAdd", "Popped", "Done", "Deleted"]
    apply(pod("web"))
    drain()
    assert [r[2] for r in timeline(admin_client, "web")] == ["UnschedulablePodAdd", "Popped", "Done"]


def test_a_gated_pod_shows_its_gates_then_their_removal_and_its_queueing(admin_client, clock):
    apply(node("n1"), pod("held", schedulingGates=[{"name": "example.com/quota"}]))
    drain()
    assert [r[1:] for r in timeline(admin_client, "held")] == [
        ("gated: not queued", "SchedulingGated", "—", "gates: example.com/quota")]
    clock.now = time.time() + 1  # the queue's clock on the database's, a second on: the facts fall in place
    apply(pod("held"))
    drain()
    assert [r[1:3] for r in timeline(admin_client, "held")] == [
        ("—", "SchedulingGatesRemoved"), ("activeQ", "UnschedulablePodAdd"), ("popped: being scheduled", "Popped"),
        ("left the queue", "Done")]


def test_a_preemptor_shows_its_nominated_node_until_it_binds(admin_client, clock):
    apply(HIGH, node("node-a", cpu="1"), pod("low", nodeName="node-a"))
    apply(pod("vip", priorityClassName="high"))
    loop.reconcile()
    loop.run_schedule_task()  # vip fits nowhere: it preempts low and is nominated to node-a
    rows = timeline(admin_client, "vip")
    assert ("—", "NominatedNode", "—", "nominated node node-a") in [r[1:] for r in rows]
    assert [r[2] for r in rows][:3] == ["UnschedulablePodAdd", "Popped", "ScheduleAttemptFailure"]
    drain(clock)
    rows = timeline(admin_client, "vip")
    assert "NominatedNode" not in [r[2] for r in rows] and rows[-1][2] == "Done"


def test_embedded_mode_shows_the_in_memory_queues_timeline(admin_client):
    queues.reset_queue(MemoryQueue(clock=FakeClock()))
    loop.reset_worker()
    apply(node("n1"), pod("web"))
    drain()
    assert [r[1:3] for r in timeline(admin_client, "web")] == [
        ("activeQ", "UnschedulablePodAdd"), ("popped: being scheduled", "Popped"), ("left the queue", "Done")]


def test_without_a_timeline_the_page_says_why(admin_client, settings):
    settings.SCHEDBOARD_QUEUE_TIMELINE_TTL = 0
    queues.reset_queue(MemoryQueue(clock=FakeClock(), timeline_ttl=0))
    loop.reset_worker()
    apply(node("n1"), pod("web"))
    drain()
    page = admin_client.get("/pods/default/web/").content.decode()
    assert 'id="queue-timeline"' not in page and "SCHEDBOARD_QUEUE_TIMELINE_TTL=0" in page
