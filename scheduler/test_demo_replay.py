"""The heart of replay on the real demo: `manage.py run`'s own loop and trickle threads (the demo cluster and its
workloads, pods arriving and finishing, bindings refused on purpose, GPU pods preempting) run for a while on the
test database, are recorded, and replayed under the recorded configuration: every binding comes out the same."""

import threading
import time

import pytest
from django.db import connections
from django.utils import timezone

from scheduler import loop
from scheduler.cluster.services import cluster_apply
from scheduler.cluster.simulation import seed_nodes
from scheduler.management.commands import run as demo
from scheduler.models import RESULT_BIND_FAILED, Attempt, Binding, DeletedPod
from scheduler.replay.record import record_from_database
from scheduler.replay.run import replay_trace

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DEMO_SECONDS = 20.0
RATE = 10.0  # demo pods a second
LIFETIME = 4.0  # seconds a bound demo pod runs before the trickle deletes it


def in_thread(target, *args) -> threading.Thread:
    def body():
        try:
            target(*args)
        finally:
            connections.close_all()  # the thread's own connection, or the test database cannot be dropped

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread


def test_a_demo_run_replays_under_its_own_configuration_to_every_binding_with_no_seed_given(settings):
    settings.SCHEDBOARD_SEED = 7
    start = timezone.now()
    nodes = seed_nodes()
    cluster_apply(demo.parse_documents_list(nodes))
    demo.seed_workloads(nodes)
    stop = threading.Event()
    threads = [in_thread(demo.scheduling_loop, stop), in_thread(demo.trickle, stop, RATE, LIFETIME)]
    time.sleep(DEMO_SECONDS)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    end = timezone.now()

    bindings = Binding.objects.count()  # a name can be bound more than once (a StatefulSet's pod created again)
    # The run had the demo's whole variety: many bindings, pods finishing, refused bindings, ties drawn.
    assert bindings >= 50
    assert DeletedPod.objects.count() >= 20
    assert Attempt.objects.filter(result=RESULT_BIND_FAILED).exists()
    assert loop.get_worker().algorithm.tiebreak.position >= 10
    trace = record_from_database(start=start, end=end)
    assert trace.header["seed"] == 7
    report = replay_trace(trace, [("recorded", None)])
    run = report["configs"][0]
    assert report["trace"]["recorded_bindings"] == bindings
    assert run["recorded_differs"] == [] and run["recorded_matches"] == bindings
