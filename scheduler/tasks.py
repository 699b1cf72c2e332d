"""Celery tasks: thin wrappers over scheduler/loop.py."""

from celery import shared_task

from . import loop, retention


@shared_task(name="scheduler.schedule", ignore_result=True)
def schedule(token: str | None = None) -> dict:
    stats = loop.run_schedule_task(token)
    return {"popped": stats.popped, "scheduled": stats.scheduled, "unschedulable": stats.unschedulable}


@shared_task(name="scheduler.bind", ignore_result=True)
def bind(items: list[dict]) -> dict:
    return loop.bind_batch(items)


@shared_task(name="scheduler.reconcile", ignore_result=True)
def reconcile() -> dict:
    return loop.reconcile()


@shared_task(name="scheduler.retention", ignore_result=True)
def purge_old_rows() -> dict:
    report = retention.purge()
    return {"deleted": report.deleted, "done": report.done}


@shared_task(name="scheduler.recount", ignore_result=True)
def recount() -> dict:
    return loop.recount()
from .replay.tasks import replay_run  # noqa: E402,F401  (registers the replay task with the worker)
