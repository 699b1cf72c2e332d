"""The loop's CPU per pod, in one process: `manage.py bench --loop-cpu` loads SchedulingBasic into a scratch
database (`<name>_loopcpu`, dropped after), then runs the worker's scheduling batch and the binder's batch one
after the other in this process (no Celery, no beat) until the pods are bound, and reports per pod: this
thread's CPU time in each (thread_time: what a loaded machine's other processes take is not counted, as the
wall clock counts it), the CPU time of the database backend serving it, the cyclic collector's share, the
statements per batch, and how many pods shared their filter and score work (opportunistic batching).

It is the end-to-end work without the processes around it: a figure that stays comparable on a shared
machine whose load halves the wall-clock pods/s from one minute to the next.
"""

from __future__ import annotations

import collections
import gc
import os
import time

from django.core.management import call_command
from django.db import connection

from .e2e import UseDatabase, admin_execute, bench_database_url, load_cluster


def _backend_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pg_counts() -> dict:
    """This database's transactions, rows written and WAL so far (the statistics flushed first: a backend sends
    its counts when it next goes idle, so the statement after the flush request reads them)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT xact_commit + xact_rollback, pg_current_wal_lsn() - '0/0'::pg_lsn,"
                       " (SELECT sum(n_tup_ins) FROM pg_stat_user_tables), (SELECT sum(n_tup_upd) FROM pg_stat_user_tables),"
                       " (SELECT sum(n_tup_hot_upd) FROM pg_stat_user_tables)"
                       " FROM pg_stat_database WHERE datname = current_database()")
        names = ("transactions", "wal_bytes", "rows_inserted", "rows_updated", "rows_hot_updated")
        return dict(zip(names, (float(v or 0) for v in cursor.fetchone())))


def run_loop_cpu(*, nodes: int, placed: int, pods: int, seed: int = 0, progress=None) -> dict:
    from .. import loop
    from ..loop import collector
    from ..loop.bind import bind_batch
    from ..loop.schedule import Worker
    from ..queue.queues import get_redis
    from ..queue.redis_queue import RedisQueue

    say = progress or (lambda msg: None)
    r = get_redis()
    if r is None:
        raise RuntimeError("the loop benchmark needs Redis: set REDIS_URL=redis://...")
    _, name = bench_database_url("_loopcpu")
    prefix = f"schedboard-loopcpu:{int(time.time())}:q"
    admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin_execute(f'CREATE DATABASE "{name}"')
    installed_before = collector._installed
    try:
        with UseDatabase(name):
            call_command("migrate", verbosity=0)
            say(f"loading {nodes} nodes, {placed} placed pods, {pods} pending pods")
            keys = [key for key, _ in load_cluster(nodes, placed, pods + 256, seed)]
            queue = RedisQueue(r, prefix=prefix)
            piped = RedisQueue(r.pipeline(transaction=False), prefix=prefix)
            for key in keys:
                piped.add(key, 0)
            piped.redis.execute()
            worker = Worker(queue=queue, seed=seed)
            loop.reset_worker(worker)
            collector.install()  # as a worker process has it (config/celery.py)
            stats = worker.schedule_batch()  # warm-up: the snapshot, the profile, one batch bound
            bind_batch(stats.bind_items, queue=queue)
            collector.after_batch()
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                backend = cursor.fetchone()[0]
            statements: collections.Counter = collections.Counter()

            def count(execute, sql, params, many, context):
                statements[sql.split(None, 1)[0].upper()] += 1
                return execute(sql, params, many, context)

            collected = {"seconds": 0.0, "collections": 0}
            started_at: dict = {}

            def on_gc(phase, info):
                if phase == "start":
                    started_at["t"] = time.thread_time()
                else:
                    collected["seconds"] += time.thread_time() - started_at.get("t", time.thread_time())
                    collected["collections"] += 1

            say(f"scheduling and binding {pods} pods in this process")
            batched_before = worker.algorithm.batch.batched_pods if worker.algorithm.batch is not None else 0
            done = batches = 0
            schedule_cpu = bind_cpu = 0.0
            gc.callbacks.append(on_gc)
            counts0 = _pg_counts() if connection.vendor == "postgresql" else None
            wall0, backend0 = time.perf_counter(), _backend_cpu(backend)
            try:
                with connection.execute_wrapper(count):
                    while done < pods:
                        t0 = time.thread_time()
                        stats = worker.schedule_batch()
                        t1 = time.thread_time()
                        if not stats.popped:
                            break
                        bind_batch(stats.bind_items, queue=queue)
                        collector.after_batch()
                        schedule_cpu += t1 - t0
                        bind_cpu += time.thread_time() - t1
                        done += stats.popped
                        batches += 1
            finally:
                gc.callbacks.remove(on_gc)
            wall, backend_cpu = time.perf_counter() - wall0, _backend_cpu(backend) - backend0
            counts = {k: v - counts0[k] for k, v in _pg_counts().items()} if counts0 is not None else {}
            batched = (worker.algorithm.batch.batched_pods - batched_before) if worker.algorithm.batch is not None else 0

            def per_pod(seconds: float) -> float | None:
                return round(seconds * 1000.0 / done, 3) if done else None

            return {
                "workload": "SchedulingBasic (loop in one process)", "nodes": nodes, "placed": placed, "pods": done,
                "batches": batches, "loop_pods_per_s": round(done / wall, 1) if wall else None,
                "cpu_ms_per_pod_loop": per_pod(schedule_cpu + bind_cpu),
                "cpu_ms_per_pod_scheduling": per_pod(schedule_cpu), "cpu_ms_per_pod_binding": per_pod(bind_cpu),
                "cpu_ms_per_pod_collector": per_pod(collected["seconds"]), "collections": collected["collections"],
                "cpu_ms_per_pod_postgres": per_pod(backend_cpu),
                "statements_per_batch": {k: round(v / batches, 1) for k, v in statements.most_common()} if batches else {},
                "batched_pods": batched,
                # Postgres's own counts over the run, per pod (transactions include the reads' own).
                "postgres_per_pod": {k: round(v / done, 2) for k, v in counts.items()} if done else {},
            }
    finally:
        if not installed_before:
            collector.uninstall()
        loop.reset_worker()
        for key in r.scan_iter(match=prefix + "*", count=1000):
            r.delete(key)
        admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
