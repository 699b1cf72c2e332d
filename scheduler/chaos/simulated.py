"""The chaos run on the simulated backend: pods applied as `apply` applies them, real Celery workers
and beat (through the Postgres proxy), faults on the plan's schedule, then the verdict.

Injected bind failures are the simulated backend's own: the `schedboard.io/fail-binds: "N"`
annotation (the first N bindings of the pod are refused) on the plan's share of pods.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from django.db.models import Q

from . import hostile as hostile_catalogue
from .plan import (HOSTILE_NAMESPACE, HOST_PORT, NAMESPACE, POSTGRES_OUTAGE, REDIS_FLUSH, WARMUP_NAMESPACE,
                   WORKER_KILL, Plan, PodPlan, make_plan)
from .report import (SAMPLE, category_counts, findings, first_error_line, goals, hostile_summary,
                     hostile_verdict, poison_state)
from .runner import ApplyProcess, Clock, Harness, Options, UseDatabase, recovery_report, retrying, usage_drift
from .verdict import (PENDING_WITH_REASON, BindingRecord, Placed, PodState, classify, double_bound, is_lost,
                      is_transient, overcommitted, pending_with_room, steady)

TICK_S = 0.2
PROGRESS_S = 10.0
SAMPLE_S = 10.0
APPLY_CHUNK = 500


def _parse(manifests: list[dict], name: str):
    from ..manifests.files import parse_documents

    return parse_documents(json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests}), name)


def _apply(manifests: list[dict], name: str):
    from ..cluster.services import cluster_apply

    return cluster_apply(_parse(manifests, name), filename=name)


def _row_requests(row) -> dict[str, int]:
    out = {"cpu": row.req_cpu, "memory": row.req_memory, "pods": 1}
    if row.req_ephemeral:
        out["ephemeral-storage"] = row.req_ephemeral
    for resource, amount in (row.req_scalar or {}).items():
        out[resource] = int(amount)
    return out


def _plan_ports(p: PodPlan) -> tuple:
    return (("TCP", HOST_PORT, "0.0.0.0"),) if p.host_port else ()


class SimulatedRun:
    def __init__(self, options: Options, say: Callable[[str], None]):
        self.options = options
        self.say = say
        kinds = hostile_catalogue.KINDS
        self.plan: Plan = make_plan(
            pods=options.pods, nodes=options.nodes, duration=options.duration, seed=options.seed,
            workers=options.workers, kills=options.kills, redis_flushes=options.redis_flushes,
            postgres_outages=options.postgres_outages, hostile=len(kinds) if options.hostile is None else options.hostile,
            hostile_kinds=kinds, bind_failure_share=options.bind_failures)
        self.current = self.plan.pods_by_name()  # what each pod asks for now (a resize changes it)
        self.deleted: set[str] = set()
        self.resized: list[str] = []
        self.resize_refused: list[str] = []
        self.hostile_entries: list[dict] = []
        self.over_seen: dict[tuple[str, str], dict] = {}
        self.harness = Harness(self.plan, options, say)

    # ---- the run ------------------------------------------------------------------------
    def run(self) -> dict:
        from django.core.management import call_command
        from django.test.utils import override_settings

        from .. import loop
        from ..queue import queues

        h = self.harness
        h.create_database()
        try:
            with UseDatabase(h.db_name), override_settings(SCHEDBOARD_QUEUE_PREFIX=h.prefix,
                                                           SCHEDBOARD_LIVE_PREFIX=f"{h.prefix}:live"):
                queues.reset_queue()
                loop._worker = None
                call_command("migrate", verbosity=0)
                self.say(f"{len(self.plan.nodes)} nodes; {len(self.plan.pods)} pods over {self.plan.duration_s:.0f} s; "
                         f"{len(self.plan.faults)} faults; {len(self.plan.hostile)} hostile applies; seed {self.plan.seed}")
                for i in range(0, len(self.plan.nodes), APPLY_CHUNK):
                    _apply([n.manifest() for n in self.plan.nodes[i:i + APPLY_CHUNK]], "chaos-nodes.json")
                h.start_proxy()
                h.start_workers()
                self._warm_up()
                h.clock = Clock()
                self._timeline()
                settle_s = self._settle()
                return self._verdict(settle_s)
        finally:
            h.close()
            queues.reset_queue()
            loop._worker = None

    def _warm_up(self) -> None:
        from ..models import Pod

        warm = PodPlan("warm-up", "plain", 10, 8 * 1024 * 1024).manifest()
        warm["metadata"]["namespace"] = WARMUP_NAMESPACE
        _apply([warm], "chaos-warmup.json")
        deadline = time.monotonic() + 180
        while not Pod.objects.filter(namespace=WARMUP_NAMESPACE).exclude(node_name="").exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the workers bound nothing within 180 s\n" + self.harness.worker_logs_tail())
            time.sleep(0.2)
        self.say("workers warm")

    def _timeline(self) -> None:
        from ..cluster.services import pod_delete

        h, plan, say = self.harness, self.plan, self.say
        arrivals = plan.pods  # in arrival order
        resizes = sorted((p for p in plan.pods if p.resize_s is not None), key=lambda p: p.resize_s)
        deletions = sorted((p for p in plan.pods if p.delete_s is not None), key=lambda p: p.delete_s)
        faults, hostile = list(plan.faults), list(plan.hostile)
        i_arr = i_res = i_del = i_fault = i_host = 0
        running: list[tuple] = []
        next_progress, next_sample = PROGRESS_S, SAMPLE_S
        while True:
            t = h.clock.t()
            due = []
            while i_arr < len(arrivals) and arrivals[i_arr].arrive_s <= t and len(due) < APPLY_CHUNK:
                due.append(arrivals[i_arr])
                i_arr += 1
            if due:
                retrying(lambda: _apply([p.manifest() for p in due], "chaos-pods.json"), what="apply pods", say=say)
            while i_res < len(resizes) and resizes[i_res].resize_s <= t:
                self._resize(resizes[i_res])
                i_res += 1
            while i_del < len(deletions) and deletions[i_del].delete_s <= t:
                p = deletions[i_del]
                if retrying(lambda: pod_delete(namespace=NAMESPACE, name=p.name), what="delete pod", say=say):
                    self.deleted.add(p.name)
                i_del += 1
            while i_fault < len(faults) and faults[i_fault].at_s <= t:
                self._fault(faults[i_fault])
                i_fault += 1
            while i_host < len(hostile) and hostile[i_host].at_s <= t:
                running.append(self._hostile_start(hostile[i_host]))
                i_host += 1
            running = [r for r in running if not self._hostile_done(*r)]
            if t >= next_sample:
                retrying(self._sample_overcommit, what="overcommit sample", say=say)
                next_sample += SAMPLE_S
            if t >= next_progress:
                retrying(lambda: self._progress(t, i_arr, i_fault), what="progress", say=say)
                next_progress += PROGRESS_S
            if (i_arr == len(arrivals) and i_res == len(resizes) and i_del == len(deletions)
                    and i_fault == len(faults) and i_host == len(hostile) and not running):
                return
            time.sleep(TICK_S)

    def _resize(self, p: PodPlan) -> None:
        from ..manifests.errors import ManifestError

        bigger = p.resized()
        try:
            result = retrying(lambda: _apply([bigger.manifest()], "chaos-resize.json"), what="resize", say=self.say)
        except ManifestError:
            self.resize_refused.append(p.name)  # already placed: a scheduled pod's resources are immutable
            return
        if result.statuses.get(("Pod", NAMESPACE, p.name)) == "configured":
            self.current[p.name] = bigger
            self.resized.append(p.name)

    def _fault(self, fault) -> None:
        h = self.harness
        self.say(f"t={h.clock.t():.1f}s fault: {fault.kind}" + (f" (worker {fault.target})" if fault.kind == WORKER_KILL else ""))
        if fault.kind == WORKER_KILL:
            h.kill_worker(fault.target)
        elif fault.kind == REDIS_FLUSH:
            h.redis_flush()
        elif fault.kind == POSTGRES_OUTAGE:
            h.postgres_outage()

    def _hostile_start(self, item):
        h = self.harness
        entry = hostile_catalogue.CATALOGUE[item.kind]
        path = h.log_dir / f"hostile-{item.index:03d}-{item.kind}.yaml"
        path.write_text(entry.yaml(item.index))
        # As a user: straight to Postgres (not through the proxy that plays the outage).
        env = h.env()
        env["DATABASE_URL"] = h.url
        return item, ApplyProcess(path, env), h.clock.t()

    def _hostile_done(self, item, proc: ApplyProcess, started: float) -> bool:
        from ..models import Pod

        if not proc.poll():
            return False
        _, err = proc.output()
        names = hostile_catalogue.CATALOGUE[item.kind].names(item.index)
        pods_in = retrying(lambda: list(Pod.objects.filter(namespace=HOSTILE_NAMESPACE, name__in=names)
                                        .values_list("name", flat=True)), what="hostile check", say=self.say)
        verdict = hostile_verdict(exit_code=proc.exit_code, stderr=err, timed_out=proc.timed_out)
        self.hostile_entries.append({
            "kind": item.kind, "t": round(started, 2), "verdict": verdict, "exit_code": proc.exit_code,
            "pods_in": sorted(pods_in), "max_rss_mb": proc.max_rss_mb, "error": first_error_line(err)})
        self.say(f"hostile {item.kind}: {verdict}" + (f", {len(pods_in)} pod(s) got in" if pods_in else ""))
        return True

    def _progress(self, t: float, arrived: int, faults_done: int) -> None:
        from ..models import Pod

        bound = Pod.objects.filter(namespace=NAMESPACE).exclude(node_name="").count()
        self.say(f"t={t:.0f}s arrived {arrived}/{len(self.plan.pods)} bound {bound} deleted {len(self.deleted)} "
                 f"faults {faults_done}/{len(self.plan.faults)} hostile {len(self.hostile_entries)}/{len(self.plan.hostile)}"
                 f" overcommitted so far {len({n for n, _ in self.over_seen})}")

    # ---- the checks -------------------------------------------------------------------------
    def _placed(self) -> list[Placed]:
        from ..models import Pod

        placed = []
        rows = Pod.objects.filter(Q(~Q(node_name="")) | Q(~Q(assumed_node=""))).only(
            "namespace", "name", "node_name", "assumed_node", "req_cpu", "req_memory", "req_ephemeral", "req_scalar",
            "host_ports")
        for row in rows:
            node = row.node_name or row.assumed_node
            p = self.current.get(row.name) if row.namespace == NAMESPACE else None
            if p is not None:
                placed.append(Placed(node, row.key, p.requests, _plan_ports(p)))
            else:
                ports = tuple((str(x[0]), int(x[1]), str(x[2])) for x in (row.host_ports or []))
                placed.append(Placed(node, row.key, _row_requests(row), ports))
        return placed

    def _allocatable(self) -> dict[str, dict[str, int]]:
        return {n.name: n.allocatable for n in self.plan.nodes}

    def _sample_overcommit(self) -> None:
        for found in overcommitted(self._allocatable(), self._placed()):
            self.over_seen.setdefault((found["node"], found["resource"]), {**found, "t": round(self.harness.clock.t(), 1)})

    def _pod_states(self) -> tuple[dict[str, str], dict[str, dict], int]:
        from ..models import Pod
        from ..queue.queues import get_queue

        queued = get_queue().keys()
        rows = {r.name: r for r in Pod.objects.filter(namespace=NAMESPACE)}
        categories, details, transient = {}, {}, 0
        for p in self.plan.pods:
            if p.name in self.deleted:
                continue
            row = rows.get(p.name)
            state = PodState(exists=False) if row is None else PodState(
                exists=True, bound=bool(row.node_name), assumed=bool(row.assumed_node) and not row.node_name,
                condition_status=row.scheduled_status, condition_reason=row.scheduled_reason,
                condition_message=row.scheduled_message, queued=p.key in queued)
            categories[p.name] = classify(state)
            transient += is_transient(state)
            if is_lost(categories[p.name]):
                details[p.name] = {"pod": p.key, "why": categories[p.name], "kind": p.kind,
                                   "fail_binds": p.fail_binds, "attempts": row.attempts if row else None,
                                   "assumed_node": row.assumed_node if row else None,
                                   "condition": [row.scheduled_status, row.scheduled_reason,
                                                 row.scheduled_message[:160]] if row else None}
        return categories, details, transient

    def _settle(self) -> float:
        """Wait (up to the settle time) until the pods are steady (verdict.steady), twice in a row."""
        h = self.harness
        for thread in h.outage_threads:
            thread.join(timeout=180)
        started = time.monotonic()
        limit = self.options.settle_seconds()
        self.say(f"settling (up to {limit:.0f} s)")
        calm = 0
        while time.monotonic() - started < limit:
            categories, _, transient = retrying(self._pod_states, what="settle", say=self.say)
            calm = calm + 1 if steady(categories.values(), transient) else 0
            if calm >= 2:
                break
            time.sleep(2.0)
        return round(time.monotonic() - started, 1)

    def _verdict(self, settle_s: float) -> dict:
        from ..models import Attempt, Binding, Pod
        from ..versions.profiles import scheduler_names

        h = self.harness
        end_wall = time.time()
        retrying(self._sample_overcommit, what="final check", say=self.say)
        categories, lost_details, _ = self._pod_states()
        bound, pending, lost_by = category_counts(categories)
        waiting = [Placed("", self.current[name].key, self.current[name].requests, _plan_ports(self.current[name]))
                   for name, category in categories.items() if category == PENDING_WITH_REASON]
        with_room = pending_with_room(self._allocatable(), self._placed(), waiting)

        records = [BindingRecord(uid, f"{ns}/{name}", node) for uid, ns, name, node in
                   Binding.objects.values_list("pod_uid", "namespace", "pod_name", "node_name")]
        current = {r.key: r.node_name for r in Pod.objects.only("namespace", "name", "node_name")}
        doubles = double_bound(records, current)
        # Bound by us but with no Binding row (pods that arrived bound have none, rightly).
        arrived_bound = {p.name for p in self.plan.pods if p.node_name}
        bound_without_binding = sum(1 for ns, name in Pod.objects.exclude(node_name="").exclude(
            uid__in=Binding.objects.values("pod_uid")).values_list("namespace", "name")
            if not (ns == NAMESPACE and name in arrived_bound))

        bind_times = sorted(ts.timestamp() for ts in
                            Binding.objects.filter(namespace=NAMESPACE).values_list("bound_at", flat=True))
        faults = recovery_report(h.faults, bind_times, until=end_wall)
        pg = faults.get(POSTGRES_OUTAGE)
        if pg is not None:
            pg["edges"] = h.outage_edges()

        ours = scheduler_names()
        poison = {}
        for row in Pod.objects.filter(namespace=HOSTILE_NAMESPACE):
            poison[row.name] = poison_state(bound=bool(row.node_name), ours=row.scheduler_name in ours,
                                            condition_status=row.scheduled_status,
                                            condition_message=row.scheduled_message)

        drift = usage_drift()
        over = sorted(self.over_seen.values(), key=lambda f: (f["node"], f["resource"]))
        over_nodes = sorted({f["node"] for f in over})
        result = {
            "backend": "simulated", "seed": self.plan.seed, "pods": len(self.plan.pods), "nodes": len(self.plan.nodes),
            "workers": self.options.workers, "duration_s": self.plan.duration_s,
            "run_s": round(end_wall - h.clock.start_wall, 1), "settle_s": settle_s, "plan": self.plan.counts,
            "pods_bound": bound, "pods_pending_with_reason": pending, "pods_lost": sum(lost_by.values()),
            "lost_by_reason": lost_by, "lost_pods": list(lost_details.values())[:SAMPLE],
            "pods_deleted": len(self.deleted), "pods_resized": len(self.resized),
            "resizes_refused": len(self.resize_refused),
            "nodes_overcommitted": len(over_nodes), "overcommitted": over[:SAMPLE],
            "double_bound": len(doubles), "double_bound_pods": doubles[:SAMPLE],
            "bound_without_binding": bound_without_binding,
            "pods_pending_with_room": len(with_room), "pending_with_room": with_room[:SAMPLE],
            "usage_drift_nodes": len(drift), "usage_drift": drift[:SAMPLE],
            "drift_repaired": h.drift_repaired(), "recount_passes": h.recounts(),
            "bind_failures": {
                "pods_annotated": self.plan.counts["bind_failure_pods"],
                "injected_failures_seen": Attempt.objects.filter(
                    namespace=NAMESPACE, result="bind_failed", message__contains="injected binding failure").count()},
            "faults": faults,
            "postgres_recovery_s": pg["recovery_max_s"] if pg and not pg["not_recovered"] else None,
            "hostile": hostile_summary(self.hostile_entries, poison),
            "log_dir": str(h.log_dir),
        }
        result["goals"], result["violations"] = goals(result)
        result["findings"] = findings(result)
        result["goals_met"] = all(result["goals"].values())
        if self.options.keep_database:
            result["database"] = h.db_name
        return result


def run_simulated(options: Options, say: Callable[[str], None]) -> dict:
    return SimulatedRun(options, say).run()
