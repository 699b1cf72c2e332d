"""What one end-to-end run cost the shared services, per pod, and how often its workers lost a reservation race:
read at the measured phase's start and end, outside the workers (nothing is added to their hot path).

- Reservation conflicts: the loop counts each refused reservation in schedboard_reservation_conflicts_total
  (scheduler/loop/schedule.py); the pod is placed again in the same batch and its Attempt row says only
  "scheduled", so Postgres keeps no trace of it. The run's workers write their counters into a directory of
  the run's own (PROMETHEUS_MULTIPROC_DIR), which is summed here as a /metrics scrape would sum it.
  Placements attempted = the scheduled attempts (scheduler_schedule_attempts_total) + the refused ones.
- Postgres: pg_stat_database's commits and rows inserted/updated/deleted in the run's database. A backend
  publishes its counts when it goes idle (at most once a second) or exits, so the end is read after the
  workers are stopped and their backends gone; the bench process's own statements in the window (its polling,
  its queueing of the measured pods) are counted here and taken off.
- Redis: INFO commandstats calls and INFO cpu, server-wide (Redis keeps no count per database): with other
  clients on the server (other databases), upper bounds; `redis_other_db_clients` says whether there were any.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from contextlib import ExitStack

CONFLICTS = "schedboard_reservation_conflicts_total"
ATTEMPTS = "scheduler_schedule_attempts_total"
_WRITES = ("INSERT", "UPDATE", "DELETE")


class RunCounters:
    def __init__(self, redis, redis_db: int, metrics_dir: str | None = None):
        self.redis, self.redis_db = redis, redis_db
        self.metrics_dir = metrics_dir or tempfile.mkdtemp(prefix="schedboard-bench-metrics-")
        self._own = metrics_dir is None
        self._stack = ExitStack()
        self.bench_commits = self.bench_rows = 0

    def env(self) -> dict[str, str]:
        """For the workers and beat: their counters in this run's directory."""
        return {"PROMETHEUS_MULTIPROC_DIR": self.metrics_dir}

    # ---- the readings ---------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        from prometheus_client import CollectorRegistry
        from prometheus_client.multiprocess import MultiProcessCollector

        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=self.metrics_dir)
        scheduled = sum(s.value for family in registry.collect() for s in family.samples
                        if s.name == ATTEMPTS and s.labels.get("result") == "scheduled")
        return {"conflicts": registry.get_sample_value(CONFLICTS) or 0.0, "scheduled": scheduled}

    def redis_calls(self) -> int:
        return sum(int(v["calls"]) for k, v in self.redis.info("commandstats").items() if k.startswith("cmdstat_"))

    def redis_cpu(self) -> float:
        cpu = self.redis.info("cpu")
        return float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])

    def other_db_clients(self) -> int:
        return sum(1 for c in self.redis.client_list() if int(c.get("db", self.redis_db)) != self.redis_db)

    @staticmethod
    def postgres(database: str) -> dict[str, int]:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT xact_commit, tup_inserted, tup_updated, tup_deleted FROM pg_stat_database "
                           "WHERE datname = %s", [database])
            commits, ins, upd, dele = cursor.fetchone()
        return {"commits": commits, "inserted": ins, "updated": upd, "deleted": dele}

    def _count_own(self, execute, sql, params, many, context):
        from django.db import connection

        result = execute(sql, params, many, context)
        if not connection.in_atomic_block:
            self.bench_commits += 1  # autocommit: one transaction per statement (an atomic block's are few)
        if sql.lstrip().upper().startswith(_WRITES):
            self.bench_rows += max(context["cursor"].rowcount, 0)
        return result

    # ---- the run --------------------------------------------------------------------------
    def start(self, database: str) -> None:
        """At the measured phase's start (the workers warm)."""
        from django.db import connection

        own = _backend_pid()
        connection.close()  # its backend exits, publishing what the bench's loading did (before the window)
        _wait_gone(database, [own])
        self._stack.enter_context(connection.execute_wrapper(self._count_own))
        self._before = (self.metrics(), self.postgres(database), self.redis_calls(), self.redis_cpu(),
                        self.other_db_clients())

    def stop(self, wp, database: str, pods: int) -> dict:
        """Once every measured pod is bound: stops the workers (their backends' counts are published as they
        exit) and reports the run's conflicts and per-pod costs."""
        from django.db import connection

        metrics_before, pg_before, redis_before, redis_cpu_before, others_before = self._before
        redis_after, redis_cpu_after, others_after = self.redis_calls(), self.redis_cpu(), self.other_db_clients()
        wp.stop()
        metrics_after = self.metrics()
        self._stack.close()
        connection.close()
        _wait_gone(database)
        pg_after = self.postgres(database)
        conflicts = int(metrics_after["conflicts"] - metrics_before["conflicts"])
        scheduled = int(metrics_after["scheduled"] - metrics_before["scheduled"])
        attempted = scheduled + conflicts
        delta = {k: pg_after[k] - pg_before[k] for k in pg_after}
        written = delta["inserted"] + delta["updated"] + delta["deleted"] - self.bench_rows

        def per_pod(value):
            return round(value / pods, 2) if pods else None

        return {
            "reservation_conflicts": conflicts,
            "placements_attempted": attempted,
            "reservation_conflict_rate": round(conflicts / attempted, 4) if attempted else None,
            "postgres_commits_per_pod": per_pod(delta["commits"] - self.bench_commits),
            "postgres_rows_written_per_pod": per_pod(written),
            "postgres_rows_inserted_per_pod": per_pod(delta["inserted"]),
            "bench_own_commits": self.bench_commits,
            "bench_own_rows_written": self.bench_rows,
            "redis_commands_per_pod": per_pod(redis_after - redis_before),
            "redis_cpu_ms_per_pod": round((redis_cpu_after - redis_cpu_before) * 1000 / pods, 3) if pods else None,
            "redis_other_db_clients": max(others_before, others_after),
        }

    def close(self) -> None:
        self._stack.close()
        if self._own:
            shutil.rmtree(self.metrics_dir, ignore_errors=True)


def _backend_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _wait_gone(database: str, pids: list[int] | None = None, timeout: float = 15.0) -> None:
    """Until the given backends (or every backend) of `database` have exited, so their counts are published."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg
    from django.conf import settings

    admin = urlunsplit(urlsplit(settings.DATABASE_URL)._replace(path="/postgres"))
    deadline = time.monotonic() + timeout
    with psycopg.connect(admin, autocommit=True) as conn:
        while time.monotonic() < deadline:
            rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [database]).fetchall()
            if not ({r[0] for r in rows} & set(pids) if pids is not None else rows):
                return
            time.sleep(0.05)
