"""Celery tasks sent by name, so that nothing in scheduler/ imports the Celery face (tasks.py), which
imports the loop: the loop, the backends and the replays send their tasks by name to whichever worker
takes them. config/apps.py registers the tasks when Django is ready."""

from __future__ import annotations

from celery import current_app

SCHEDULE = "scheduler.schedule"  # run one schedule batch (tasks.schedule)
BIND = "scheduler.bind"  # bind a batch of placed pods (tasks.bind)
REPLAY = "scheduler.replay"  # run a replay started from the dashboard (tasks.replay_run)
PREEMPT = "scheduler.preempt"  # evict one preemption's victims (tasks.preempt), as upstream's async preemption


def send(name: str, *args) -> None:
    """As the task's delay(*args): inline where tasks run eagerly (tests, embedded), else through the broker."""
    current_app.tasks[name].delay(*args)
