"""The benchmark: scheduler_perf's SchedulingBasic shape through the engine alone, through the
per-node reference, and end to end through real Celery workers, Redis and Postgres.

Speed is reported, never asserted. The end-to-end run works in its own database
(`<name>_bench` next to the configured one) and its own Redis key prefix, and drops them after.
"""

from __future__ import annotations

import copy
import random
import time
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg
from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from ..engine import perf
from ..engine.config import default_config
from ..engine.reference.pipeline import reference_schedule
from ..state.reservations import pod_usage_fields
from ..testing.workers import WorkerProcesses, purge_broker, worker_env

NODE_MANIFEST = {
    "apiVersion": "v1", "kind": "Node",
    "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
               "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
}
POD_MANIFEST = {
    "apiVersion": "v1", "kind": "Pod",
    "spec": {"schedulerName": "default-scheduler",
             "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                             "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]},
}


def pct(values, q) -> float | None:
    return round(float(np.percentile(np.asarray(values, dtype=float), q)), 3) if len(values) else None


# ---- engine and reference -----------------------------------------------------------------

def run_reference(*, nodes: int, placed: int, sample: int, seed: int = 0) -> dict:
    """The per-node reference on the engine's work: the same cluster, the same round-robin window
    of nodes (numFeasibleNodesToFind of them), the same assume after each decision."""
    from ..engine.framework import num_feasible_nodes_to_find

    cache, _, make_pod = perf.build_scheduling_basic(nodes=nodes, placed=placed, seed=seed)
    table = cache.table
    specs = table.specs
    usages = [table.usage_of(i) for i in range(table.n)]
    profile = default_config().profiles[0]
    window = num_feasible_nodes_to_find(None, table.n)
    rng = random.Random(seed)
    start = 0
    elapsed = 0.0
    for i in range(sample):
        pod = make_pod(i)
        rows = [(start + k) % table.n for k in range(window)]
        node_specs = [specs[r] for r in rows]
        node_usages = [usages[r] for r in rows]
        t0 = time.perf_counter()
        chosen = reference_schedule(node_specs, node_usages, pod, profile, rng)
        elapsed += time.perf_counter() - t0
        if chosen is not None:
            row = table.index[chosen]
            usages[row] = copy.deepcopy(usages[row])
            usages[row].add(pod)
        start = (start + window) % table.n
    return {"pods": sample, "seconds": round(elapsed, 4), "pods_per_second": round(sample / elapsed, 1) if elapsed else None}


# ---- end to end ---------------------------------------------------------------------------

def bench_database_url(suffix: str = "_bench") -> tuple[str, str]:
    if not settings.DATABASE_URL.startswith(("postgres://", "postgresql://")):
        raise RuntimeError("the end-to-end benchmark needs Postgres: set DATABASE_URL=postgres://...")
    parts = urlsplit(settings.DATABASE_URL)
    name = parts.path.lstrip("/") + suffix
    return urlunsplit(parts._replace(path="/" + name)), name


def admin_execute(sql: str) -> None:
    parts = urlsplit(settings.DATABASE_URL)
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
        conn.execute(sql)


class UseDatabase:
    """Point this process's default connection at another database for a while."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        conn = connections["default"]
        conn.close()
        self.old = conn.settings_dict["NAME"]
        conn.settings_dict["NAME"] = self.name
        return self

    def __exit__(self, *exc):
        conn = connections["default"]
        conn.close()
        conn.settings_dict["NAME"] = self.old


# The measured pods wait under a scheduler name no profile has, so the reconciler cannot queue them
# while the warm-up runs; the measured phase hands them to the default profile all at once.
HELD_SCHEDULER_NAME = "schedboard-bench-held"


def load_cluster(nodes: int, placed: int, pods: int, seed: int, held: int = 0) -> list[tuple[str, int]]:
    """Nodes, the already-placed pods (counted on their nodes) and the pending pods (the first `held` held), in bulk."""
    import uuid

    from ..manifests.objects import node_from_manifest, pod_from_manifest
    from ..models import Node, Pod

    now = timezone.now()
    node_spec = node_from_manifest({**NODE_MANIFEST, "metadata": {"name": "n"}})
    pod_manifest = {**POD_MANIFEST, "metadata": {"name": "p", "namespace": "sched-test"}}
    usage = pod_usage_fields(pod_from_manifest(pod_manifest))
    rng = np.random.default_rng(seed)
    hosts = rng.integers(0, nodes, size=placed)
    per_node = np.bincount(hosts, minlength=nodes)
    node_rows = []
    for i in range(nodes):
        k = int(per_node[i])
        node_rows.append(Node(
            name=f"node-{i}", manifest={**NODE_MANIFEST, "metadata": {"name": f"node-{i}"}},
            alloc_cpu=node_spec.allocatable["cpu"], alloc_memory=node_spec.allocatable["memory"],
            alloc_ephemeral=0, alloc_pods=node_spec.allocatable["pods"],
            req_cpu=k * usage["req_cpu"], req_memory=k * usage["req_memory"], req_pods=k,
            nonzero_cpu=k * usage["nonzero_cpu"], nonzero_memory=k * usage["nonzero_memory"]))

    def pod_row(ns, name, node_name="", scheduler_name="default-scheduler"):
        manifest = copy.deepcopy(POD_MANIFEST)
        uid = str(uuid.uuid4())
        manifest["metadata"] = {"name": name, "namespace": ns, "uid": uid}
        return Pod(namespace=ns, name=name, uid=uid, manifest=manifest, created_at=now, node_name=node_name,
                   phase=Pod.RUNNING if node_name else Pod.PENDING, scheduled_status="True" if node_name else "",
                   bound_at=now if node_name else None, scheduler_name=scheduler_name, **usage)

    with transaction.atomic():
        Node.objects.bulk_create(node_rows, batch_size=2000)
        Pod.objects.bulk_create([pod_row("init", f"init-pod-{i}", f"node-{int(h)}") for i, h in enumerate(hosts)],
                                batch_size=2000)
        Pod.objects.bulk_create([pod_row("sched-test", f"pod-{i}", scheduler_name=HELD_SCHEDULER_NAME if i < held
                                         else "default-scheduler") for i in range(pods)], batch_size=2000)
    return [(f"sched-test/pod-{i}", 0) for i in range(pods)]


def run_e2e(*, nodes: int, placed: int, pods: int, workers: int, seed: int = 0, timeout: float = 900.0,
            progress=None, viewers: int = 0) -> dict:
    from django.core.management import call_command

    from .. import loop
    from ..models import Attempt, Pod
    from ..queue.redis_queue import RedisQueue
    from ..queue.queues import get_redis

    say = progress or (lambda msg: None)
    url, name = bench_database_url()
    prefix = f"schedboard-bench:{int(time.time())}:q"
    r = get_redis()
    if r is None:
        raise RuntimeError("the end-to-end benchmark needs Redis: set REDIS_URL=redis://...")
    admin_execute(f'DROP DATABASE IF EXISTS "{name}"')
    admin_execute(f'CREATE DATABASE "{name}"')
    purge_broker(settings.REDIS_URL)
    wp = watch = None
    try:
        with UseDatabase(name):
            call_command("migrate", verbosity=0)
            say(f"loading {nodes} nodes, {placed} placed pods, {pods} pending pods")
            keys = load_cluster(nodes, placed, pods + 50, seed, held=pods)
            queue = RedisQueue(r, prefix=prefix)
            env = worker_env(database_url=url, redis_url=settings.REDIS_URL, queue_prefix=prefix,
                             SCHEDBOARD_LIVE_PREFIX=f"{prefix}:live")
            if viewers:  # --dashboard: a daphne server and N websocket clients on the overview, all the run long
                from .viewers import Viewers

                # Before the workers: the reconciler would queue the pending pods while daphne starts.
                say(f"starting daphne and {viewers} overview viewers")
                watch = Viewers(viewers, env).start()
            wp = WorkerProcesses(workers, env, beat=True).start()
            # Warm-up (not measured): workers start, load the node snapshot, parse the profile.
            warmup, measured = keys[-50:], keys[:pods]
            for key, priority in warmup:
                queue.add(key, priority)
            kick(r, workers)
            wait(lambda: Pod.objects.filter(namespace="sched-test").exclude(node_name="").count() >= len(warmup),
                  timeout, wp, "warm-up pods bound")
            if watch:
                watch.measure(settle=len(warmup))
            say(f"warm; queueing {pods} pods")
            started_wall = timezone.now()
            t0 = time.perf_counter()
            Pod.objects.filter(name__in=[k.split("/", 1)[1] for k, _ in measured]).update(
                queued_at=started_wall, scheduler_name="default-scheduler")
            for key, priority in measured:
                queue.add(key, priority)
            kick(r, workers)
            target = len(warmup) + pods
            # Halfway, save the active configuration again as a new version (issue 4's live switch):
            # how long until the workers' first attempt on it, with the pods still flowing.
            wait(lambda: Pod.objects.filter(namespace="sched-test").exclude(node_name="").count()
                  >= len(warmup) + pods // 2, timeout, wp, "half the pods bound")
            switched = _switch_profile_version()
            wait(lambda: Pod.objects.filter(namespace="sched-test").exclude(node_name="").count() >= target,
                  timeout, wp, "all pods bound")
            elapsed = time.perf_counter() - t0
            if watch:
                watch.wait_seen(pods)
            rss = wp.peak_rss_mb()
            rows = list(Attempt.objects.filter(namespace="sched-test", started_at__gte=started_wall)
                        .values_list("result", "attempt_ms", "algorithm_ms", "e2e_ms", "binding_ms"))
            scheduled = [row for row in rows if row[0] == "scheduled"]
            over = Pod.objects.raw("SELECT 1 AS id FROM scheduler_node WHERE req_cpu > alloc_cpu OR req_pods > alloc_pods")
            return {
                "e2e_pods_per_s": round(pods / elapsed, 1),
                "e2e_seconds": round(elapsed, 3),
                "attempts": len(rows),
                "attempt_p50_ms": pct([row[1] for row in rows], 50),
                "attempt_p99_ms": pct([row[1] for row in rows], 99),
                "algorithm_p50_ms": pct([row[2] for row in rows], 50),
                "sli_p50_ms": pct([row[3] for row in scheduled if row[3] is not None], 50),
                "sli_p99_ms": pct([row[3] for row in scheduled if row[3] is not None], 99),
                "binding_p50_ms": pct([row[4] for row in scheduled if row[4] is not None], 50),
                "binding_p99_ms": pct([row[4] for row in scheduled if row[4] is not None], 99),
                "worker_peak_rss_mb": rss,
                "overcommitted_nodes": len(list(over)),
                **_switch_report(switched),
                **(watch.report() if watch else {}),
            }
    finally:
        if watch is not None:
            watch.stop()
        if wp is not None:
            wp.stop()
        for key in r.scan_iter(match=prefix + "*", count=1000):
            r.delete(key)
        loop._worker = None
        admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _switch_profile_version():
    from ..versions.services import config_active, config_version_create

    _, config = config_active()
    return config_version_create(config=config, reason="bench: live switch-over")


def _switch_report(version) -> dict:
    """Save → the first attempt on the new version, and whether any later attempt still ran the old one."""
    from ..models import Attempt

    attempts = Attempt.objects.filter(namespace="sched-test")
    first_new = attempts.filter(profile_version=version.number).order_by("started_at").first()
    if first_new is None:
        return {"profile_switch_ms": None, "profile_switch_late_old_attempts": None}
    late_old = attempts.filter(profile_version__lt=version.number, started_at__gt=first_new.started_at).count()
    return {"profile_switch_ms": round((first_new.started_at - version.created_at).total_seconds() * 1000, 1),
            "profile_switch_late_old_attempts": late_old}


def kick(r, workers: int) -> None:
    """Send the first schedule tasks; from then on the workers keep themselves busy."""
    from ..tasks import schedule

    for _ in range(workers):
        schedule.apply_async(args=[None])


def wait(predicate, timeout: float, wp: WorkerProcesses, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise RuntimeError(f"benchmark timed out waiting for {what}\n{wp.logs()}")
