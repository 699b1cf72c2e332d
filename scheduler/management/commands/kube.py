"""`manage.py kube check` (access and RBAC) and `manage.py kube run` (one replica of the cluster side)."""

from __future__ import annotations

import signal
import sys

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "The kubernetes backend: `check` verifies access and RBAC; `run` runs one replica (leader election, watches, bindings)."
    # No system checks (models, URLs, templates) before a replica starts, as a Celery worker runs none: they
    # delay its first binding. (The access check is `kube check`; it was also run, as Django's check(), before
    # every command: about forty API calls before `kube run` started.)
    requires_system_checks = []

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("check", help="reach the API server and check every permission the backend needs")
        run = sub.add_parser("run", help="elect a leader; while leading, mirror the cluster and commit bindings")
        run.add_argument("--inline", action="store_true",
                         help="also run the scheduling loop in this process (no Celery workers needed)")

    def handle(self, *args, action, **options):
        if action == "check":
            return self.check_access()
        return self.run(inline=options["inline"])

    def _client(self):
        from kubernetes.config.config_exception import ConfigException

        from scheduler.kube.client import api_client

        try:
            return api_client()
        except (ConfigException, OSError, ValueError) as exc:
            raise CommandError(f"cannot load the cluster configuration (KUBECONFIG or in-cluster): {exc}") from exc

    def check_access(self):
        from kubernetes import client

        from scheduler.kube.client import ApiError, call, own_namespace
        from scheduler.kube.permissions import check

        api = self._client()
        host = api.configuration.host
        try:
            version = call(client.VersionApi(api).get_code).get("gitVersion", "?")
            verdicts = check(client.AuthorizationV1Api(api), namespace=own_namespace())
        except ApiError as exc:
            if exc.status == 401:
                raise CommandError(f"{host}: the API server refused our credentials (401 Unauthorized)") from exc
            raise CommandError(f"{host}: {exc}") from exc
        self.stdout.write(f"{host}: Kubernetes {version}, credentials accepted")
        missing = [v for v in verdicts if not v.allowed]
        for v in verdicts:
            self.stdout.write(f"  {'ok' if v.allowed else 'MISSING':8} {v.describe()}")
        for v in missing:
            self.stderr.write(f"missing permission: {v.describe()}: {v.fix()}")
        if missing:
            raise CommandError(f"{len(missing)} permission(s) missing")
        self.stdout.write("all permissions present")

    def run(self, *, inline: bool):
        from django.conf import settings

        from scheduler.loop import collector
        from scheduler.replica import Replica
        from scheduler.metrics_server import serve_metrics

        if settings.SCHEDBOARD_BACKEND != "kubernetes":
            raise CommandError("kube run needs SCHEDBOARD_BACKEND=kubernetes")
        try:
            # Three clients, three rate-limit buckets, as kube-scheduler's: the scheduler's, the Lease's, the events'.
            controller = Replica(api_client=self._client(), election_client=self._client(),
                                 events_client=self._client(), schedule_inline=inline)
        except ValueError as exc:  # lease timings
            raise CommandError(f"SCHEDBOARD_LEASE_DURATION / RENEW_DEADLINE / RETRY_PERIOD: {exc}") from exc

        collector.start_up_done()  # its clients built (the kubernetes client's modules imported): its threads start next

        def stop(signum, frame):
            controller.stop()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        serve_metrics("kube run")  # SCHEDBOARD_METRICS_PORT: the committer's binding metrics, scraped from its pod
        self.stdout.write(f"replica {controller.identity}: waiting for lease "
                          f"{controller.elector.namespace}/{controller.elector.name}")
        self.stdout.flush()
        controller.run()
        if controller.lost:
            # As kube-scheduler: "leaderelection lost" ends the process; its supervisor restarts it.
            self.stderr.write("leaderelection lost")
            sys.exit(1)
