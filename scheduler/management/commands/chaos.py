"""`manage.py chaos [--backend simulated|kubernetes] [--pods 10000] [--nodes 500] [--duration 300] --json`: the fault suite."""

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from scheduler.chaos.runner import PROXY, RESTART, Options


class Command(BaseCommand):
    help = ("The fault suite: a run of pods through real Celery workers, beat, Postgres and Redis while workers are "
            "SIGKILLed, Redis is flushed, Postgres goes away, bindings fail and hostile manifests are applied; then "
            "lost pods, overcommitted nodes and double bindings are counted from first principles and the recovery "
            "after each fault is measured. One JSON object on stdout; progress on stderr. Exit 1 if a goal is missed.")

    def add_arguments(self, parser):
        parser.add_argument("--backend", choices=("simulated", "kubernetes"), default="simulated",
                            help="kubernetes: a loopback kube-apiserver, `kube run` replicas, pods through the API")
        parser.add_argument("--pods", type=int, default=10_000, help="pods arriving during the run")
        parser.add_argument("--nodes", type=int, default=500)
        parser.add_argument("--workers", type=int, default=2, help="Celery worker processes")
        parser.add_argument("--duration", type=float, default=300.0,
                            help="seconds over which pods arrive and faults happen")
        parser.add_argument("--settle", type=float, default=None,
                            help="seconds to wait after the run for pods to settle (default: in-flight lease + assume TTL + 30)")
        parser.add_argument("--seed", type=int, default=0, help="the plan: pod shapes, arrivals, fault and hostile times")
        parser.add_argument("--kills", type=int, default=20, help="worker SIGKILLs (each worker restarted)")
        parser.add_argument("--redis-flushes", type=int, default=1, help="FLUSHDB of the run's Redis database")
        parser.add_argument("--postgres-outages", type=int, default=1)
        parser.add_argument("--postgres-fault", choices=(PROXY, RESTART), default=PROXY,
                            help="proxy: a loopback proxy drops every connection and refuses new ones; restart: "
                                 "pg_ctlcluster restart of the real server (shared by everything on it)")
        parser.add_argument("--outage-seconds", type=float, default=5.0, help="how long the proxy's outage lasts")
        parser.add_argument("--apiserver-restarts", type=int, default=1, help="kubernetes backend")
        parser.add_argument("--leader-kills", type=int, default=1, help="kubernetes backend: SIGKILL of the lease holder")
        parser.add_argument("--replicas", type=int, default=2, help="kubernetes backend: `kube run` replicas")
        parser.add_argument("--hostile", type=int, default=None,
                            help="hostile manifests applied during the run (default: each kind once)")
        parser.add_argument("--bind-failures", type=float, default=0.2, help="share of pods whose first binding(s) fail")
        parser.add_argument("--keep-database", action="store_true", help="keep the run's database to look into")
        parser.add_argument("--log-dir", default=None, help="where worker, replica and apply logs go (default: a temp dir)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **o):
        from celery import current_app as app  # the project's app (config/celery.py), as current

        app.conf.task_always_eager = False  # tasks go through the broker to the real workers
        if o["pods"] < 1 or o["nodes"] < 1 or o["workers"] < 1 or o["duration"] <= 0:
            raise CommandError("--pods, --nodes, --workers and --duration must be positive")
        if not 0 <= o["bind_failures"] <= 1:
            raise CommandError("--bind-failures is a share between 0 and 1")
        options = Options(
            backend=o["backend"], pods=o["pods"], nodes=o["nodes"], workers=o["workers"], duration=o["duration"],
            settle=o["settle"], seed=o["seed"], kills=o["kills"], redis_flushes=o["redis_flushes"],
            postgres_outages=o["postgres_outages"], postgres_fault=o["postgres_fault"],
            outage_seconds=o["outage_seconds"], apiserver_restarts=o["apiserver_restarts"],
            leader_kills=o["leader_kills"], replicas=o["replicas"], hostile=o["hostile"],
            bind_failures=o["bind_failures"], keep_database=o["keep_database"], log_dir=o["log_dir"])

        def say(msg):
            print(f"chaos: {msg}", file=sys.stderr, flush=True)

        try:
            if options.backend == "kubernetes":
                from scheduler.chaos.kube import run_kubernetes

                result = run_kubernetes(options, say)
            else:
                from scheduler.chaos.simulated import run_simulated

                result = run_simulated(options, say)
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
        if o["json"]:
            self.stdout.write(json.dumps(result))
        else:
            for key, value in result.items():
                self.stdout.write(f"{key:>28}: {json.dumps(value) if isinstance(value, (dict, list)) else value}")
        for what in result.get("findings", []):
            say(f"finding: {what}")
        for why in result["violations"]:
            say(f"GOAL MISSED: {why}")
        if not result["goals_met"]:
            sys.exit(1)
