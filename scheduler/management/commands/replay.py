"""`manage.py replay trace.jsonl --config A.yaml --config B.yaml [--speed max|realtime|N] [--seed N] --json`:
replay a trace in virtual time under each configuration and compare the outcomes."""

import json
import sys

from scheduler.engine.config import ConfigError, default_config
from scheduler.engine.tiebreak import MAX_SEED
from scheduler.kubectl.printers import KubectlCommand, KubectlError
from scheduler.replay.run import RECORDED, config_from_file, replay_trace
from scheduler.replay.simulator import pacer
from scheduler.replay.trace import TraceError, read_trace


class Command(KubectlCommand):
    help = ("Replay a recorded trace (or a kubectl nodes+pods dump) through the engine and queue in virtual time, "
            "once per configuration; nothing live is touched.")

    def add_arguments(self, parser):
        parser.add_argument("trace", help="a trace from `record`, or a `kubectl get nodes,pods -A -o yaml` dump")
        parser.add_argument("--config", action="append", default=[], metavar="FILE",
                            help="a KubeSchedulerConfiguration; repeat to compare; 'recorded' is the live run's "
                                 "(the default; for a dump, which records none, kube-scheduler's default)")
        parser.add_argument("--speed", default="max", help="max (default), realtime, or N times real time")
        parser.add_argument("--seed", type=int, default=None, help="tie-break seed (default: the trace's, else 0)")
        parser.add_argument("--batch-size", type=int, default=None, help="pods per batch (default: the trace's)")
        parser.add_argument("--cycle-ms", type=float, default=0.0,
                            help="virtual time one scheduling cycle takes (default 0: only waiting counts)")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args, trace, config, speed, seed, batch_size, cycle_ms, json: bool, **options):
        try:
            with open(trace, encoding="utf-8") as f:
                recorded = read_trace(f.read(), trace)
            configs = [config_from_file(path) for path in (config or [RECORDED])]
            if not config and not recorded.header.get("config"):
                configs = [("default", default_config())]  # a dump records none: kube-scheduler's default
            pacer(speed)  # refused before any work
            if seed is not None and not 0 <= seed <= MAX_SEED:
                raise ValueError(f"--seed {seed}: must be between 0 and {MAX_SEED}")
        except (TraceError, ConfigError, OSError, ValueError) as exc:
            self.stderr.write(f"error: {exc}")
            raise KubectlError() from None
        progress = None
        if not json and sys.stderr.isatty():
            progress = lambda n, done, total: sys.stderr.write(f"\r{configs[n][0]}: {done}/{total} events")  # noqa: E731
        try:
            report = replay_trace(recorded, configs, seed=seed, batch_size=batch_size, cycle_seconds=cycle_ms / 1000.0,
                                  speed=speed, on_progress=progress)
        except ValueError as exc:
            self.stderr.write(f"error: {exc}")
            raise KubectlError() from None
        if json:
            self.stdout.write(_json_dumps(report))
            return
        self.stdout.write(_table(report))


def _json_dumps(report: dict) -> str:
    return json.dumps(report, indent=2)


def _table(report: dict) -> str:
    t = report["trace"]
    lines = [f"trace: {t['source']}, {t['nodes']} nodes and {t['pods']} pods at the start, "
             f"{sum(t['events'].values())} events over {t['duration_s']:.1f}s, seed {t['seed']}", ""]
    head = f"{'CONFIG':<24} {'SCHEDULED':>9} {'PENDING':>7} {'CPU MEAN':>8} {'CPU STD':>8} {'MEM MEAN':>8} " \
           f"{'MEM STD':>8} {'FRAG':>4} {'TTB P50':>8} {'TTB P99':>8}"
    lines.append(head)
    for c in report["configs"]:
        u = c["utilization"]

        def s(v):
            return "-" if v is None else f"{v:.2f}s"

        lines.append(f"{c['config'][:24]:<24} {c['scheduled']:>9} {c['pending']:>7} {u['cpu']['mean']:>8.3f} "
                     f"{u['cpu']['std']:>8.3f} {u['memory']['mean']:>8.3f} {u['memory']['std']:>8.3f} "
                     f"{c['fragmentation']['pods']:>4} {s(c['time_to_bind_p50_s']):>8} {s(c['time_to_bind_p99_s']):>8}")
        skew = ", ".join(f"{k} {v}" for k, v in c["spread_skew"].items()) or "no topology labels"
        lines.append(f"  spread skew (max - min pods per domain): {skew}; preemptions {c['preemptions']}"
                     + (f" ({c['preemptors']} preemptors)" if c["preemptions"] else "")
                     + (f"; bindings refused as recorded {c['bind_failures']}" if c.get("bind_failures") else ""))
        if "recorded_matches" in c:
            lines.append(f"  reproduces {c['recorded_matches']} of {t['recorded_bindings']} recorded bindings"
                         + (f"; differs on {', '.join(c['recorded_differs'][:10])}" if c["recorded_differs"] else ""))
        for reason, n in list(c["pending_reasons"].items())[:5]:
            lines.append(f"  pending {n}: {reason}")
    if len(report["configs"]) > 1:
        lines.append("")
        lines.append(f"{len(report['differ'])} pods placed differently" +
                     (f": {', '.join(report['differ'][:20])}" + (" ..." if len(report["differ"]) > 20 else "")
                      if report["differ"] else ""))
    return "\n".join(lines) + "\n"
