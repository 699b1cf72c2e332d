"""SCHEDBOARD_METRICS_PORT: a Celery worker and beat, as real processes each with its own metrics directory
(a pod's emptyDir in the deploy), serve what they count on /metrics of their own port."""

import tempfile

import pytest
import redis
import yaml
from django.conf import settings
from django.db import connection

from scheduler.manifests.files import parse_documents
from scheduler.models import Pod
from scheduler.cluster.services import cluster_apply
from scheduler.testing.workers import WorkerProcesses, purge_broker, worker_env
from scheduler.testing.metrics import free_port, sample, scrape
from scheduler.testing.wait import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PODS = 24


def cluster(pods: int):
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}"},
              "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}}} for i in range(4)]
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{i:03d}", "namespace": "default"},
             "spec": {"containers": [{"name": "c", "image": "app:1",
                                      "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}}}]}}
            for i in range(pods)]
    cluster_apply(parse_documents(yaml.safe_dump_all(nodes + pods), "cluster.yaml"))


def test_a_worker_and_beat_serve_their_own_metrics_on_the_metrics_port():
    db = connection.settings_dict
    database_url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    purge_broker(settings.REDIS_URL)
    redis.Redis.from_url(settings.REDIS_URL).delete(settings.CELERY_TASK_DEFAULT_QUEUE)
    cluster(PODS)
    worker_port, beat_port = free_port(), free_port()
    # A directory each, as each pod of the deploy has its own emptyDir: the web's /metrics sees neither.
    worker = worker_env(database_url=database_url, redis_url=settings.REDIS_URL,
                        queue_prefix=settings.SCHEDBOARD_QUEUE_PREFIX, SCHEDBOARD_RECONCILE_MS="500",
                        PROMETHEUS_MULTIPROC_DIR=tempfile.mkdtemp(prefix="schedboard-worker-pod-"),
                        SCHEDBOARD_METRICS_PORT=str(worker_port), SCHEDBOARD_METRICS_BIND_ADDRESS="127.0.0.1")
    beat = {**worker, "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="schedboard-beat-pod-"),
            "SCHEDBOARD_METRICS_PORT": str(beat_port)}
    # The deploy's worker: a main process and a pool of two children that run the tasks.
    processes = WorkerProcesses(1, worker, beat_env=beat, prefork=2).start()
    try:
        wait_for(lambda: Pod.objects.exclude(node_name="").count() == PODS, f"{PODS} pods bound")
        # The pool children counted them; the main process serves their files.
        wait_for(lambda: sample(scrape(worker_port), "scheduler_schedule_attempts_total",
                                result="scheduled", profile="default-scheduler") == PODS,
                 f"scheduler_schedule_attempts_total{{result=scheduled}} {PODS} on the worker's port")
        served = scrape(worker_port)
        from_beat = scrape(beat_port)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{processes.logs()}") from None
    finally:
        processes.stop()
    assert sample(served, "scheduler_pod_scheduling_attempts_count") == PODS
    assert sample(served, "scheduler_framework_extension_point_duration_seconds_count", extension_point="Bind",
                  status="Success", profile="default-scheduler") == PODS
    # Beat answers too, with what its own pod counted: none of the worker's.
    assert from_beat is not None
    assert sample(from_beat, "scheduler_schedule_attempts_total", result="scheduled") is None
