"""Replay one trace under several configurations and build the report (the `replay` command's JSON)."""

from __future__ import annotations

import os
from collections.abc import Callable

from scheduler.engine.config import SchedulerConfig, load_config

from .metrics import attempt_of, differ, run_report
from .simulator import Replayer, pacer
from .trace import Trace

# Placements that differ whose attempts the report details (per configuration), as many as the page lists.
DIFFER_DETAILED = 500
RECORDED = "recorded"  # --config recorded: the configuration(s) the live run had, switches included


def config_from_file(path: str) -> tuple[str, SchedulerConfig | None]:
    """(name, configuration) for --config: a KubeSchedulerConfiguration file through the engine's
    loader (so it is refused as kube-scheduler would), or "recorded"."""
    if path == RECORDED:
        return RECORDED, None
    with open(path, encoding="utf-8") as f:
        return os.path.basename(path), load_config(f.read(), path)


def replay_seed(trace: Trace, seed: int | None) -> int:
    """--seed, else the live run's tie-break seed (the trace's), else 0: a replay is always deterministic."""
    if seed is not None:
        return seed
    return trace.header.get("seed") or 0


def replay_trace(trace: Trace, configs: list[tuple[str, SchedulerConfig | None]], *, seed: int | None = None,
                 batch_size: int | None = None, cycle_seconds: float = 0.0,
                 speed: str = "max",
                 on_progress: Callable[[int, int, int], None] | None = None) -> dict:
    """Each configuration replays the whole trace on its own (same seed, fresh queue and cache; at
    `speed`, each from its own start)."""
    # The live attempts' draws are followed unless another seed than the live one was asked for.
    follow = seed is None or seed == trace.header.get("seed")
    seed = replay_seed(trace, seed)
    recorded = trace.recorded_placements
    reports, runs = [], []
    specs: dict = {}  # each pod parsed once for all the configurations
    for n, (name, config) in enumerate(configs):
        progress = None if on_progress is None else (lambda done, total, n=n: on_progress(n, done, total))
        run = Replayer(trace, config=config, name=name, seed=seed, batch_size=batch_size,
                       cycle_seconds=cycle_seconds, pace=pacer(speed), on_progress=progress, specs=specs,
                       follow_live_draws=follow).run()
        reports.append(run_report(run, recorded))
        runs.append(run)
    differing = differ(reports)
    for report, run in zip(reports, runs):
        report["differ_attempts"] = {key: attempt_of(run, key) for key in differing[:DIFFER_DETAILED]}
    return {"trace": {**trace.summary(), "seed": seed, "recorded_bindings": sum(map(len, recorded.values()))},
            "configs": reports, "differ": differing}
