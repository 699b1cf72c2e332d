"""Playing a checked scenario: each step at its time on the scenario's clock, the control plane ticked on the
same clock between steps (node lifecycle and taint eviction, PodGC, the workload controllers, at their
periods), until the scenario's duration. The scheduler itself is whatever runs (Celery workers, or
`manage.py run`'s loop): it reacts to what the steps and controllers change, on the wall clock.

`time_scale` N runs the scenario clock N times faster than the wall's: with 60, the 300 s default
toleration of a failed node's pods runs out 5 wall seconds after the failure."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone as dt_timezone
from typing import Callable

from ...cluster.services import cluster_apply, node_delete, pod_delete
from ...manifests.errors import ManifestError
from ...manifests.files import parse_documents
from ...models import Node, Pod
from .. import drain as drain_controller, node_lifecycle, workloads
from ..control_plane import ControlPlane
from ..garbage import delete_with_dependents
from ..scale import SCALABLE, scale
from .spec import Scenario, Step


class ScenarioClock:
    """Scenario time: starts at the wall's now and runs `time_scale` times as fast, but at the wall's pace
    while a `wait` step holds it (so it never falls behind the times the workers write). The schedule (the
    steps' `at`, the duration) slips by what it could not keep: the time holds took, and how late a step
    started because the ones before it (or the controllers' ticks) took longer than the clock allowed at this
    time scale. So the steps keep their distances: a failure and the recovery 340 s after it stay 340 s
    apart (past a 300 s toleration) however loaded the machine."""

    def __init__(self, time_scale: float = 1.0):
        self.time_scale = time_scale
        self.mark = time.monotonic()
        self.base = 0.0  # scenario seconds at `mark`
        self.held = 0.0  # scenario seconds the schedule slipped by (holds, late steps)
        self.start = datetime.now(dt_timezone.utc)

    def elapsed(self) -> float:
        return self.base + (time.monotonic() - self.mark) * self.time_scale

    def hold(self, done: Callable[[], bool], timeout: float, stop: Callable[[], bool], period: float) -> bool:
        """Wait (at 1x) until done(); False past `timeout` wall seconds."""
        t0, base0 = time.monotonic(), self.elapsed()
        ok = False
        while not stop() and time.monotonic() - t0 < timeout:
            if done():
                ok = True
                break
            time.sleep(period)
        self.base, self.mark = base0 + (time.monotonic() - t0), time.monotonic()
        self.held += time.monotonic() - t0
        return ok

    def scheduled(self) -> float:
        """Where the scenario's schedule stands: its clock less what it slipped by."""
        return self.elapsed() - self.held

    def slip_to(self, at: float) -> None:
        """A step due at `at` starts only now: the rest of the schedule moves with it."""
        self.held += max(0.0, self.scheduled() - at)

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.elapsed())

    def sleep_until(self, elapsed: float, stop: Callable[[], bool], tick: Callable[[], None], period: float) -> None:
        """Tick the control plane every `period` wall seconds until the scenario clock reaches `elapsed`, and once
        more then: a tick that took long (a loaded machine, at a high time scale) may have let the clock pass
        a controller's deadline, and what was due before the next step (an eviction before a recovery) must
        happen before it."""
        while not stop():
            if self.elapsed() >= elapsed:
                tick()  # at (or past) the deadline: what fell due before it is done before the step
                return
            tick()
            left = (elapsed - self.elapsed()) / self.time_scale
            if left > 0:
                time.sleep(min(period, left))


@dataclass
class StepResult:
    step: Step
    at: float  # scenario seconds when it ran
    ok: bool
    lines: list[str] = field(default_factory=list)


def _node_step(step: Step, now: datetime) -> tuple[bool, list[str]]:
    ok, lines = True, []
    for name in step.names:
        if step.action in ("fail", "recover"):
            status = "True" if step.action == "recover" else ("Unknown" if step.unreachable else "False")
            got = node_lifecycle.node_set_ready(name=name, status=status, now=now)
            said = {"True": "Ready", "False": "NotReady", "Unknown": "unreachable"}[status]
        elif step.action in ("cordon", "uncordon"):
            got = said = drain_controller.cordon(name, step.action == "cordon")
        else:
            got, said = _drain(name, step)
            if got is False:
                ok = False
                lines.append(f"error: unable to drain node {name!r}: {said}")
                continue
        if got is None:
            ok = False
            lines.append(f'Error from server (NotFound): nodes "{name}" not found')
        else:
            lines.append(f"node/{name} {said}")
    return ok, lines


def _drain(name: str, step: Step) -> tuple[bool | None, str]:
    """As `drain NODE` once (no retries): cordon, kubectl's filters, then the evictions."""
    if not Node.objects.filter(name=name).exists():
        return None, ""
    drain_controller.cordon(name, True)
    plan = drain_controller.plan(name, force=step.force, ignore_daemonsets=step.ignore_daemonsets)
    errors = plan.error_texts()
    if errors:
        return False, "; ".join(errors)
    refused = [f"{p.namespace}/{p.name}" for p in plan.evict if drain_controller.evict_pod(p) is False]
    if refused:
        return False, f"{drain_controller.PDB_VIOLATION} ({', '.join(refused)})"
    return True, f"drained ({len(plan.evict)} pods evicted)"


def all_scheduled() -> bool:
    """The workload controllers have nothing left to create or delete, and every pod is bound or was found
    unschedulable (it waits for the cluster to change)."""
    if workloads.sync_all(wait=0):  # skipped: another process's pass is at it, so not settled yet
        return False
    return not Pod.objects.filter(node_name="", deleting=False).exclude(scheduled_reason="Unschedulable").exists()


def run_step(step: Step, now: datetime) -> tuple[bool, list[str]]:
    if step.action in ("fail", "recover", "cordon", "uncordon", "drain"):
        return _node_step(step, now)
    if step.action == "scale":
        found = scale(kind=step.kind, namespace=step.namespace, name=step.target.partition("/")[2],
                      replicas=step.replicas)
        kind_name, _, name = step.target.partition("/")
        return (True, [f"{SCALABLE[kind_name.lower()][1]}/{name} scaled"]) if found else (False, [f'Error from server (NotFound): {step.target} not found'])
    if step.action == "apply":
        try:
            result = cluster_apply(parse_documents(step.manifest_text, step.manifest_name))
        except ManifestError as e:
            return False, [str(p) for p in e.problems]
        return True, [f"{label} {status}" for status in ("created", "configured", "unchanged")
                      for label in getattr(result, status)]
    name = step.names[0]
    if step.kind == "Pod":
        found = pod_delete(namespace=step.namespace, name=name)
    elif step.kind == "Node":
        found = node_delete(name=name)
    else:
        found = delete_with_dependents(kind=step.kind, namespace=step.namespace, name=name)
    return (True, [f"{step.target} deleted"]) if found else (False, [f"Error from server (NotFound): {step.target} not found"])


def play(scenario: Scenario, *, time_scale: float = 1.0, report: Callable[[StepResult], None] = lambda r: None,
         stop: Callable[[], bool] = lambda: False, tick_seconds: float = 0.1,
         control_plane: bool = True) -> list[StepResult]:
    """Run every step at its time, then keep the control plane going until the scenario's duration."""
    clock = ScenarioClock(time_scale)
    plane = ControlPlane(clock.now)
    tick = plane.tick if control_plane else (lambda: None)
    results = []
    for step in scenario.steps:
        clock.sleep_until(step.at + clock.held, stop, tick, tick_seconds)
        if stop():
            break
        clock.slip_to(step.at)
        at = clock.elapsed()
        if step.action == "wait":
            quiet = []  # settled twice in a row: a StatefulSet makes its next pod once the last is bound
            ok = clock.hold(lambda: quiet.append(all_scheduled()) or quiet[-2:] == [True, True], step.timeout, stop,
                            tick_seconds)
            lines = ["every pod scheduled or unschedulable" if ok else f"timed out after {step.timeout:g}s"]
        else:
            ok, lines = run_step(step, clock.now())
        result = StepResult(step, at, ok, lines)
        results.append(result)
        report(result)
        tick()  # the controllers see the step at once (the informers' watch would)
    clock.sleep_until(scenario.duration + clock.held, stop, tick, tick_seconds)
    return results
