"""Replays started from the dashboard: replay_start (a row, then the Celery task, by name, after commit) and
replay_execute (the task's body, tasks.replay_run: progress written as it goes, the report at the end)."""

from __future__ import annotations

import logging
import time

from django.db import transaction
from django.utils import timezone

from scheduler import dispatch
from scheduler.engine.config import SchedulerConfig, config_from_dict, config_to_dict
from scheduler.models import ReplayRun

from .run import replay_trace
from .trace import read_trace

log = logging.getLogger(__name__)

PROGRESS_EVERY_SECONDS = 0.5  # a progress bar needs no more; each write is a round trip


def replay_start(*, trace_name: str, trace_text: str, configs: list[tuple[str, SchedulerConfig | None]],
                 seed: int | None = None, user=None) -> ReplayRun:
    """Check the trace reads (TraceError otherwise, nothing saved), save the run, start the task after commit."""
    read_trace(trace_text, trace_name)
    with transaction.atomic():
        run = ReplayRun.objects.create(
            trace_name=trace_name, trace=trace_text, seed=seed, created_by=user,
            configs=[{"name": name, "config": None if c is None else config_to_dict(c)} for name, c in configs])
        transaction.on_commit(lambda: dispatch.send(dispatch.REPLAY, run.pk))
    return run


def replay_execute(*, run_id: int) -> None:
    run = ReplayRun.objects.get(pk=run_id)
    ReplayRun.objects.filter(pk=run_id).update(status=ReplayRun.RUNNING)
    configs = [(c["name"], None if c["config"] is None else config_from_dict(c["config"])) for c in run.configs]
    last = [0.0]

    def progress(n: int, done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_SECONDS:
            last[0] = now
            share = (n + (done / total if total else 1.0)) / len(configs)
            ReplayRun.objects.filter(pk=run_id).update(progress=share)

    try:
        report = replay_trace(read_trace(run.trace, run.trace_name), configs, seed=run.seed, on_progress=progress)
    except Exception as exc:  # noqa: BLE001 - the run's page says what went wrong instead of a spinner for ever
        log.exception("replay %s failed", run_id)
        ReplayRun.objects.filter(pk=run_id).update(status=ReplayRun.FAILED, error=f"{type(exc).__name__}: {exc}",
                                                   finished_at=timezone.now())
        return
    ReplayRun.objects.filter(pk=run_id).update(status=ReplayRun.DONE, progress=1.0, report=report,
                                               finished_at=timezone.now())
