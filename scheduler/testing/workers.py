"""Real worker processes for tests and the benchmark: `celery -A config worker` (one process each,
so a SIGKILL takes exactly one) and `celery -A config beat`, on a given database and Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

BASE_DIR = Path(__file__).resolve().parents[2]


def worker_env(*, database_url: str, redis_url: str, queue_prefix: str, **extra: str) -> dict:
    env = dict(os.environ)
    env.update({
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "SCHEDBOARD_QUEUE_PREFIX": queue_prefix,
        "SCHEDBOARD_EAGER": "0",
        "PYTHONUNBUFFERED": "1",
    })
    env.setdefault("DJANGO_SECRET_KEY", "schedboard-workers-" + os.urandom(8).hex())
    env.update(extra)
    return env


def purge_broker(redis_url: str) -> None:
    """Drop task messages left by an earlier run (the Celery queues and their bookkeeping)."""
    from django.conf import settings

    r = redis.Redis.from_url(redis_url)
    r.delete(*settings.CELERY_TASK_QUEUES, "unacked", "unacked_index", "schedboard:schedule-slots")


class WorkerProcesses:
    """N single-process Celery workers (+ beat), started and stopped as real OS processes.

    `prefork=k` runs each worker as the deploy does instead: a main process and a pool of k children."""

    def __init__(self, n: int, env: dict, *, beat: bool = True, log_dir: str | None = None, beat_env: dict | None = None,
                 prefork: int = 0):
        self.n = n
        self.env = env
        self.prefork = prefork
        self.beat = beat
        self.beat_env = beat_env or env
        self.log_dir = Path(log_dir or tempfile.mkdtemp(prefix="schedboard-workers-"))
        self.procs: list[subprocess.Popen] = []
        self.beat_proc: subprocess.Popen | None = None

    def _spawn(self, args: list[str], log_name: str, env: dict | None = None) -> subprocess.Popen:
        log = open(self.log_dir / log_name, "ab")
        return subprocess.Popen([sys.executable, "-m", "celery", "-A", "config", *args], cwd=BASE_DIR, env=env or self.env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def start_worker(self, i: int) -> subprocess.Popen:
        pool = ["-P", "prefork", "--concurrency", str(self.prefork)] if self.prefork else ["-P", "solo"]
        proc = self._spawn(["worker", *pool, "-n", f"w{i}-{os.getpid()}@%h", "--loglevel", "WARNING",
                            "--without-gossip", "--without-mingle", "--without-heartbeat"], f"worker-{i}.log")
        return proc

    def start(self) -> WorkerProcesses:
        self.procs = [self.start_worker(i) for i in range(self.n)]
        if self.beat:
            self.beat_proc = self._spawn(["beat", "--loglevel", "WARNING", "-s", str(self.log_dir / "beat-schedule")],
                                         "beat.log", self.beat_env)
        return self

    def kill(self, i: int, sig: int = signal.SIGKILL) -> None:
        self.procs[i].send_signal(sig)
        self.procs[i].wait(timeout=30)

    def restart(self, i: int) -> None:
        self.procs[i] = self.start_worker(i)

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs if p.poll() is None]

    def peak_rss_mb(self) -> float:
        """The largest peak resident set (VmHWM) among the live workers."""
        peak = 0
        for pid in self.pids():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
            except OSError:
                pass
        return round(peak / 1024.0, 1)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}" for p in sorted(self.log_dir.glob("*.log")))

    def stop(self) -> None:
        for proc in [*self.procs, self.beat_proc]:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in [*self.procs, self.beat_proc]:
            if proc is None:
                continue
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def __enter__(self) -> WorkerProcesses:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def database_url() -> str:
    """The URL of the database this test session uses (the pytest test database)."""
    from django.db import connection

    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def celery_queue() -> str:
    """This session's own Celery queue, so other test sessions on the same Redis neither take nor purge its tasks."""
    from django.conf import settings

    return settings.SCHEDBOARD_QUEUE_PREFIX + ":celery"
