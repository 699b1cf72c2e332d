"""A kube replica, composed: the kube controller (leader election, the watches into Postgres, the committer),
the kubernetes backend installed in this process, the loop's binder behind the committer and, with
`kube run --inline`, the loop's scheduler, reconciler and retention on the leader.

The composition lives here, above loop/, backends/ and kube/, so that each of those imports only what is
below it (kube/ knows nothing of the loop or the backends).
"""

from __future__ import annotations

import logging
import time

from django.conf import settings

from . import loop, retention
from .backends import set_backend
from .backends.bind_item import from_wire
from .backends.kubernetes import KubernetesBackend
from .kube.controller import Controller

log = logging.getLogger(__name__)


def bind_jobs(items: list[dict]) -> None:
    """The committer's binder: the workers' bind items, as they came through the Redis list."""
    loop.bind_batch(from_wire(items))


class Replica(Controller):
    """One replica of `kube run`: `run()` blocks; `stop()` ends it."""

    def __init__(self, *, schedule_inline: bool = False, **kwargs):
        super().__init__(bind=bind_jobs, **kwargs)
        # What the loop binds through in this process: this replica's API client, checked against its lease.
        self.backend = KubernetesBackend(api_client=self.api_client, elector=self.elector, redis=self.redis,
                                         report_sink=self.committer.submit_report)
        set_backend(self.backend)
        self.schedule_inline = schedule_inline

    def start_leading(self, *, wait_for_pods: bool = True) -> None:
        super().start_leading(wait_for_pods=wait_for_pods)
        if self.schedule_inline:
            self.threads.append(self._thread("schedule-inline", self._schedule_loop))

    def _schedule_loop(self) -> None:
        """A single process that also schedules (embedded style): reconcile + batches, polling; and
        retention, as beat would run it."""
        last_reconcile = last_retention = 0.0
        while not self.stopping.is_set():
            if time.monotonic() - last_reconcile > 0.5:
                loop.reconcile()
                last_reconcile = time.monotonic()
            if not last_retention or time.monotonic() - last_retention >= settings.SCHEDBOARD_RETENTION_PERIOD:
                last_retention = time.monotonic()
                try:
                    retention.purge()
                except Exception:  # noqa: BLE001 - housekeeping: never the reason this replica stops leading
                    log.exception("retention failed; the next run tries again")
            if not loop.run_schedule_task().popped:
                self.stopping.wait(0.02)
