"""The Celery app: `celery -A config worker` runs the scheduling loop, `celery -A config beat` reconciliation."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("schedboard")
app.config_from_object("django.conf:settings", namespace="CELERY")


@app.on_after_configure.connect
def _broker_transport(sender, **_kwargs) -> None:
    """A Redis broker through kombu's Redis transport with one client kept per channel, not one made per
    publish (scheduler/queue/broker.py says what that cost), unless a transport is configured."""
    from scheduler.queue import broker

    url = sender.conf.broker_url or ""
    if not sender.conf.broker_transport and url.split("://", 1)[0] in ("redis", "rediss"):
        sender.conf.broker_transport = broker.TRANSPORT

app.autodiscover_tasks()


# A Celery worker process that exits takes its live gauges with it (prometheus_client multiprocess
# mode); its counters and histograms stay in the directory and keep counting.
from celery.signals import worker_process_shutdown, worker_shutdown  # noqa: E402


@worker_process_shutdown.connect
@worker_shutdown.connect
def _metrics_process_exited(**_kwargs) -> None:
    from scheduler.telemetry.metrics import process_exited

    process_exited()


# SCHEDBOARD_METRICS_PORT: the worker's main process (before its pool starts) and beat serve /metrics.
from celery.signals import beat_init, celeryd_after_setup  # noqa: E402


@celeryd_after_setup.connect
def _serve_worker_metrics(**_kwargs) -> None:
    from scheduler.metrics_server import serve_metrics

    serve_metrics("celery worker")


@beat_init.connect
def _serve_beat_metrics(**_kwargs) -> None:
    from scheduler.metrics_server import serve_metrics

    serve_metrics("celery beat")


# A worker process keeps a large heap for good: the cyclic collector's thresholds and freezes for it
# (scheduler/loop/collector.py). worker_init: the solo pool's one process; worker_process_init: each
# prefork child.
from celery.signals import worker_init, worker_process_init  # noqa: E402


@worker_init.connect
@worker_process_init.connect
def _worker_collector(**_kwargs) -> None:
    from scheduler.loop import collector

    collector.install()


# The process that runs the tasks reads the node snapshot before its first one (scheduler/loop/schedule.py
# prewarm): the solo pool's one process once it is ready, each prefork child as it starts.
from celery.signals import worker_ready  # noqa: E402


@worker_ready.connect
def _prewarm_solo(sender=None, **_kwargs) -> None:
    pool = getattr(sender, "pool", None)
    if pool is not None and type(pool).__module__.endswith(".solo"):
        from scheduler.loop.schedule import prewarm

        prewarm()


@worker_process_init.connect
def _prewarm_child(**_kwargs) -> None:
    from scheduler.loop.schedule import prewarm

    prewarm()


# With connections kept across tasks (CELERY_DB_REUSE_MAX), one that an error left unusable or that is
# older than CONN_MAX_AGE is closed before the next task, as Django does before each request.
from celery.signals import task_prerun  # noqa: E402


@task_prerun.connect
def _close_old_connections(task=None, **_kwargs) -> None:
    from django.db import close_old_connections

    if task is not None and task.request.is_eager:
        return  # run in the caller's thread, on its connection, maybe inside its transaction: not ours to close
    close_old_connections()
