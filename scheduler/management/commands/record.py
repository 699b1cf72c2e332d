"""`manage.py record --since 1h -o trace.jsonl` | `record --from-cluster -o trace.jsonl` |
`record --from-yaml dump.yaml -o trace.jsonl`: write a replay trace (scheduler/replay/trace.py)."""

import sys
from datetime import timedelta

from django.utils import timezone

from scheduler.kubectl.printers import KubectlCommand, KubectlError
from scheduler.replay.record import go_duration, record_from_cluster, record_from_database
from scheduler.replay.trace import TraceError, trace_from_manifests

class Command(KubectlCommand):
    help = "Record the cluster's start state and its events since a time ago as a JSON-lines replay trace."

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group()
        source.add_argument("--since", default="1h", help="how far back the trace starts (Go duration; default 1h)")
        source.add_argument("--from-cluster", action="store_true",
                            help="a start state read now through the kubernetes client (KUBECONFIG)")
        source.add_argument("--from-yaml", metavar="FILE",
                            help="a start state from a `kubectl get nodes,pods -A -o yaml` dump")
        parser.add_argument("-o", "--output", default="-", help="where to write the trace (default stdout)")

    def handle(self, *args, since, from_cluster, from_yaml, output, **options):
        now = timezone.now()
        try:
            if from_cluster:
                from scheduler.kube.client import api_client

                trace = record_from_cluster(api_client(), now=now)
            elif from_yaml:
                with open(from_yaml, encoding="utf-8") as f:
                    trace = trace_from_manifests(f.read(), from_yaml, source="kubectl dump")
            else:
                trace = record_from_database(start=now - timedelta(seconds=go_duration(since)), end=now)
        except (ValueError, TraceError, OSError) as exc:
            self.stderr.write(f"error: {exc}")
            raise KubectlError() from None
        if output == "-":
            lines = trace.dump(self.stdout)
        else:
            with open(output, "w", encoding="utf-8") as f:
                lines = trace.dump(f)
        s = trace.summary()
        events = ", ".join(f"{n} {k}" for k, n in sorted(s["events"].items())) or "no events"
        (sys.stderr if output == "-" else self.stdout).write(
            f"recorded {lines} lines: {s['nodes']} nodes and {s['pods']} pods at the start, {events}\n")
