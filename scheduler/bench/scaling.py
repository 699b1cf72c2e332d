"""`bench --workers 1,2,4`: SchedulingBasic end to end once per worker count, on the same shape and seed, each
run with its reservation conflict rate and its per-pod costs in workers, Postgres and Redis (bench/counters.py),
and the series' scaling against its smallest count.

Only the end-to-end runs: the engine's figures do not depend on the worker count (`bench` without a list
reports them). Each figure is one run; the machine's load average is printed beside it, since the workers,
Postgres and Redis share its cores with whatever else runs.
"""

from __future__ import annotations

import os

MAX_WORKERS = 16

# The per-count figures, in the order the table prints them.
FIGURES = ("workers", "e2e_pods_per_s", "scaling", "attempt_p50_ms", "attempt_p99_ms", "sli_p99_ms",
           "cpu_ms_per_pod_workers", "cpu_ms_per_pod_postgres", "cpu_ms_per_pod_beat", "overcommitted_nodes",
           "reservation_conflicts", "placements_attempted", "reservation_conflict_rate",
           "postgres_commits_per_pod", "postgres_rows_written_per_pod", "redis_commands_per_pod", "redis_cpu_ms_per_pod",
           "redis_other_db_clients", "load_1m_before", "load_1m_after")


def parse_workers(value: str) -> list[int]:
    """`--workers`: one count or a comma list of them, each 1..MAX_WORKERS, none twice; ValueError says why."""
    counts = []
    for part in str(value).split(","):
        part = part.strip()
        if not part.isdigit() or not 1 <= int(part) <= MAX_WORKERS:
            raise ValueError(f"--workers: {value!r}: each worker count must be an integer from 1 to {MAX_WORKERS}"
                             f" (a comma list for a series, e.g. 1,2,4); {part!r} is not")
        if int(part) in counts:
            raise ValueError(f"--workers: {value!r}: {part} is listed twice")
        counts.append(int(part))
    return counts


def is_series(value: str) -> bool:
    return "," in str(value)


def run_series(*, counts: list[int], nodes: int, placed: int, pods: int, seed: int = 0, progress=None) -> dict:
    from ..queue.queues import get_redis
    from .counters import RunCounters
    from .e2e import run_e2e

    say = progress or (lambda msg: None)
    redis = get_redis()
    if redis is None:
        raise RuntimeError("the end-to-end benchmark needs Redis: set REDIS_URL=redis://...")
    db = int(redis.connection_pool.connection_kwargs.get("db", 0))  # the run's clients select it
    runs = []
    for n in counts:
        say(f"series: {n} worker process{'es' if n > 1 else ''}, {pods} pods on {nodes} nodes")
        counters = RunCounters(redis, db)
        load_before = round(os.getloadavg()[0], 2)
        try:
            result = run_e2e(nodes=nodes, placed=placed, pods=pods, workers=n, seed=seed, progress=say,
                             counters=counters)
        finally:
            counters.close()
        runs.append({"workers": n, **result, "load_1m_before": load_before, "load_1m_after": round(os.getloadavg()[0], 2)})
    base = min(runs, key=lambda r: r["workers"])
    for r in runs:
        r["scaling"] = round(r["e2e_pods_per_s"] / base["e2e_pods_per_s"], 3) if base["e2e_pods_per_s"] else None
    best = max(runs, key=lambda r: r["e2e_pods_per_s"])
    return {
        "workload": "SchedulingBasic", "nodes": nodes, "pods": pods, "placed": placed, "workers": counts,
        "cores": os.cpu_count(), "scaling_base_workers": base["workers"],
        "best_workers": best["workers"], "best_e2e_pods_per_s": best["e2e_pods_per_s"],
        "series": [{k: r.get(k) for k in FIGURES} | {k: v for k, v in r.items() if k not in FIGURES} for r in runs],
    }


def table(result: dict) -> str:
    """The series as text: one row per figure, one column per worker count."""
    runs = result["series"]
    head = (f"SchedulingBasic end to end, {result['nodes']} nodes / {result['placed']} placed / {result['pods']} pods, "
            f"{result['cores']} cores; scaling vs {result['scaling_base_workers']} worker(s)")
    width = max(len(k) for k in FIGURES)
    lines = [head]
    for key in FIGURES:
        lines.append(f"{key:>{width}}: " + "".join(f"{_fmt(r.get(key)):>12}" for r in runs))
    return "\n".join(lines)


def _fmt(value) -> str:
    return "-" if value is None else str(value)
