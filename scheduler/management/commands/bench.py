"""`manage.py bench [--nodes 5000] [--pods 10000] [--workers 2] --json`: scheduler_perf's SchedulingBasic;
`--workload NAME [--case NAME]`: any of scheduler_perf's workloads in scheduler/bench/workloads.py."""

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from scheduler.bench import arrival, e2e, growth, kube, kube_scheduler, loop_cpu, nodes_page, scaling, workloads
from scheduler.engine import perf


class Command(BaseCommand):
    help = ("Benchmark SchedulingBasic (nodes 4 CPU / 32Gi / 110 pods; pods 100m / 500Mi; 1000 placed): "
            "the engine alone, the per-node reference, and end to end through real workers, Redis and Postgres.")

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=None, help="5000 (100 with --backend kubernetes)")
        parser.add_argument("--pods", type=int, default=None, help="10000 (1000 with --backend kubernetes)")
        parser.add_argument("--placed", type=int, default=None, help="pods already bound before the run (1000)")
        parser.add_argument("--workers", default="2",
                            help="Celery worker processes for the e2e run; a comma list (1,2,4) runs SchedulingBasic end "
                                 "to end once per count (no engine runs) with the reservation conflict rate and the "
                                 "per-pod Postgres/Redis costs (scheduler/bench/scaling.py)")
        parser.add_argument("--reference-sample", type=int, default=100, help="pods timed through the reference")
        parser.add_argument("--skip-e2e", action="store_true", help="engine and reference only (no Postgres/Redis)")
        parser.add_argument("--engine-runs", type=int, default=3,
                            help="engine runs; the median is reported (this machine's speed drifts)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--dashboard", action="store_true",
                            help="run e2e twice, without and with headless overview viewers: bind -> frame latency, "
                                 "frames and bytes per viewer, throughput with and without")
        parser.add_argument("--viewers", type=int, default=20, help="websocket clients for --dashboard")
        parser.add_argument("--growth", action="store_true",
                            help="instead: how the audit tables grow per pod (rows and bytes per table, end to end, "
                                 "pods bound then deleted) and a failed attempt's trace size (scheduler/bench/growth.py)")
        parser.add_argument("--failing", type=int, default=100, help="--growth: pods no node fits (failed attempts)")
        parser.add_argument("--loop-cpu", action="store_true",
                            help="instead: the scheduling and binding batches in this process, CPU per pod (this "
                                 "thread's and its database backend's: comparable on a loaded machine) "
                                 "(scheduler/bench/loop_cpu.py)")
        parser.add_argument("--nodes-page", action="store_true",
                            help="instead: the dashboard's /nodes/ in headless Chromium on --nodes nodes (default "
                                 "50000): first row, every row, frames and bytes, 1%% of usage changed "
                                 "(scheduler/bench/nodes_page.py)")
        parser.add_argument("--workload", choices=tuple(workloads.WORKLOADS), default=None,
                            help="one of scheduler_perf's workloads (its init pods, then its measured pods), with "
                                 "upstream's threshold beside the figures; --nodes/--placed/--pods override its case")
        parser.add_argument("--case", default=None,
                            help="--workload: upstream's case (default the one with a threshold, e.g. 5000Nodes_5000Pods)")
        parser.add_argument("--e2e-case", default=None,
                            help="--workload: the case run end to end (default the workload's, usually --case's)")
        parser.add_argument("--backend", choices=("simulated", "kubernetes"), default="simulated",
                            help="kubernetes: pods through a loopback kube-apiserver (default 1000 pods on 100 nodes), "
                                 "and the simulated backend on the same shape for comparison")
        parser.add_argument("--client-qps", type=float, default=None,
                            help="--backend kubernetes: the replica's SCHEDBOARD_KUBE_QPS (default 5000, as scheduler_perf; "
                                 "50 is kube-scheduler's and schedboard's default)")
        parser.add_argument("--client-burst", type=int, default=None,
                            help="--backend kubernetes: the replica's SCHEDBOARD_KUBE_BURST (default 5000; 100 by default "
                                 "in production)")
        parser.add_argument("--backlog", action="store_true",
                            help="--backend kubernetes: create every pod before the replica starts, and time it from "
                                 "its start (a restart with a backlog)")
        parser.add_argument("--compare", action="store_true",
                            help="--backend kubernetes: also run the real kube-scheduler v1.20.2 on the same shape, each "
                                 "time against a fresh API server, with the same client qps/burst and with its default "
                                 "50/100 (`scripts/kube-apiserver.sh build kube-scheduler` first); prints both and the ratio")
        parser.add_argument("--arrival-rate", type=float, default=None,
                            help="instead: feed SchedulingBasic pods at this many pods/s for --duration seconds end to end "
                                 "and report the SLI (queued -> bound) p50/p99/max (scheduler/bench/arrival.py); with "
                                 "--dashboard, --viewers overview clients the same run long (bind -> frame latency)")
        parser.add_argument("--duration", type=float, default=None,
                            help=f"--arrival-rate: seconds of feed ({arrival.DEFAULT_DURATION:g})")

    def handle(self, *args, nodes, pods, placed, workers, reference_sample, skip_e2e, seed, **options):
        try:
            counts = scaling.parse_workers(workers)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if scaling.is_series(workers) and (any(options[k] for k in ("workload", "loop_cpu", "growth", "dashboard", "arrival_rate"))
                                           or options["backend"] != "simulated"):
            raise CommandError("--workers: a list of counts runs SchedulingBasic on the simulated backend only")
        as_json = options["json"]
        _compile_sources()
        from celery import current_app as app  # the project's app (config/celery.py), as current

        app.conf.task_always_eager = False  # the e2e run must go through the broker to real workers

        def say(msg):
            print(f"bench: {msg}", file=sys.stderr, flush=True)

        if scaling.is_series(workers):
            result = scaling.run_series(counts=counts, nodes=nodes or 5000, placed=1000 if placed is None else placed,
                                        pods=pods or 10000, seed=seed, progress=say)
            self.stdout.write(_json_dumps(result) if as_json else scaling.table(result))
            return
        workers = counts[0]

        if options["workload"]:
            return self.workload(options, nodes=nodes, pods=pods, placed=placed, workers=workers, seed=seed,
                                 skip_e2e=skip_e2e, say=say, as_json=as_json)
        placed = 1000 if placed is None else placed
        if options["loop_cpu"]:
            result = loop_cpu.run_loop_cpu(nodes=nodes or 5000, placed=placed, pods=pods or 10000, seed=seed, progress=say)
            self.stdout.write(json.dumps(result, indent=None if as_json else 2))
            return
        if options["nodes_page"]:
            try:
                result = nodes_page.run_nodes_page(nodes=nodes or 50000, progress=say)
            except RuntimeError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(json.dumps(result, indent=None if as_json else 2))
            return
        if options["growth"]:
            result = growth.run_growth(nodes=nodes or 5000, placed=placed, pods=pods or 10000,
                                             failing=options["failing"], workers=workers, seed=seed, progress=say)
            self.stdout.write(json.dumps(result, indent=None if as_json else 2))
            return
        if options["arrival_rate"] is not None or options["duration"] is not None:
            return self.arrival(options, nodes=nodes or 5000, placed=placed, workers=workers, seed=seed, say=say,
                                as_json=as_json)
        if options["backend"] == "kubernetes":
            return self.kubernetes(nodes=nodes or 100, pods=pods or 1000, workers=workers, seed=seed, say=say,
                                   as_json=as_json, backlog=options["backlog"],
                                   client=(options["client_qps"], options["client_burst"]), compare=options["compare"])
        nodes, pods = nodes or 5000, pods or 10000

        say(f"engine: {pods} pods on {nodes} nodes, {options['engine_runs']} runs")
        runs = [perf.run_engine(pods=pods, nodes=nodes, placed=placed, seed=seed) for _ in range(max(1, options["engine_runs"]))]
        engine = sorted(runs, key=lambda r: r["pods_per_second"])[len(runs) // 2]
        say(f"engine without opportunistic batching: {pods} pods, {options['engine_runs']} runs")
        unbatched = sorted((perf.run_engine(pods=pods, nodes=nodes, placed=placed, seed=seed, batching=False)
                            for _ in range(max(1, options["engine_runs"]))), key=lambda r: r["pods_per_second"])
        per_pod = unbatched[len(unbatched) // 2]
        say(f"reference: {reference_sample} pods")
        reference = e2e.run_reference(nodes=nodes, placed=placed, sample=reference_sample, seed=seed)
        result = {
            "workload": "SchedulingBasic",
            "nodes": nodes,
            "pods": pods,
            "placed": placed,
            "workers": workers,
            "engine_pods_per_s": engine["pods_per_second"],
            "engine_runs_pods_per_s": [r["pods_per_second"] for r in runs],
            "engine_p50_ms": engine["latency_ms"]["p50"],
            "engine_p99_ms": engine["latency_ms"]["p99"],
            "engine_batched_pods": engine["batched"],
            # The same pods, each scheduled from scratch (the placements are the same, engine/test_batching.py).
            "engine_unbatched_pods_per_s": per_pod["pods_per_second"],
            "engine_unbatched_runs_pods_per_s": [r["pods_per_second"] for r in unbatched],
            "reference_pods_per_s": reference["pods_per_second"],
            "reference_sample": reference_sample,
            "engine_vs_reference": round(engine["pods_per_second"] / reference["pods_per_second"], 1)
            if reference["pods_per_second"] else None,
        }
        if not skip_e2e:
            say(f"e2e: {pods} pods, {workers} worker processes")
            result.update(e2e.run_e2e(nodes=nodes, placed=placed, pods=pods, workers=workers, seed=seed, progress=say))
            if options["dashboard"]:
                say(f"e2e again with {options['viewers']} overview viewers")
                watched = e2e.run_e2e(nodes=nodes, placed=placed, pods=pods, workers=workers, seed=seed,
                                        progress=say, viewers=options["viewers"])
                result.update({k: watched[k] for k in ("viewers", "frame_p50_ms", "frame_p99_ms", "frame_max_ms",
                                                       "frame_bindings_seen", "frames_per_s_per_client",
                                                       "bytes_per_s_per_client")})
                result["e2e_pods_per_s_with_viewers"] = watched["e2e_pods_per_s"]
                result["with_viewers_vs_without"] = round(watched["e2e_pods_per_s"] / result["e2e_pods_per_s"], 3)
        if as_json:
            self.stdout.write(_json_dumps(result))
        else:
            for key, value in result.items():
                self.stdout.write(f"{key:>24}: {value}")


    def arrival(self, options, *, nodes, placed, workers, seed, say, as_json):
        """A steady feed end to end (bench/arrival.py); --pods is the feed's rate x duration."""
        rate, duration = options["arrival_rate"], options["duration"]
        if rate is None or not 0 < rate < float("inf"):
            raise CommandError("--arrival-rate must be a number of pods per second above 0")
        duration = arrival.DEFAULT_DURATION if duration is None else duration
        if not 0 < duration < float("inf"):
            raise CommandError("--duration must be a number of seconds above 0")
        viewers = options["viewers"] if options["dashboard"] else 0
        say(f"arrival: {rate:g} pods/s for {duration:g} s on {nodes} nodes, {workers} worker processes"
            + (f", {viewers} viewers" if viewers else ""))
        result = arrival.run_arrival(rate=rate, duration=duration, nodes=nodes, placed=placed, workers=workers,
                                     seed=seed, viewers=viewers, progress=say)
        if as_json:
            self.stdout.write(_json_dumps(result))
        else:
            for key, value in result.items():
                self.stdout.write(f"{key:>28}: {value}")

    def workload(self, options, *, nodes, pods, placed, workers, seed, skip_e2e, say, as_json):
        """One of scheduler_perf's workloads: the engine on its case, then end to end."""
        w = workloads.workload(options["workload"])
        try:
            case = w.case(options["case"])
            e2e_case = w.case(options["e2e_case"] or options["case"], e2e=not (options["e2e_case"] or options["case"]))
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if nodes is not None or pods is not None or placed is not None:
            custom = workloads.Case("custom", nodes if nodes is not None else case.nodes,
                                    placed if placed is not None else case.init_pods,
                                    pods if pods is not None else case.measure_pods)
            case = e2e_case = custom
        result = workloads.run_workload(w, case=case, e2e_case=None if skip_e2e else e2e_case,
                                        engine_runs=options["engine_runs"], workers=workers, seed=seed, progress=say)
        if as_json:
            self.stdout.write(_json_dumps(result))
        else:
            for key, value in result.items():
                self.stdout.write(f"{key:>32}: {value}")

    def kubernetes(self, *, nodes, pods, workers, seed, say, as_json, backlog=False, client=(None, None), compare=False):
        """The kubernetes backend end to end, then the simulated backend on the same shape (nothing placed before);
        with `compare`, kube-scheduler too (bench/kube_scheduler.py)."""
        if compare:
            missing = kube_scheduler.missing_binary()  # before a long run, not after it
            if missing:
                raise CommandError(missing)
        say(f"kubernetes: {pods} pods on {nodes} nodes, {workers} worker processes, one leading replica")
        result = {"workload": "SchedulingBasic-kube", "nodes": nodes, "pods": pods, "workers": workers}
        qps, burst = client
        if (qps is not None and not 0 < qps < float("inf")) or (burst is not None and burst < 1):
            raise CommandError("--client-qps must be a finite number above 0 and --client-burst at least 1")
        limits = {k: v for k, v in (("qps", qps), ("burst", burst)) if v is not None}
        result.update(kube.run_kubernetes(nodes=nodes, pods=pods, workers=workers, backlog=backlog, progress=say,
                                          **limits))
        say(f"simulated: the same {pods} pods on {nodes} nodes")
        simulated = e2e.run_e2e(nodes=nodes, placed=0, pods=pods, workers=workers, seed=seed, progress=say)
        result.update({f"simulated_{k}": v for k, v in simulated.items()
                       if k in ("e2e_pods_per_s", "e2e_seconds", "binding_p50_ms", "binding_p99_ms", "attempt_p50_ms",
                                "sli_p50_ms", "sli_p99_ms", "overcommitted_nodes")})
        if compare:
            same = {"qps": result["kube_client_qps"], "burst": result["kube_client_burst"]}
            for prefix, limits in (("kubesched", same),
                                   ("kubesched_default", {"qps": kube_scheduler.DEFAULT_QPS,
                                                          "burst": kube_scheduler.DEFAULT_BURST})):
                result.update(kube_scheduler.run_kube_scheduler(nodes=nodes, pods=pods, backlog=backlog, prefix=prefix,
                                                                progress=say, **limits))
            for prefix in ("kubesched", "kubesched_default"):
                theirs = result[f"{prefix}_pods_per_s"]
                result[f"kube_vs_{prefix}_pods_per_s"] = round(result["kube_pods_per_s"] / theirs, 3) if theirs else None
        if as_json:
            self.stdout.write(_json_dumps(result))
        else:
            for key, value in result.items():
                self.stdout.write(f"{key:>32}: {value}")
            if compare:
                self.stdout.write("")
                self.stdout.write(kube_scheduler.compare_table(result))


def _json_dumps(obj):
    return json.dumps(obj)


def _compile_sources() -> None:
    """Bytecode for our modules before any process starts, as a deployed image has it (Dockerfile): with
    PYTHONDONTWRITEBYTECODE set, each worker, beat and replica would otherwise compile ~150 modules at start,
    and a backlog's first binding waits on the replica's start."""
    import compileall

    from django.conf import settings

    for package in ("config", "scheduler", "dashboard"):
        compileall.compile_dir(str(settings.BASE_DIR / package), quiet=2)
