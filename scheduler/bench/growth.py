"""How fast the audit tables grow: `manage.py bench --growth` schedules pods end to end on a simulated
cluster in a scratch database (`<name>_growth`, dropped after) with real workers and beat, deletes the
bound pods again (each deletion is a cluster event), and reports each table's rows and bytes
(pg_total_relation_size, as the run left it and compacted by VACUUM FULL) per pod lifecycle. Then it
measures a failed attempt's trace (SCHEDBOARD_TRACE=failures, the default) on this cluster and, through
the engine alone, at larger node counts, with and without the cap (engine/explain.py TRACE_MAX_NODES).
"""

from __future__ import annotations

import copy
import json
import time
import uuid

from django.conf import settings
from django.db import connection
from django.utils import timezone

from .e2e import (HELD_SCHEDULER_NAME, POD_MANIFEST, admin_execute, bench_database_url, kick, load_cluster,
                    UseDatabase, wait)
from ..queue import queues
from ..testing.workers import WorkerProcesses, purge_broker, worker_env

TABLES = (("attempts", "scheduler_attempt"), ("events", "scheduler_event"), ("bindings", "scheduler_binding"),
          ("cluster events", "scheduler_clusterevent"))
# 64 CPU: more than any SchedulingBasic node has, so every node rejects it.
HUGE_CPU = "64"


def _sizes() -> dict[str, dict]:
    out = {}
    with connection.cursor() as c:
        for name, table in TABLES:
            c.execute(f"SELECT count(*), pg_total_relation_size('{table}'), pg_indexes_size('{table}') FROM {table}")
            rows, total, indexes = c.fetchone()
            out[name] = {"rows": rows, "bytes": total, "index_bytes": indexes}
    return out


def _vacuum_full() -> None:
    with connection.cursor() as c:
        for _, table in TABLES:
            c.execute(f"VACUUM (FULL, ANALYZE) {table}")


def _huge_pods(count: int) -> list:
    from ..manifests.objects import pod_from_manifest
    from ..models import Pod
    from ..state.reservations import pod_usage_fields

    now = timezone.now()
    rows = []
    for i in range(count):
        manifest = copy.deepcopy(POD_MANIFEST)
        manifest["spec"]["containers"][0]["resources"]["requests"]["cpu"] = HUGE_CPU
        uid = str(uuid.uuid4())
        manifest["metadata"] = {"name": f"huge-{i}", "namespace": "sched-test", "uid": uid}
        usage = pod_usage_fields(pod_from_manifest(manifest))
        rows.append(Pod(namespace="sched-test", name=f"huge-{i}", uid=uid, manifest=manifest, created_at=now,
                        scheduler_name=HELD_SCHEDULER_NAME, **usage))
    return rows


def _stored_trace_bytes(trace: dict) -> dict:
    """A trace's JSON size, and what its JSONB value takes in a row (TOAST-compressed when large)."""
    with connection.cursor() as c:
        c.execute("CREATE TEMP TABLE IF NOT EXISTS growth_trace (t jsonb)")
        c.execute("TRUNCATE growth_trace")
        c.execute("INSERT INTO growth_trace VALUES (%s::jsonb)", [json.dumps(trace)])
        c.execute("SELECT pg_column_size(t) FROM growth_trace")
        stored = c.fetchone()[0]
    return {"json_bytes": len(json.dumps(trace).encode()), "stored_bytes": stored}


def trace_sizes(node_counts: tuple[int, ...]) -> dict:
    """A failed attempt's trace on SchedulingBasic clusters of each size (a 64-CPU pod: every node rejects
    it), named in full (as before the cap) and capped."""
    from ..engine.config import default_profile
    from ..engine.explain import TRACE_MAX_NODES, trace
    from ..engine.framework import Algorithm
    from ..engine.nodes import NodeSpec, NodeTable
    from ..engine.perf import NODE_ALLOCATABLE
    from ..engine.pods import Container, PodSpec

    out = {}
    pod = PodSpec("sched-test", "huge", containers=(Container("c", requests={"cpu": int(HUGE_CPU) * 1000}),))
    for n in node_counts:
        # Every 50th node cordoned: two groups (plugin, reasons), as a real cluster has several.
        nodes = NodeTable([NodeSpec(f"node-{i}", allocatable=dict(NODE_ALLOCATABLE), unschedulable=i % 50 == 0)
                           for i in range(n)])
        decision = Algorithm(0).schedule(default_profile().build(), pod, nodes)
        out[str(n)] = {"uncapped": _stored_trace_bytes(trace(decision, nodes, scores=False, max_nodes=None)),
                       "capped": _stored_trace_bytes(trace(decision, nodes, scores=False)),
                       "cap": TRACE_MAX_NODES}
    return out


def run_growth(*, nodes: int, placed: int, pods: int, failing: int, workers: int, seed: int = 0,
               timeout: float = 1800.0, trace_nodes: tuple[int, ...] = (5000, 50000), progress=None) -> dict:
    from ..models import Attempt, Pod
    from ..queue.redis_queue import RedisQueue
    from ..queue.queues import get_redis
    from ..cluster.services import pod_delete

    say = progress or (lambda msg: None)
    url, name = bench_database_url(suffix="_growth")
    prefix = f"schedboard-growth:{int(time.time())}:q"
    r = get_redis()
    if r is None:
        raise RuntimeError("the growth run needs Redis: set REDIS_URL=redis://...")
    admin_execute(f'DROP DATABASE IF EXISTS "{name}"')
    admin_execute(f'CREATE DATABASE "{name}"')
    purge_broker(settings.REDIS_URL)
    wp = None
    try:
        with UseDatabase(name):
            from django.core.management import call_command

            call_command("migrate", verbosity=0)
            say(f"loading {nodes} nodes, {placed} placed pods, {pods} pending pods, {failing} pods no node fits")
            keys = load_cluster(nodes, placed, pods, seed, held=pods)
            Pod.objects.bulk_create(_huge_pods(failing))
            before = _sizes()
            queue = RedisQueue(r, prefix=prefix)
            queues.reset_queue(queue)  # this process's own queue operations (pod_delete's) go to the run's queue
            env = worker_env(database_url=url, redis_url=settings.REDIS_URL, queue_prefix=prefix,
                             SCHEDBOARD_LIVE_PREFIX=f"{prefix}:live", SCHEDBOARD_TRACE="failures")
            wp = WorkerProcesses(workers, env, beat=True).start()
            say(f"scheduling {pods} pods")
            started = time.perf_counter()
            Pod.objects.filter(namespace="sched-test", name__startswith="pod-").update(
                queued_at=timezone.now(), scheduler_name="default-scheduler")
            for key, priority in keys:
                queue.add(key, priority)
            kick(r, workers)
            wait(lambda: Pod.objects.filter(namespace="sched-test", name__startswith="pod-").exclude(node_name="").count()
                  >= pods, timeout, wp, "all pods bound")
            bound_seconds = time.perf_counter() - started
            if failing:
                say(f"{failing} pods no node fits: one failed attempt each")
                Pod.objects.filter(name__startswith="huge-").update(queued_at=timezone.now(),
                                                                    scheduler_name="default-scheduler")
                for i in range(failing):
                    queue.add(f"sched-test/huge-{i}", 0)
                kick(r, workers)
                wait(lambda: Attempt.objects.filter(pod_name__startswith="huge-").values("pod_name").distinct().count()
                      >= failing, timeout, wp, "a failed attempt of every huge pod")
            wp.stop()
            wp = None
            say(f"deleting the {pods} bound pods (one cluster event each)")
            for key, _ in keys:
                ns, pod_name = key.split("/", 1)
                pod_delete(namespace=ns, name=pod_name)
            after = _sizes()
            with connection.cursor() as c:
                c.execute("SELECT result, count(*), avg(pg_column_size(a.*)), avg(pg_column_size(a.trace)) "
                          "FROM scheduler_attempt a GROUP BY result ORDER BY result")
                per_result = {res: {"rows": n, "avg_row_bytes": round(float(row)), "avg_trace_bytes": round(float(tr))}
                              for res, n, row, tr in c.fetchall()}
            say("VACUUM FULL")
            _vacuum_full()
            compact = _sizes()
            say(f"failed-attempt traces at {', '.join(map(str, trace_nodes))} nodes")
            traces = trace_sizes(trace_nodes)
        tables = {}
        for table in after:
            grown = after[table]["bytes"] - before[table]["bytes"]
            tables[table] = {
                "rows": after[table]["rows"] - before[table]["rows"],
                "bytes": grown,
                "bytes_compacted": compact[table]["bytes"] - before[table]["bytes"],
                "index_bytes_compacted": compact[table]["index_bytes"] - before[table]["index_bytes"],
            }
        return {
            "nodes": nodes, "pods": pods, "placed": placed, "failing_pods": failing, "workers": workers,
            "bound_seconds": round(bound_seconds, 1),
            "tables": tables, "attempts_by_result": per_result, "failed_trace": traces,
            "date": timezone.now().date().isoformat(),
        }
    finally:
        queues.reset_queue()
        if wp is not None:
            wp.stop()
        for key in r.scan_iter(match=prefix + "*", count=1000):
            r.delete(key)
        admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
