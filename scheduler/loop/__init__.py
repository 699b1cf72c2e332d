"""The scheduling loop on the shared state, the only place that ties the layers below together: schedule
a batch (schedule.py), bind a batch (bind.py), reconcile (reconcile.py). The Celery tasks only call these.
"""

from .bind import bind_batch
from .preempt import run_preempt
from .reconcile import forget_cluster_events, reconcile, recount
from .schedule import BatchStats, Worker, get_worker, reset_worker, run_schedule_task

__all__ = ["BatchStats", "Worker", "bind_batch", "forget_cluster_events", "get_worker", "reconcile", "recount",
           "reset_worker", "run_preempt", "run_schedule_task"]
