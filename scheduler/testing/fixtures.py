"""Fixtures every app's tests share, registered by the root conftest.py (pytest_plugins): a test asks
for one by name instead of importing it from another test module."""

from __future__ import annotations

import pytest
from django.conf import settings

from scheduler.queue import queues
from scheduler.queue.redis_queue import RedisQueue
from scheduler.telemetry import metrics

from .kube_apiserver import KubeApiServerNotBuilt, local_kube_cluster
from .loop import FakeClock
from .workers import WorkerProcesses, database_url, purge_broker, worker_env


@pytest.fixture
def clock():
    """The shared Redis queue on a clock the test moves by hand: backoff without sleeping. A module whose
    every test wants it says `pytestmark = pytest.mark.usefixtures("clock")`."""
    c = FakeClock()
    queues.reset_queue(RedisQueue(queues.get_redis(), prefix=settings.SCHEDBOARD_QUEUE_PREFIX, clock=c,
                                  on_incoming=metrics.count_incoming))
    return c


@pytest.fixture
def workers(request):
    """Start real worker processes (+ beat) on the test database: `workers(n=2, **env)`; they stop after the
    test, and show their logs if it failed."""
    purge_broker(settings.REDIS_URL)
    started: list[WorkerProcesses] = []

    def start(n: int = 2, **env: str) -> WorkerProcesses:
        env.setdefault("SCHEDBOARD_RECONCILE_MS", "500")
        wp = WorkerProcesses(n, worker_env(database_url=database_url(), redis_url=settings.REDIS_URL,
                                           queue_prefix=settings.SCHEDBOARD_QUEUE_PREFIX, **env)).start()
        started.append(wp)
        return wp

    yield start
    for wp in started:
        wp.stop()
        if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
            print(wp.logs())


@pytest.fixture(scope="module")
def kube_cluster(request):
    """A loopback kube-apiserver and etcd for one test module; the module's KUBE_APISERVER_ARGS (a list)
    are passed to the API server. A server that is not built fails the test with how to build it."""
    context = local_kube_cluster(extra_apiserver_args=list(getattr(request.module, "KUBE_APISERVER_ARGS", ())))
    try:
        cluster = context.__enter__()
    except KubeApiServerNotBuilt as missing:
        # A missing server is a broken test setup, not a reason to skip: say how to fix it.
        pytest.fail(str(missing), pytrace=False)
    try:
        yield cluster
    finally:
        context.__exit__(None, None, None)
