"""`bench --backend kubernetes`: pods created through a loopback kube-apiserver, scheduled by the
production shape (one `kube run` replica holding the Lease, Celery workers, beat), watched until bound.

Reported, never asserted: pods/s from the first pod created to the last seen bound (by our own
watch, as a user would see it), the binding call's latency (pods/binding, from the Attempt rows),
create→bound latency per pod, the mirror's lag (the create call's answer → the pod's row queued in
Postgres, `Pod.queued_at`) and how often the replica's client dropped a connection for want of room in
its pool ("Connection pool is full" in its log). It works in its own database and Redis prefix, and
drops them.

With `backlog`, the pods are created while no replica runs (after the warm-up it stops, releasing its
Lease), then one starts: pods/s, create→bound and the mirror lag count from its start, and
`kube_first_bound_s` says when its first binding was seen.

The replica runs with the client rate limit raised (SCHEDBOARD_KUBE_QPS/BURST, as scheduler_perf raises
kube-scheduler's clientConnection.qps/burst): the bench measures the scheduler, not the throttle.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from .e2e import UseDatabase, admin_execute, bench_database_url, pct, wait
from ..testing.workers import BASE_DIR, WorkerProcesses, purge_broker, worker_env

NODE_ALLOCATABLE = {"cpu": "4", "memory": "32Gi", "pods": "110"}
POD_REQUESTS = {"cpu": "100m", "memory": "500Mi"}
NAMESPACE = "sched-test"
# The replica's client rate limit in the bench (unless --client-qps/--client-burst say otherwise), as
# scheduler_perf runs kube-scheduler (qps/burst 5000).
BENCH_QPS = BENCH_BURST = 5000
POOL_FULL = b"Connection pool is full"


def _node(name):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": NODE_ALLOCATABLE, "capacity": NODE_ALLOCATABLE}}


def _pod(name):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"schedulerName": "default-scheduler",
                     "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": POD_REQUESTS}}]}}


class _BoundWatcher:
    """Our own watch on the namespace: when each pod is first seen with spec.nodeName."""

    def __init__(self, core, resource_version: str):
        self.core = core
        self.rv = resource_version
        self.bound_at: dict[str, float] = {}
        self.nodes: dict[str, str] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        import json

        from kubernetes.watch.watch import iter_resp_lines

        while not self.stop.is_set():
            try:
                response = self.core.list_namespaced_pod(NAMESPACE, watch=True, resource_version=self.rv,
                                                         timeout_seconds=30, _preload_content=False)
                for line in iter_resp_lines(response):
                    event = json.loads(line)
                    obj = event["object"]
                    self.rv = obj["metadata"].get("resourceVersion") or self.rv
                    node = (obj.get("spec") or {}).get("nodeName")
                    name = obj["metadata"]["name"]
                    if node and name not in self.bound_at:
                        self.bound_at[name] = time.perf_counter()
                        self.nodes[name] = node
                    if self.stop.is_set():
                        return
            except Exception:  # noqa: BLE001 - resume from rv
                time.sleep(0.05)


def _stop(proc) -> None:
    if proc is not None and proc.poll() is None:
        proc.terminate()  # a clean stop: the replica releases its Lease
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cpu_seconds(pids) -> float:
    """User + system CPU the live processes used so far (/proc/PID/stat), 0 for one that is gone."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (the 14th and 15th fields)
    return total / tick


def _cpu_by_part(parts: dict[str, list[int]]) -> dict[str, float]:
    return {part: cpu_seconds(pids) for part, pids in parts.items()}


@dataclass
class Scheduler:
    """What the shape drives: `start()` a scheduler process (again after `stop(proc)` for a backlog),
    `pids()` the processes whose CPU is its cost (by part: name -> pids), `logs()` for a timeout's message."""

    start: Callable[[], subprocess.Popen]
    stop: Callable[[subprocess.Popen], None]
    pids: Callable[[subprocess.Popen | None], dict[str, list[int]]]
    logs: Callable[[], str]
    proc: subprocess.Popen | None = None  # the one running now (drive_shape leaves it running)


@dataclass
class Drive:
    """One shape driven through the API: who was created when, who was seen bound when and where."""

    names: list[str]
    created_at: dict[str, float]
    created_wall: dict[str, float]
    watcher: _BoundWatcher
    t0: float
    elapsed: float
    first_bound_s: float
    created_s: float
    cpu_s: dict[str, float]  # by part of the scheduler
    backlog: bool
    apiserver_cpu_s: float

    def figures(self, prefix: str) -> dict:
        """pods/s, created -> bound and the checks every scheduler's run reports, under `prefix`."""
        e2e = [(self.watcher.bound_at[p] - self.created_at[p]) * 1000.0 for p in self.names]
        per_node: dict[str, int] = {}
        for p in self.names:
            per_node[self.watcher.nodes[p]] = per_node.get(self.watcher.nodes[p], 0) + 1
        pods = len(self.names)
        return {
            f"{prefix}_pods_per_s": round(pods / self.elapsed, 1),
            f"{prefix}_seconds": round(self.elapsed, 3),
            f"{prefix}_first_bound_s": round(self.first_bound_s, 3),
            # From the first binding seen to the last: the rate once started (a backlog's start-up left out).
            f"{prefix}_after_first_pods_per_s": round((pods - 1) / (self.elapsed - self.first_bound_s), 1)
            if pods > 1 and self.elapsed > self.first_bound_s else None,
            f"{prefix}_create_pods_per_s": round(pods / self.created_s, 1),
            # Live, the pods come no faster than they are created: a scheduler that keeps up binds at the
            # creation rate (1.0), and its created -> bound stays short; one that does not falls behind.
            f"{prefix}_vs_create_rate": None if self.backlog else round(self.created_s / self.elapsed, 3),
            f"{prefix}_create_to_bound_p50_ms": pct(e2e, 50),
            f"{prefix}_create_to_bound_p99_ms": pct(e2e, 99),
            # The scheduler's processes, and the API server's, while the measured pods were scheduled.
            f"{prefix}_cpu_s_per_1000_pods": round(sum(self.cpu_s.values()) * 1000.0 / pods, 2),
            **({f"{prefix}_{part}_cpu_s_per_1000_pods": round(cpu * 1000.0 / pods, 2) for part, cpu in self.cpu_s.items()}
               if len(self.cpu_s) > 1 else {}),
            f"{prefix}_apiserver_cpu_s_per_1000_pods": round(self.apiserver_cpu_s * 1000.0 / pods, 2),
            # 40 pods of 100m fill a node's 4 CPUs.
            f"{prefix}_overcommitted_nodes": sum(1 for n in per_node.values() if n * 100 > 4000),
        }


class _Waiter:
    """e2e.wait's process check: the logs to show when the wait times out."""

    def __init__(self, logs):
        self.logs = logs


def drive_shape(cluster, *, nodes: int, pods: int, backlog: bool, scheduler: Scheduler, say, timeout: float) -> Drive:
    """The shape every scheduler is measured on: `nodes` nodes, a warm-up of 20 pods (not measured), then
    `pods` pods created by 8 client threads while the scheduler runs or, with `backlog`, while none runs
    (then it starts, and everything counts from its start). Leaves the scheduler running."""
    from kubernetes import client

    from ..kube.client import call

    api = cluster.api_client()
    core = client.CoreV1Api(api)
    waiter = _Waiter(scheduler.logs)
    call(core.create_namespace, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: call(core.create_node, _node(f"node-{i}")), range(nodes)))
    proc = scheduler.start()
    try:
        # Warm-up (not measured): leader elected, watches synced, workers loaded.
        warm = [f"warm-{i}" for i in range(20)]
        start_rv = call(core.list_namespaced_pod, NAMESPACE)["metadata"]["resourceVersion"]
        watcher = _BoundWatcher(core, start_rv)
        for p in warm:
            call(core.create_namespaced_pod, NAMESPACE, _pod(p))
        wait(lambda: all(p in watcher.bound_at for p in warm), timeout, waiter, "warm-up pods bound")
        if backlog:
            say("warm; stopping the scheduler")
            scheduler.stop(proc)
        say(f"creating {pods} pods through the API")
        names = [f"pod-{i}" for i in range(pods)]
        created_at: dict[str, float] = {}
        created_wall: dict[str, float] = {}  # the mirror's rows carry wall-clock times

        def create(p):
            call(core.create_namespaced_pod, NAMESPACE, _pod(p))
            created_at[p] = time.perf_counter()
            created_wall[p] = time.time()

        apiserver = [cluster.pids["kube-apiserver"]]
        cpu0, api_cpu0 = _cpu_by_part(scheduler.pids(proc)), cpu_seconds(apiserver)
        t0 = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(create, names))
        created_s = time.perf_counter() - t0
        if backlog:
            say("starting the scheduler on the backlog")
            t0 = time.perf_counter()
            started_wall = time.time()
            created_at = dict.fromkeys(names, t0)  # each pod waits from the scheduler's start
            created_wall = dict.fromkeys(names, started_wall)
            api_cpu0 = cpu_seconds(apiserver)
            proc = scheduler.start()
            cpu0 = _cpu_by_part(scheduler.pids(None))  # the new process's counts from its start
        wait(lambda: all(p in watcher.bound_at for p in names), timeout, waiter, "all pods bound")
        cpu = {part: spent - cpu0.get(part, 0.0) for part, spent in _cpu_by_part(scheduler.pids(proc)).items()}
        api_cpu = cpu_seconds(apiserver) - api_cpu0
        watcher.stop.set()
        return Drive(names=names, created_at=created_at, created_wall=created_wall, watcher=watcher, t0=t0,
                     elapsed=max(watcher.bound_at[p] for p in names) - t0,
                     first_bound_s=min(watcher.bound_at[p] for p in names) - t0, created_s=created_s,
                     cpu_s=cpu, apiserver_cpu_s=api_cpu, backlog=backlog)
    finally:
        scheduler.proc = proc  # the caller stops the one running now
        api.close()


def _stages(d: Drive, queued: dict, attempts) -> dict:
    """A bound pod's way, stage by stage, from our own rows (wall times; each pod's scheduled attempt):
    queued (the mirror) -> its batch started (`started_at`: the queue and the wake-up of a worker) -> its
    attempt written (`finished_at`: the batch, its reservation) -> the leader's binding cycle started (the
    hand-off through Redis and the committer: `queued_at + e2e_ms`) -> the call answered (`binding_ms`) -> our
    watch saw it bound (the watch's delivery)."""
    offset = {p: d.created_wall[p] - d.created_at[p] for p in d.names}  # perf_counter -> wall, per pod
    parts: dict[str, list[float]] = {"to_batch": [], "batch": [], "handoff": [], "call": [], "to_seen": []}
    for name, started, finished, e2e_ms, binding_ms in attempts:
        first = queued.get(name)
        if first is None or e2e_ms is None or name not in d.watcher.bound_at:
            continue
        cycle = first.timestamp() + e2e_ms / 1000.0
        answered = cycle + (binding_ms or 0.0) / 1000.0
        seen = d.watcher.bound_at[name] + offset[name]
        parts["to_batch"].append((started.timestamp() - first.timestamp()) * 1000.0)
        parts["batch"].append((finished - started).total_seconds() * 1000.0)
        parts["handoff"].append((cycle - finished.timestamp()) * 1000.0)
        parts["call"].append(binding_ms or 0.0)
        parts["to_seen"].append((seen - answered) * 1000.0)
    return {f"kube_{part}_p{q}_ms": pct(values, q) for part, values in parts.items() for q in (50, 99)}


def run_kubernetes(*, nodes: int, pods: int, workers: int, backlog: bool = False, qps: float = BENCH_QPS,
                   burst: int = BENCH_BURST, progress=None, timeout: float = 900.0) -> dict:
    """Pods created live while the replica schedules; with `backlog`, all created while no replica runs,
    then one started (timed from its start: its list is mirrored, then the pods bound)."""
    from django.core.management import call_command

    from .. import loop
    from ..testing.kube_apiserver import local_kube_cluster
    from ..models import Attempt, Binding, Pod
    from ..queue.queues import get_redis

    say = progress or (lambda msg: None)
    url, name = bench_database_url()
    prefix = f"schedboard-kbench:{int(time.time())}:q"
    r = get_redis()
    if r is None:
        raise RuntimeError("the kubernetes benchmark needs Redis: set REDIS_URL=redis://...")
    admin_execute(f'DROP DATABASE IF EXISTS "{name}"')
    admin_execute(f'CREATE DATABASE "{name}"')
    purge_broker(settings.REDIS_URL)
    wp = None
    sched = None
    say("starting kube-apiserver and etcd on loopback")
    with local_kube_cluster() as cluster:
        try:
            with UseDatabase(name):
                call_command("migrate", verbosity=0)
                env = worker_env(database_url=url, redis_url=settings.REDIS_URL, queue_prefix=prefix,
                                 SCHEDBOARD_BACKEND="kubernetes", KUBECONFIG=str(cluster.kubeconfig),
                                 SCHEDBOARD_KUBE_NAMESPACE="default", SCHEDBOARD_RECONCILE_MS="500",
                                 SCHEDBOARD_KUBE_QPS=str(qps), SCHEDBOARD_KUBE_BURST=str(burst))
                wp = WorkerProcesses(workers, env, beat=True).start()
                replica_log = open(wp.log_dir / "replica.log", "ab")

                def start_replica():
                    return subprocess.Popen([sys.executable, "manage.py", "kube", "run"], cwd=BASE_DIR, env=env,
                                            stdout=replica_log, stderr=subprocess.STDOUT, start_new_session=True)

                sched = Scheduler(start=start_replica, stop=_stop, logs=wp.logs,
                                  pids=lambda proc: {"replica": [proc.pid] if proc is not None else [],
                                                     "workers": wp.pids(),
                                                     "beat": [wp.beat_proc.pid] if wp.beat_proc else []})
                d = drive_shape(cluster, nodes=nodes, pods=pods, backlog=backlog, scheduler=sched, say=say,
                                timeout=timeout)
                names = d.names
                # The figures below come from our own tables: wait for the audit to hold every binding (the
                # mirror or the binder writes it just after the API has it) and for the binder's timings.
                wait(lambda: Binding.objects.filter(namespace=NAMESPACE, pod_name__in=names).count() == len(names),
                     timeout, wp, "every binding recorded")
                settled = time.monotonic() + 10.0
                while time.monotonic() < settled and Attempt.objects.filter(
                        namespace=NAMESPACE, pod_name__in=names, result="scheduled", binding_ms__isnull=True).exists():
                    time.sleep(0.1)
                rows = list(Attempt.objects.filter(namespace=NAMESPACE, pod_name__in=names, result="scheduled")
                            .values_list("binding_ms", "attempt_ms"))
                # Where the time goes after the mirror: in the queue (queue_wait_ms), and from first queued
                # to bound as the scheduler saw it (e2e_ms, kube-scheduler's SLI).
                waits = list(Attempt.objects.filter(namespace=NAMESPACE, pod_name__in=names)
                             .values_list("queue_wait_ms", flat=True))
                sli = list(Attempt.objects.filter(namespace=NAMESPACE, pod_name__in=names, result="scheduled")
                           .values_list("e2e_ms", flat=True))
                queued = dict(Pod.objects.filter(namespace=NAMESPACE, name__in=names, queued_at__isnull=False)
                              .values_list("name", "queued_at"))
                lag = [(queued[p].timestamp() - d.created_wall[p]) * 1000.0 for p in names if p in queued]
                stages = _stages(d, queued, Attempt.objects.filter(namespace=NAMESPACE, pod_name__in=names,
                                                                   result="scheduled")
                                 .values_list("pod_name", "started_at", "finished_at", "e2e_ms", "binding_ms"))
                replica_log.flush()
                pool_full = (wp.log_dir / "replica.log").read_bytes().count(POOL_FULL)
                return {
                    "backend": "kubernetes", "kube_backlog": backlog,
                    "kube_nodes": nodes, "kube_pods": pods, "kube_workers": workers,
                    **d.figures("kube"),
                    "kube_bind_p50_ms": pct([b for b, _ in rows if b is not None], 50),
                    "kube_bind_p99_ms": pct([b for b, _ in rows if b is not None], 99),
                    "kube_attempt_p50_ms": pct([a for _, a in rows if a is not None], 50),
                    "kube_queue_wait_p50_ms": pct([w for w in waits if w is not None], 50),
                    "kube_queue_wait_p99_ms": pct([w for w in waits if w is not None], 99),
                    "kube_queued_to_bound_p50_ms": pct([e for e in sli if e is not None], 50),
                    "kube_queued_to_bound_p99_ms": pct([e for e in sli if e is not None], 99),
                    "kube_mirror_lag_p50_ms": pct(lag, 50),
                    "kube_mirror_lag_p99_ms": pct(lag, 99),
                    **stages,
                    "kube_pool_full_warnings": pool_full,
                    "kube_client_qps": qps, "kube_client_burst": burst,
                }
        finally:
            if sched is not None:
                _stop(sched.proc)
            if wp is not None:
                wp.stop()
            for key in r.scan_iter(match=prefix + "*", count=1000):
                r.delete(key)
            loop.reset_worker()
            admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
