"""The benchmark: scheduler_perf's SchedulingBasic shape through the engine alone, through the
per-node reference, and end to end through real Celery workers, Redis and Postgres.

Speed is reported, never asserted. The end-to-end run works in its own database
(`<name>_bench` next to the configured one) and its own Redis key prefix, and drops them after.
"""

from __future__ import annotations

import copy
import json
import os
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg
from django.conf import settings
from django.db import connection, connections, transaction
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
QUEUE_CHUNK = 500


@dataclass
class ChurnLoad:
    """scheduler_perf's churn op (mode create) during the measured phase: `make(i)` is the i-th pod's manifest,
    created every `interval` seconds in `namespace` and queued, as a watch would queue it."""

    make: Callable[[int], dict]
    interval: float
    namespace: str


@dataclass
class Loaded:
    """What a run loaded: the measured pods' keys (held until the clock starts), the warm-up pods' keys, and
    the namespaces the two live in (no other pod is there, so their bound pods are counted there); a churn op."""

    measured: list[str]
    warmup: list[str]
    namespaces: tuple[str, ...]
    churn: ChurnLoad | None = None


class Churner(threading.Thread):
    """Creates the churn op's pods on its ticker in this process, with its own connection to the bench database,
    each row written as the API server would store it (no admission of ours: scheduler_perf's API server runs
    without the Priority plugin) and queued at once, until stopped."""

    def __init__(self, churn: ChurnLoad, queue):
        super().__init__(name="bench-churn", daemon=True)
        self.churn, self.queue = churn, queue
        self.stopped = threading.Event()
        self.created: list[str] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        next_tick = time.monotonic() + self.churn.interval
        try:
            while not self.stopped.wait(max(0.0, next_tick - time.monotonic())):
                next_tick += self.churn.interval
                manifest = self.churn.make(len(self.created))
                [key] = load_manifests(nodes=[], placed=[], pending=[manifest])
                priority = int((manifest.get("spec") or {}).get("priority") or 0)
                self.queue.add(key, priority)
                self.created.append(key)
        except BaseException as exc:  # noqa: BLE001 - reported by the run, which then fails
            self.error = exc
        finally:
            connections.close_all()

    def stop(self) -> list[str]:
        self.stopped.set()
        self.join(30)
        if self.error is not None:
            raise RuntimeError(f"the churn op failed: {self.error!r}") from self.error
        return self.created


def load_manifests(*, nodes: list[dict], placed: list[tuple[dict, str]], pending: list[dict], held: int = 0,
                   objects: list[dict] = ()) -> list[str]:
    """Nodes (their usage counted from the placed pods), cluster objects, the placed pods bound to their
    nodes and the pending pods (the first `held` held), in bulk; the pending pods' keys."""
    from ..cluster.objects import cluster_object_upsert_mirrored
    from ..manifests.objects import node_from_manifest, parse_object, pod_from_manifest
    from ..models import Node, Pod

    now = timezone.now()
    usage_by_spec: dict[str, dict] = {}

    def usage_of(manifest: dict) -> dict:
        # Pods of one template differ only in metadata: parse each distinct spec once (priority: spec.priority).
        key = json.dumps(manifest.get("spec"), sort_keys=True)
        if key not in usage_by_spec:
            spec = pod_from_manifest(manifest)
            usage_by_spec[key] = {**pod_usage_fields(spec), "priority": spec.priority}
        return usage_by_spec[key]

    per_node: dict[str, dict[str, int]] = {}
    for manifest, node_name in placed:
        total = per_node.setdefault(node_name, {})
        usage = usage_of(manifest)
        for f in ("req_cpu", "req_memory", "nonzero_cpu", "nonzero_memory"):
            total[f] = total.get(f, 0) + usage[f]
        total["req_pods"] = total.get("req_pods", 0) + 1
    node_rows = []
    alloc_by_status: dict[str, dict] = {}
    for m in nodes:
        key = json.dumps(m.get("status"), sort_keys=True)
        if key not in alloc_by_status:
            alloc_by_status[key] = node_from_manifest(m).allocatable
        alloc = alloc_by_status[key]
        used = per_node.get(m["metadata"]["name"], {})
        node_rows.append(Node(
            name=m["metadata"]["name"], manifest=m, alloc_cpu=alloc.get("cpu", 0), alloc_memory=alloc.get("memory", 0),
            alloc_ephemeral=alloc.get("ephemeral-storage", 0), alloc_pods=alloc.get("pods", 0),
            req_cpu=used.get("req_cpu", 0), req_memory=used.get("req_memory", 0), req_pods=used.get("req_pods", 0),
            nonzero_cpu=used.get("nonzero_cpu", 0), nonzero_memory=used.get("nonzero_memory", 0)))

    def pod_row(manifest, node_name="", scheduler_name="default-scheduler"):
        meta = manifest["metadata"]
        meta.setdefault("uid", str(uuid.uuid4()))
        return Pod(namespace=meta["namespace"], name=meta["name"], uid=meta["uid"], manifest=manifest, created_at=now,
                   node_name=node_name, phase=Pod.RUNNING if node_name else Pod.PENDING,
                   scheduled_status="True" if node_name else "", bound_at=now if node_name else None,
                   scheduler_name=scheduler_name, **usage_of(manifest))

    with transaction.atomic():
        for obj in objects:
            _, parsed = parse_object(copy.deepcopy(obj))
            cluster_object_upsert_mirrored(kind=parsed.kind, namespace=parsed.namespace, name=parsed.name,
                                           uid=str(uuid.uuid4()), labels=parsed.labels, selector=parsed.selector,
                                           replicas=parsed.replicas, manifest=parsed.manifest)
        if node_rows:
            Node.objects.bulk_create(node_rows, batch_size=2000)
        Pod.objects.bulk_create([pod_row(m, node_name) for m, node_name in placed], batch_size=2000)
        Pod.objects.bulk_create([pod_row(m, scheduler_name=HELD_SCHEDULER_NAME if i < held else "default-scheduler")
                                 for i, m in enumerate(pending)], batch_size=2000)
    if nodes and connection.vendor == "postgresql":
        # A database loaded a moment ago has no statistics until autovacuum's analyze comes round (a minute or
        # more; a deployment's tables have had theirs for long): the planner then takes the thousands of pending
        # pods for one row and the workers' reservations scan them all, each batch (EXPLAIN ANALYZE, load 3–4: 38 ms a
        # batch of 256).
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE scheduler_node, scheduler_pod")
    return [f"{m['metadata']['namespace']}/{m['metadata']['name']}" for m in pending]


def _pod_manifest(namespace: str, name: str) -> dict:
    return {**copy.deepcopy(POD_MANIFEST), "metadata": {"name": name, "namespace": namespace}}


def load_cluster(nodes: int, placed: int, pods: int, seed: int, held: int = 0) -> list[tuple[str, int]]:
    """SchedulingBasic's cluster: default nodes, `placed` default pods bound to random nodes, `pods` pending
    default pods (the first `held` held), in bulk."""
    rng = np.random.default_rng(seed)
    hosts = rng.integers(0, nodes, size=placed)
    keys = load_manifests(
        nodes=[{**NODE_MANIFEST, "metadata": {"name": f"node-{i}"}} for i in range(nodes)],
        placed=[(_pod_manifest("init", f"init-pod-{i}"), f"node-{int(h)}") for i, h in enumerate(hosts)],
        pending=[_pod_manifest("sched-test", f"pod-{i}") for i in range(pods)], held=held)
    return [(key, 0) for key in keys]


def basic_loader(nodes: int, placed: int, pods: int, seed: int):
    """SchedulingBasic's cluster, with 50 more default pods beside the measured ones for the warm-up."""
    def load() -> Loaded:
        keys = [key for key, _ in load_cluster(nodes, placed, pods + 50, seed, held=pods)]
        return Loaded(measured=keys[:pods], warmup=keys[-50:], namespaces=("sched-test",))
    return load


def run_e2e(*, nodes: int, placed: int, pods: int, workers: int, seed: int = 0, timeout: float = 900.0,
            progress=None, viewers: int = 0, loader=None, counters=None, feed=None) -> dict:
    """`pods` pods through real workers; `loader` (in the bench database) loads the cluster and says which
    pods are measured, which warm up and where they live (default: SchedulingBasic's, basic_loader). `counters`
    (bench/counters.py) also reports the run's reservation conflicts and Postgres/Redis costs per pod.
    `feed` (arrival.ArrivalFeed) queues the measured pods on its own schedule instead of all at once (no
    live switch-over then); its report is under "feed"."""
    from django.core.management import call_command

    from .. import loop
    from ..models import Attempt, Binding, DeletedPod, Pod
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
            loaded = (loader or basic_loader(nodes, placed, pods, seed))()
            namespaces = loaded.namespaces
            queue = RedisQueue(r, prefix=prefix)
            env = worker_env(database_url=url, redis_url=settings.REDIS_URL, queue_prefix=prefix,
                             SCHEDBOARD_LIVE_PREFIX=f"{prefix}:live", **(counters.env() if counters else {}))
            if viewers:  # --dashboard: a daphne server and N websocket clients on the overview, all the run long
                from .viewers import Viewers

                # Before the workers: the reconciler would queue the pending pods while daphne starts.
                say(f"starting daphne and {viewers} overview viewers")
                watch = Viewers(viewers, env).start()
            wp = WorkerProcesses(workers, env, beat=True).start()
            # Warm-up (not measured): workers start, load the node snapshot, parse the profile.
            warmup, measured = loaded.warmup, loaded.measured

            def bound() -> int:
                return Pod.objects.filter(namespace__in=namespaces).exclude(node_name="").count()

            def done() -> int:
                # Bound, or preempted: a measured pod a preemption evicted leaves the run unplaced.
                return bound() + (DeletedPod.objects.filter(namespace__in=namespaces).count() if loaded.churn else 0)

            def all_done(target: int, first_binding: int):
                # Polled every 50 ms: the newest Binding id is one index probe, where counting the bound
                # pods reads them all (at 10,000 pods, a tenth of a core of the machine the workers
                # share); the count is asked only once enough bindings exist (ids have gaps; with churn,
                # preempted pods have none: then the count each time).
                def check() -> bool:
                    if not loaded.churn:
                        newest = Binding.objects.order_by("-id").values_list("id", flat=True).first() or 0
                        if newest - first_binding < target - len(warmup):
                            return False
                    return done() >= target
                return check

            for key in warmup:
                queue.add(key, 0)
            kick(r, workers)
            wait(lambda: bound() >= len(warmup), timeout, wp, "warm-up pods bound")
            if watch:
                watch.measure(settle=len(warmup))
            say(f"warm; queueing {pods} pods")
            first_binding = Binding.objects.order_by("-id").values_list("id", flat=True).first() or 0
            cpu_before = _cpu_seconds(wp, name)
            if counters:
                counters.start(name)
            started_wall = timezone.now()
            t0 = time.perf_counter()
            churner = Churner(loaded.churn, queue) if loaded.churn else None
            if churner:
                churner.start()  # as scheduler_perf's churn op: its ticker runs from the measured op's start
            if feed is None:
                # Handed to the default profile and queued 500 at a time, the first chunk kicking the workers: a
                # pod pending in Postgres and not yet queued is one the reconciler (each second) adds itself, one
                # call each, in a worker's time (all 10,000 at once, then queued one by one, cost the workers
                # seconds of re-adding). Each chunk's adds go through one pipeline.
                for i in range(0, len(measured), QUEUE_CHUNK):
                    chunk = measured[i:i + QUEUE_CHUNK]
                    Pod.objects.filter(namespace__in=namespaces, name__in=[k.split("/", 1)[1] for k in chunk]).update(
                        queued_at=started_wall, scheduler_name="default-scheduler")
                    piped = RedisQueue(r.pipeline(transaction=False), prefix=prefix)
                    for key in chunk:
                        piped.add(key, 0)
                    piped.redis.execute()
                    if i == 0:
                        kick(r, workers)
            else:
                feed.run(measured=measured, namespaces=namespaces, redis=r, prefix=prefix)
            queued_seconds = time.perf_counter() - t0
            target = len(warmup) + pods
            switched = None
            if feed is None:
                # Halfway, save the active configuration again as a new version (issue 4's live switch):
                # how long until the workers' first attempt on it, with the pods still flowing.
                wait(all_done(len(warmup) + pods // 2, first_binding), timeout, wp, "half the pods bound")
                switched = _switch_profile_version()
            wait(all_done(target, first_binding), timeout, wp, "all pods bound")
            elapsed = time.perf_counter() - t0
            cpu_after = _cpu_seconds(wp, name)
            churn = _churn_report(churner.stop(), loaded, started_wall, wp) if churner else {}
            if watch:
                watch.wait_seen(pods)
            rss = wp.peak_rss_mb()
            counted = counters.stop(wp, name, pods) if counters else {}  # stops the workers
            rows = list(Attempt.objects.filter(namespace__in=namespaces, started_at__gte=started_wall)
                        .values_list("result", "attempt_ms", "algorithm_ms", "e2e_ms", "binding_ms"))
            scheduled = [row for row in rows if row[0] == "scheduled"]
            over = Pod.objects.raw("SELECT 1 AS id FROM scheduler_node WHERE req_cpu > alloc_cpu OR req_pods > alloc_pods")
            return {
                "e2e_pods_per_s": round(pods / elapsed, 1),
                "e2e_seconds": round(elapsed, 3),
                "queueing_seconds": round(queued_seconds, 3),
                "attempts": len(rows),
                "attempt_p50_ms": pct([row[1] for row in rows], 50),
                "attempt_p99_ms": pct([row[1] for row in rows], 99),
                "algorithm_p50_ms": pct([row[2] for row in rows], 50),
                "sli_p50_ms": pct([row[3] for row in scheduled if row[3] is not None], 50),
                "sli_p99_ms": pct([row[3] for row in scheduled if row[3] is not None], 99),
                "binding_p50_ms": pct([row[4] for row in scheduled if row[4] is not None], 50),
                "binding_p99_ms": pct([row[4] for row in scheduled if row[4] is not None], 99),
                "worker_peak_rss_mb": rss,
                # CPU time per pod while the measured pods went through (a shared machine's load slows the
                # wall clock, much less this): the worker processes, beat, and the database's backends.
                **_cpu_report(cpu_before, cpu_after, pods),
                "overcommitted_nodes": len(list(over)),
                **churn,
                **counted,
                **(_switch_report(switched, namespaces) if feed is None else {"feed": feed.report(namespaces)}),
                **(watch.report() if watch else {}),
            }
    finally:
        if watch is not None:
            watch.stop()
        if wp is not None:
            wp.stop()
        for key in r.scan_iter(match=prefix + "*", count=1000):
            r.delete(key)
        loop.reset_worker()
        admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _proc_cpu(pid: int) -> float | None:
    """utime + stime of a process in seconds (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_seconds(wp: WorkerProcesses, database: str) -> dict[str, dict[int, float]]:
    """CPU seconds so far of the workers, beat and the Postgres backends serving `database` (on this host)."""
    from django.db import connection

    with connection.cursor() as cursor:
        # (Not this process's own backend: its polling is the benchmark's, not the scheduler's.)
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [database])
        backends = [row[0] for row in cursor.fetchall()]
    groups = {"workers": wp.pids(), "beat": [wp.beat_proc.pid] if wp.beat_proc is not None else [],
              "postgres": backends}
    return {k: {pid: c for pid in pids if (c := _proc_cpu(pid)) is not None} for k, pids in groups.items()}


def _cpu_report(before: dict, after: dict, pods: int) -> dict:
    out = {}
    for group in ("workers", "beat", "postgres"):
        spent = sum(v - before.get(group, {}).get(pid, 0.0) for pid, v in after.get(group, {}).items())
        out[f"cpu_ms_per_pod_{group}"] = round(spent * 1000.0 / pods, 3) if pods else None
    out["postgres_backends"] = len(after.get("postgres", {}))
    return out


CHURN_SETTLE_SECONDS = 60.0


def _churn_report(created: list[str], loaded: Loaded, started, wp) -> dict:
    """What the churn op's pods did: their failed attempts (each ran DefaultPreemption's PostFilter), those that
    nominated a node, the victims (their Preempted events: each was deleted by the preempt task), the preemptors
    bound once their preemption is settled (waited for up to CHURN_SETTLE_SECONDS after the measured pods)."""
    from django.db.models import Sum

    from ..models import RESULT_UNSCHEDULABLE, Attempt, DeletedPod, Event, Pod

    ns = loaded.churn.namespace
    churned = Pod.objects.filter(namespace=ns)
    deadline = time.monotonic() + CHURN_SETTLE_SECONDS
    # Every churned pod still pending: a preemption under way (its victims going, the preemptor to bind), or one
    # created just before the measured pods were all bound and not yet attempted (a run shorter than the ticker).
    while time.monotonic() < deadline and churned.filter(node_name="").exists():
        time.sleep(0.1)
    failed = list(Attempt.objects.filter(namespace=ns, started_at__gte=started, result=RESULT_UNSCHEDULABLE)
                  .values_list("trace", flat=True))
    return {
        "churned_pods": len(created),
        "preemption_attempts": len(failed),
        "preemptions": sum(bool(((t or {}).get("preemption") or {}).get("nominated")) for t in failed),
        # Deleted rows (the preempt task deletes each victim; nothing else deletes pods here), and their events.
        "preemption_victims": DeletedPod.objects.filter(deleted_at__gte=started).count(),
        "preempted_events": Event.objects.filter(reason="Preempted", last_timestamp__gte=started).aggregate(
            n=Sum("count"))["n"] or 0,
        "preemptors_bound": churned.exclude(node_name="").count(),
        "preemptors_pending": churned.filter(node_name="").count(),
        "measured_pods_preempted": DeletedPod.objects.filter(namespace__in=loaded.namespaces).count(),
    }


def _switch_profile_version():
    from ..versions.services import config_active, config_version_create

    _, config = config_active()
    return config_version_create(config=config, reason="bench: live switch-over")


def _switch_report(version, namespaces) -> dict:
    """Save → the first attempt on the new version, and whether any later attempt still ran the old one."""
    from ..models import Attempt

    attempts = Attempt.objects.filter(namespace__in=namespaces)
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
