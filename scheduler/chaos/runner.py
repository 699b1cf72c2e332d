"""What every chaos run shares: its own database and Redis keys, the Postgres proxy, the worker
processes, a clock, the fault log, and the parts of the report that do not depend on the backend.

The run works in a database of its own (`<name>_chaos` next to the configured one, dropped after
unless kept) and under Redis keys of its own; only the Redis FLUSHDB fault touches the whole Redis
database, and the run refuses to start when that database holds keys of anything else.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connections

from .pgproxy import ProxyProcess
from .plan import POSTGRES_OUTAGE, Plan
from .verdict import recovery


PROXY, RESTART = "proxy", "restart"
METRIC_DRIFT_REPAIRED = "schedboard_usage_drift_repaired_total"
METRIC_RECOUNTS = "schedboard_usage_recounts_total"
# The recount's period in a run: often enough that it runs several times within a short run's faults.
RECOUNT_SECONDS = "5"
BASE_DIR = Path(__file__).resolve().parents[2]


@dataclass
class Options:
    backend: str = "simulated"
    pods: int = 10_000
    nodes: int = 500
    workers: int = 2
    duration: float = 300.0
    settle: float | None = None  # default: see settle_seconds()
    seed: int = 0
    kills: int = 20
    redis_flushes: int = 1
    postgres_outages: int = 1
    postgres_fault: str = PROXY
    outage_seconds: float = 5.0
    apiserver_restarts: int = 1
    leader_kills: int = 1
    replicas: int = 2
    hostile: int | None = None  # default: every kind in the catalogue once
    bind_failures: float = 0.2
    keep_database: bool = False
    log_dir: str | None = None

    def settle_seconds(self) -> float:
        """How long after the last fault every pod must be bound or pending with a reason: a killed worker's
        pods come back after the in-flight lease, their reservations after the assume TTL; on kubernetes
        a binding marked in flight whose job was lost with Redis is freed after the binding timeout."""
        if self.settle is not None:
            return self.settle
        held = settings.SCHEDBOARD_ASSUME_TTL_SECONDS
        if self.backend == "kubernetes":
            held = max(held, settings.SCHEDBOARD_BINDING_TIMEOUT_SECONDS)
        return settings.SCHEDBOARD_INFLIGHT_LEASE_SECONDS + held + 30.0


@dataclass
class FaultRecord:
    kind: str
    at: float  # unix time the fault was injected
    t: float  # seconds from the start of the run
    detail: dict = field(default_factory=dict)


def run_database() -> tuple[str, str, str]:
    """(the run's database URL, its name, the server's maintenance URL)."""
    if not settings.DATABASE_URL.startswith(("postgres://", "postgresql://")):
        raise RuntimeError("the chaos run needs Postgres: set DATABASE_URL=postgres://...")
    parts = urlsplit(settings.DATABASE_URL)
    name = parts.path.lstrip("/") + "_chaos"
    return urlunsplit(parts._replace(path="/" + name)), name, urlunsplit(parts._replace(path="/postgres"))


def with_port(url: str, port: int) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    host = netloc[-1].rsplit(":", 1)[0] if ":" in netloc[-1] and not netloc[-1].endswith("]") else netloc[-1]
    new = f"{host}:{port}"
    return urlunsplit(parts._replace(netloc=(netloc[0] + "@" + new) if len(netloc) == 2 else new))


def postgres_upstream(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname or '127.0.0.1'}:{parts.port or 5432}"


def admin_execute(maintenance_url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(maintenance_url, autocommit=True) as conn:
        conn.execute(sql)


class UseDatabase:
    """Point this process's default connection at the run's database (directly, not through the proxy)."""

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


def retrying(fn: Callable, *, what: str, timeout: float = 120.0, say=None):
    """Call fn until Postgres answers: the run's own connection dies in a real Postgres restart too."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except (OperationalError, InterfaceError) as exc:
            if time.monotonic() > deadline:
                raise
            if say:
                say(f"{what}: Postgres unavailable ({str(exc).strip().splitlines()[0][:80]}), retrying")
            connections["default"].close()
            time.sleep(0.5)
            close_old_connections()


# ---- Redis ---------------------------------------------------------------------------------

def redis_owned_prefixes(prefix: str) -> tuple[str, ...]:
    """Keys a run (and this configuration's own processes) may leave in its Redis database."""
    return (prefix, settings.SCHEDBOARD_QUEUE_PREFIX, settings.SCHEDBOARD_LIVE_PREFIX,
            settings.CELERY_TASK_DEFAULT_QUEUE, "unacked", "_kombu", "schedboard:schedule-slots", "asgi")


def redis_check_own_database(r, prefix: str) -> None:
    """FLUSHDB wipes the whole database: refuse to run on one that holds anything else's keys."""
    allowed = redis_owned_prefixes(prefix)
    strangers = []
    for key in r.scan_iter(count=1000):
        key = key.decode(errors="replace") if isinstance(key, bytes) else key
        if not key.startswith(allowed):
            strangers.append(key)
            if len(strangers) >= 5:
                break
    if strangers:
        db = r.connection_pool.connection_kwargs.get("db", 0)
        raise RuntimeError(
            f"REDIS_URL database {db} holds keys that are not this configuration's ({', '.join(strangers)}): "
            "the chaos run FLUSHes its Redis database; give it a database of its own (or --redis-flushes 0)")


def redis_purge_broker(r) -> None:
    """Task messages an earlier run left for this deployment's Celery queues."""
    r.delete(*settings.CELERY_TASK_QUEUES, "unacked", "unacked_index", "schedboard:schedule-slots")


# ---- Postgres outage -----------------------------------------------------------------------

def postgres_restart() -> dict:
    """`pg_ctlcluster <version> main restart`: a real restart of the server (shared by everything on it)."""
    versions = sorted(os.listdir("/etc/postgresql"))
    if len(versions) != 1:
        raise RuntimeError(f"--postgres-fault restart: expected one cluster version in /etc/postgresql, found {versions}")
    started = time.time()
    done = subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", versions[0], "main", "restart"],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"pg_ctlcluster restart failed: {done.stderr.strip() or done.stdout.strip()}")
    return {"restart_s": round(time.time() - started, 2)}


# ---- metrics -------------------------------------------------------------------------------

def metric_total(directory: str, sample_name: str) -> float | None:
    """The sum of a counter over every process that wrote into `directory`; None if nobody wrote it."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=directory)
    total, seen = 0.0, False
    for family in registry.collect():
        for sample in family.samples:
            if sample.name == sample_name:
                total += sample.value
                seen = True
    return total if seen else None


# ---- the run's clock and faults --------------------------------------------------------------

class Clock:
    def __init__(self):
        self.start_wall = time.time()
        self.start = time.monotonic()

    def t(self) -> float:
        return time.monotonic() - self.start

    def wall(self, t: float) -> float:
        return self.start_wall + t


def recovery_report(faults: list[FaultRecord], bind_times: list[float], until: float) -> dict:
    """Per fault kind: how many, when, and the recovery after each (see verdict.recovery)."""
    out: dict[str, dict] = {}
    for f in faults:
        entry = out.setdefault(f.kind, {"count": 0, "at_s": [], "recovery_s": [], "first_binding_s": [],
                                        "pre_rate_per_s": []})
        entry["count"] += 1
        entry["at_s"].append(round(f.t, 2))
        measured = recovery(bind_times, f.at, until=until)
        entry["recovery_s"].append(measured["recovery_s"])
        entry["first_binding_s"].append(measured["first_binding_s"])
        entry["pre_rate_per_s"].append(measured["pre_rate_per_s"])
        for k, v in f.detail.items():
            entry.setdefault(k, []).append(v)
    for entry in out.values():
        known = [r for r in entry["recovery_s"] if r is not None]
        entry["recovery_max_s"] = max(known) if known else None
        entry["not_recovered"] = sum(r is None for r in entry["recovery_s"])
    return out


class Processes:
    """The worker processes (and beat) of a run, and the worker kills."""

    def __init__(self, n: int, env: dict, log_dir: Path):
        from ..testing.workers import WorkerProcesses

        self.wp = WorkerProcesses(n, env, beat=True, log_dir=str(log_dir))
        self.kills = 0

    def start(self) -> Processes:
        self.wp.start()
        return self

    def kill_worker(self, i: int) -> dict:
        i %= max(self.wp.n, 1)
        self.wp.kill(i, signal.SIGKILL)
        self.wp.restart(i)
        self.kills += 1
        return {"worker": i}

    def stop(self) -> None:
        self.wp.stop()


class Harness:
    """Database, Redis, proxy and processes of one run; `close()` undoes all of it."""

    def __init__(self, plan: Plan, options: Options, say: Callable[[str], None]):
        import redis

        self.plan = plan
        self.options = options
        self.say = say
        self.url, self.db_name, self.maintenance_url = run_database()
        if not settings.REDIS_URL:
            raise RuntimeError("the chaos run needs Redis: set REDIS_URL=redis://...")
        self.redis = redis.Redis.from_url(settings.REDIS_URL)
        self.prefix = f"schedboard-chaos-run:{int(time.time())}:{os.getpid()}:q"
        if options.redis_flushes:
            redis_check_own_database(self.redis, self.prefix)
        self.log_dir = Path(options.log_dir or tempfile.mkdtemp(prefix="schedboard-chaos-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.metrics_dir = Path(tempfile.mkdtemp(prefix="schedboard-chaos-metrics-"))
        self.proxy: ProxyProcess | None = None
        self.processes: Processes | None = None
        self.faults: list[FaultRecord] = []
        self.clock: Clock | None = None
        self.outage_threads: list = []

    # -- set-up
    def create_database(self) -> None:
        admin_execute(self.maintenance_url, f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)')
        admin_execute(self.maintenance_url, f'CREATE DATABASE "{self.db_name}"')
        redis_purge_broker(self.redis)

    def client_url(self) -> str:
        """What the workers (and replicas) connect to: through the proxy when it plays the outage."""
        if self.proxy is not None:
            return with_port(self.url, self.proxy.port)
        return self.url

    def start_proxy(self) -> None:
        if self.options.postgres_fault == PROXY and self.options.postgres_outages:
            self.proxy = ProxyProcess(upstream=postgres_upstream(self.url),
                                      outage_seconds=self.options.outage_seconds).start()
            self.say(f"Postgres proxy on 127.0.0.1:{self.proxy.port}")

    def env(self, **extra: str) -> dict:
        from ..testing.workers import worker_env

        return worker_env(database_url=self.client_url(), redis_url=settings.REDIS_URL, queue_prefix=self.prefix,
                          SCHEDBOARD_LIVE_PREFIX=f"{self.prefix}:live", PROMETHEUS_MULTIPROC_DIR=str(self.metrics_dir),
                          **{"SCHEDBOARD_RECOUNT_SECONDS": RECOUNT_SECONDS, **extra})

    def start_workers(self, **extra_env: str) -> None:
        self.processes = Processes(self.options.workers, self.env(**extra_env), self.log_dir).start()

    # -- faults
    def record(self, kind: str, detail: dict | None = None, at: float | None = None) -> FaultRecord:
        at = time.time() if at is None else at
        rec = FaultRecord(kind, at, at - self.clock.start_wall, detail or {})
        self.faults.append(rec)
        return rec

    def kill_worker(self, target: int) -> None:
        self.record("worker_kill", self.processes.kill_worker(target))

    def redis_flush(self) -> None:
        self.redis.flushdb()
        self.record("redis_flush")

    def postgres_outage(self) -> None:
        if self.options.postgres_fault == PROXY:
            self.proxy.outage()
            self.record(POSTGRES_OUTAGE, {"mode": PROXY})
            return
        import threading

        rec = self.record(POSTGRES_OUTAGE, {"mode": RESTART})

        def restart():
            try:
                rec.detail.update(postgres_restart())
            except Exception as exc:  # noqa: BLE001 - reported in the result
                rec.detail["error"] = str(exc)

        thread = threading.Thread(target=restart, daemon=True)
        thread.start()
        self.outage_threads.append(thread)

    def outage_edges(self) -> list[dict]:
        return list(self.proxy.events) if self.proxy is not None else []

    def drift_repaired(self) -> float | None:
        """Usage values the recount repaired; None if it never ran (0 if it ran and found nothing)."""
        if not self.recounts():
            return None
        return metric_total(str(self.metrics_dir), METRIC_DRIFT_REPAIRED) or 0.0

    def recounts(self) -> int:
        return int(metric_total(str(self.metrics_dir), METRIC_RECOUNTS) or 0)

    def worker_logs_tail(self) -> str:
        return self.processes.wp.logs() if self.processes else ""

    # -- tear-down
    def close(self) -> None:
        for thread in self.outage_threads:
            thread.join(timeout=120)
        if self.processes is not None:
            self.processes.stop()
        if self.proxy is not None:
            self.proxy.stop()
        for key in self.redis.scan_iter(match=self.prefix + "*", count=1000):
            self.redis.delete(key)
        connections["default"].close()
        if self.options.keep_database:
            self.say(f"kept database {self.db_name}; logs in {self.log_dir}")
        else:
            admin_execute(self.maintenance_url, f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)')
        shutil.rmtree(self.metrics_dir, ignore_errors=True)


class ApplyProcess:
    """`manage.py apply -f PATH` run as a user runs it; its exit code, output and peak memory when done."""

    def __init__(self, path: Path, env: dict, timeout: float = 120.0):
        self.path = path
        self.out_path, self.err_path = path.with_suffix(".out"), path.with_suffix(".err")
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, "manage.py", "apply", "-f", str(path)], cwd=BASE_DIR,
                                         env=env, stdout=out, stderr=err, start_new_session=True)
        self.deadline = time.monotonic() + timeout
        self.exit_code: int | None = None
        self.max_rss_mb: float | None = None
        self.timed_out = False

    def poll(self) -> bool:
        """True once finished (killed at the deadline)."""
        if self.exit_code is not None:
            return True
        if time.monotonic() > self.deadline and not self.timed_out:
            self.timed_out = True
            os.killpg(self.proc.pid, signal.SIGKILL)
        pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
        if pid == 0:
            return False
        self.exit_code = os.waitstatus_to_exitcode(status)
        self.proc.returncode = self.exit_code  # reaped here (wait4 gives the peak memory)
        self.max_rss_mb = round(usage.ru_maxrss / 1024.0, 1)
        return True

    def output(self) -> tuple[str, str]:
        return (self.out_path.read_text(errors="replace"), self.err_path.read_text(errors="replace"))

    def kill(self) -> None:
        if self.exit_code is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.poll()


def usage_drift() -> list[dict]:
    """Nodes whose usage columns differ from what the rows of the pods bound or reserved on them add up
    to: a lost, doubled or corrupted usage delta (what a recount would repair)."""
    from django.db.models import Q

    from ..models import Node, Pod

    empty = {"req_cpu": 0, "req_memory": 0, "req_ephemeral": 0, "req_pods": 0, "req_scalar": {}, "used_ports": 0}
    sums: dict[str, dict] = {}
    for row in Pod.objects.filter(~Q(node_name="") | ~Q(assumed_node="")).only(
            "node_name", "assumed_node", "req_cpu", "req_memory", "req_ephemeral", "req_scalar", "host_ports"):
        s = sums.setdefault(row.node_name or row.assumed_node, {**empty, "req_scalar": {}})
        s["req_cpu"] += row.req_cpu
        s["req_memory"] += row.req_memory
        s["req_ephemeral"] += row.req_ephemeral
        s["req_pods"] += 1
        for r, v in (row.req_scalar or {}).items():
            s["req_scalar"][r] = s["req_scalar"].get(r, 0) + int(v)
        s["used_ports"] += len(row.host_ports or [])
    drift = []
    for node in Node.objects.all():
        want = sums.get(node.name, empty)
        want = {**want, "req_scalar": {r: v for r, v in want["req_scalar"].items() if v}}
        have = {"req_cpu": node.req_cpu, "req_memory": node.req_memory, "req_ephemeral": node.req_ephemeral,
                "req_pods": node.req_pods, "req_scalar": {r: int(v) for r, v in (node.req_scalar or {}).items() if v},
                "used_ports": len(node.used_ports or [])}
        diff = {k: [have[k], want[k]] for k in want if have[k] != want[k]}
        if diff:
            drift.append({"node": node.name, "columns_vs_pods": diff})
    return drift
