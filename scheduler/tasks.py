"""Celery tasks: thin wrappers over scheduler/loop/."""

from celery import shared_task

from . import loop, retention
from .controllers import node_lifecycle as lifecycle, podgc as gc_controller, taint_eviction, workloads as workload_controllers


@shared_task(name="scheduler.schedule", ignore_result=True)
def schedule(token: str | None = None) -> dict:
    stats = loop.run_schedule_task(token)
    return {"popped": stats.popped, "scheduled": stats.scheduled, "unschedulable": stats.unschedulable}


@shared_task(name="scheduler.bind", ignore_result=True)
def bind(items: list[dict]) -> dict:
    return loop.bind_batch(items)


@shared_task(name="scheduler.preempt", ignore_result=True)
def preempt(job: dict) -> dict:
    return loop.run_preempt(job)


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


# The controllers of the simulated cluster (config/settings.py adds them to beat only for that backend).

@shared_task(name="scheduler.podgc", ignore_result=True)
def podgc() -> dict:
    return gc_controller.gc()


@shared_task(name="scheduler.node_lifecycle", ignore_result=True)
def node_lifecycle() -> dict:
    return {"tainted": lifecycle.monitor(), **taint_eviction.run()}


@shared_task(name="scheduler.workloads", ignore_result=True)
def workloads() -> dict:
    return workload_controllers.sync_all()
