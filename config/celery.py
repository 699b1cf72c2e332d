"""The Celery app: `celery -A config worker` runs the scheduling loop, `celery -A config beat` reconciliation."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("schedboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


# A Celery worker process that exits takes its live gauges with it (prometheus_client multiprocess
# mode); its counters and histograms stay in the directory and keep counting.
from celery.signals import worker_process_shutdown, worker_shutdown  # noqa: E402


@worker_process_shutdown.connect
@worker_shutdown.connect
def _metrics_process_exited(**_kwargs) -> None:
    from scheduler.metrics import process_exited

    process_exited()
