"""Celery tasks: thin wrappers over scheduler/loop/ (and the controllers, retention, replays), sent by name
(scheduler/dispatch.py): nothing in scheduler/ imports this module."""

from celery import shared_task

from . import loop, retention
from .backends.bind_item import from_wire
from .loop import schedule as scheduling
from .controllers import node_lifecycle as lifecycle, podgc as gc_controller, taint_eviction, workloads as workload_controllers
from .replay import services as replay_services


@shared_task(name="scheduler.schedule", ignore_result=True)
def schedule(token: str | None = None) -> dict:
    # Batch after batch while pods wait, for a bounded time (schedule.TASK_BUDGET_SECONDS says why).
    stats = loop.run_schedule_task(token, budget=scheduling.TASK_BUDGET_SECONDS)
    return {"popped": stats.popped, "scheduled": stats.scheduled, "unschedulable": stats.unschedulable}


@shared_task(name="scheduler.bind", ignore_result=True)
def bind(items: list[dict]) -> dict:
    return loop.bind_batch(from_wire(items))


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


@shared_task(name="scheduler.replay", ignore_result=True)
def replay_run(run_id: int) -> None:
    """A replay started from the dashboard (sent by name: replay/services.py)."""
    replay_services.replay_execute(run_id=run_id)


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
