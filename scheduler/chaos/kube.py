"""The chaos run on the kubernetes backend: a loopback kube-apiserver and etcd, `kube run` replicas
(leader election), Celery workers and beat, all on the run's database through the Postgres proxy; pods
created and deleted through the API while the faults of the simulated run happen, plus an API server
restart and a SIGKILL of the lease holder. Bind failures are the API server's own refusals (webhook.py).

The verdict reads the cluster as the API server has it: nodes' allocatable and the pods bound to them,
each pod's PodScheduled condition. Postgres is checked against it (binding records, mirror).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import hostile as hostile_catalogue
from .plan import (APISERVER_RESTART, HOSTILE_NAMESPACE, HOST_PORT, LEADER_KILL, NAMESPACE, POSTGRES_OUTAGE,
                   REDIS_FLUSH, WARMUP_NAMESPACE, WORKER_KILL, Plan, PodPlan, make_plan)
from .report import SAMPLE, category_counts, findings, goals, hostile_summary, poison_state
from .runner import BASE_DIR, Clock, Harness, Options, UseDatabase, recovery_report, retrying, usage_drift
from .verdict import (PENDING_WITH_REASON, BindingRecord, Placed, PodState, classify, double_bound, is_lost,
                      is_transient, overcommitted, pending_with_room, steady)
from .webhook import NAMESPACE_LABEL, BindFaultWebhook

TICK_S = 0.2
PROGRESS_S = 10.0
SAMPLE_S = 30.0  # a full list of pods from the API server: not too often at 10,000 pods
CREATE_THREADS = 4
LEASE_NAMESPACE = "default"


class Replica:
    """`manage.py kube run` as a real process; its identity is what it prints while waiting for the lease."""

    def __init__(self, env: dict, log_dir: Path, index: int):
        self.log = log_dir / f"replica-{index}.log"
        with open(self.log, "ab") as out:
            self.start_offset = out.tell()
            self.proc = subprocess.Popen([sys.executable, "manage.py", "kube", "run"], cwd=BASE_DIR, env=env,
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def text(self) -> str:
        """What this process (not an earlier one in the same slot) wrote."""
        with open(self.log, "rb") as f:
            f.seek(self.start_offset)
            return f.read().decode(errors="replace")

    @property
    def identity(self) -> str | None:
        found = re.findall(r"replica (\S+): waiting for lease", self.text())
        return found[-1] if found else None

    def last_error(self) -> str:
        """The exception (or the last line) that ended the process, for the report."""
        lines = [ln for ln in self.text().splitlines() if ln.strip()]
        errors = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception|Violation)\b", ln) or ln == "leaderelection lost"]
        return (errors[-1] if errors else (lines[-1] if lines else ""))[:240]

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


class BoundWatcher:
    """When each pod of a namespace is first seen bound, by our own list and watch on the API server (as a
    user sees it: a binding whose database write was rolled back still counts). Survives API restarts:
    on any error it lists again and carries on."""

    def __init__(self, core, namespace: str):
        self.core = core
        self.namespace = namespace
        self.bound_at: dict[str, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="bound-watcher", daemon=True)

    def start(self) -> BoundWatcher:
        self.thread.start()
        return self

    def _see(self, obj: dict) -> None:
        if (obj.get("spec") or {}).get("nodeName"):
            self.bound_at.setdefault(obj["metadata"]["name"], time.time())

    def _run(self) -> None:
        from kubernetes.watch.watch import iter_resp_lines

        from ..kube.client import call

        while not self.stop.is_set():
            try:
                listed = call(self.core.list_namespaced_pod, self.namespace)
                for obj in listed.get("items", []):
                    self._see(obj)
                rv = listed["metadata"]["resourceVersion"]
                while not self.stop.is_set():
                    response = self.core.list_namespaced_pod(self.namespace, watch=True, resource_version=rv,
                                                             timeout_seconds=30, _preload_content=False)
                    for line in iter_resp_lines(response):
                        event = json.loads(line)
                        if event.get("type") == "ERROR":
                            raise RuntimeError("watch expired")  # 410 Gone: list again
                        obj = event["object"]
                        rv = obj["metadata"].get("resourceVersion") or rv
                        self._see(obj)
            except Exception:  # noqa: BLE001 - the API server is restarting, or the watch expired
                self.stop.wait(0.5)

    def times(self) -> list[float]:
        return sorted(self.bound_at.values())


def quiet_client_logs() -> None:
    """The run's own API calls retry through the API server restart on purpose: no warning per retry."""
    import logging

    import urllib3

    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)  # the loopback server's own certificate
    for name in ("urllib3", "scheduler.kube.client"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _cpu_m(value) -> int:
    from kubernetes.utils import parse_quantity

    return int((parse_quantity(value) * 1000).to_integral_value(rounding="ROUND_CEILING"))


def _units(value) -> int:
    from kubernetes.utils import parse_quantity

    return int(parse_quantity(value).to_integral_value(rounding="ROUND_CEILING"))


def _allocatable(node: dict) -> dict[str, int]:
    out = {}
    for resource, value in ((node.get("status") or {}).get("allocatable") or {}).items():
        out[resource] = _cpu_m(value) if resource == "cpu" else _units(value)
    return out


def _condition(pod: dict) -> dict:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled":
            return c
    return {}


class KubeRun:
    def __init__(self, options: Options, say: Callable[[str], None]):
        self.options = options
        self.say = say
        kinds = hostile_catalogue.API_KINDS
        self.plan: Plan = make_plan(
            pods=options.pods, nodes=options.nodes, duration=options.duration, seed=options.seed,
            workers=options.workers, kills=options.kills, redis_flushes=options.redis_flushes,
            postgres_outages=options.postgres_outages, apiserver_restarts=options.apiserver_restarts,
            leader_kills=options.leader_kills, hostile=len(kinds) if options.hostile is None else options.hostile,
            hostile_kinds=kinds, bind_failure_share=options.bind_failures, resizes=False)
        self.harness = Harness(self.plan, options, say)
        self.created: set[str] = set()
        self.create_failed: dict[str, str] = {}
        self.deleted: set[str] = set()
        self.hostile_entries: list[dict] = []
        self.over_seen: dict[tuple[str, str], dict] = {}
        self.replicas: list[Replica] = []
        self.replica_exits: list[dict] = []
        self.watcher: BoundWatcher | None = None
        self.lease_name = f"schedboard-chaos-{os.getpid()}"
        self.restarting = threading.Lock()
        self.background: list[threading.Thread] = []

    # ---- set-up ---------------------------------------------------------------------------
    def run(self) -> dict:
        from django.core.management import call_command
        from django.test.utils import override_settings
        from kubernetes import client

        from .. import loop
        from ..queue import queues
        from ..kube.client import call
        from ..testing.kube_apiserver import local_kube_cluster

        quiet_client_logs()
        h = self.harness
        h.create_database()
        failures = {p.key: p.fail_binds for p in self.plan.pods if p.fail_binds}
        webhook = BindFaultWebhook(failures).start() if failures else None
        self.webhook = webhook
        try:
            self.say("starting kube-apiserver and etcd on loopback")
            with local_kube_cluster() as cluster:
                self.cluster = cluster
                api = cluster.api_client()
                self.core = client.CoreV1Api(api)
                self.coordination = client.CoordinationV1Api(api)
                try:
                    for ns in (NAMESPACE, HOSTILE_NAMESPACE, WARMUP_NAMESPACE):
                        call(self.core.create_namespace, {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": ns, "labels": NAMESPACE_LABEL}})
                    if webhook is not None:
                        call(client.AdmissionregistrationV1Api(api).create_validating_webhook_configuration,
                             webhook.configuration("schedboard-chaos-bind-faults"))
                    with ThreadPoolExecutor(CREATE_THREADS) as pool:
                        list(pool.map(lambda n: call(self.core.create_node, n.manifest()), self.plan.nodes))
                    with UseDatabase(h.db_name), override_settings(SCHEDBOARD_QUEUE_PREFIX=h.prefix,
                                                                   SCHEDBOARD_LIVE_PREFIX=f"{h.prefix}:live"):
                        queues.reset_queue()
                        loop._worker = None
                        call_command("migrate", verbosity=0)
                        self.say(f"{len(self.plan.nodes)} nodes; {len(self.plan.pods)} pods over "
                                 f"{self.plan.duration_s:.0f} s; {len(self.plan.faults)} faults; "
                                 f"{len(self.plan.hostile)} hostile creates; seed {self.plan.seed}")
                        h.start_proxy()
                        kube_env = {"SCHEDBOARD_BACKEND": "kubernetes", "KUBECONFIG": str(cluster.kubeconfig),
                                    "SCHEDBOARD_KUBE_NAMESPACE": LEASE_NAMESPACE,
                                    "SCHEDBOARD_LEASE_NAME": self.lease_name}
                        self.env = h.env(**kube_env)
                        h.start_workers(**kube_env)
                        self.replicas = [Replica(self.env, h.log_dir, i) for i in range(max(1, self.options.replicas))]
                        self._warm_up()
                        self.watcher = BoundWatcher(self.core, NAMESPACE).start()
                        h.clock = Clock()
                        self._timeline()
                        settle_s = self._settle()
                        return self._verdict(settle_s)
                finally:
                    if self.watcher is not None:
                        self.watcher.stop.set()
                    for replica in self.replicas:
                        replica.stop()
                    h.close()
                    queues.reset_queue()
                    loop._worker = None
                    api.close()
        finally:
            if webhook is not None:
                webhook.stop()

    def _warm_up(self) -> None:
        from ..kube.client import call

        warm = PodPlan("warm-up", "plain", 10, 8 * 1024 * 1024).manifest()
        warm["metadata"]["namespace"] = WARMUP_NAMESPACE
        call(self.core.create_namespaced_pod, WARMUP_NAMESPACE, warm)
        deadline = time.monotonic() + 300
        while not (call(self.core.read_namespaced_pod, "warm-up", WARMUP_NAMESPACE).get("spec") or {}).get("nodeName"):
            if time.monotonic() > deadline:
                raise RuntimeError("nothing was bound within 300 s of start\n" + self.harness.worker_logs_tail()
                                   + "\n".join(r.log.read_text(errors="replace")[-3000:] for r in self.replicas))
            time.sleep(0.3)
        self.say(f"warm: leader {self._holder()}")

    # ---- the run --------------------------------------------------------------------------
    def _create(self, p: PodPlan) -> None:
        from ..kube.client import ApiError, call

        deadline = time.monotonic() + 180
        while True:
            try:
                call(self.core.create_namespaced_pod, NAMESPACE, p.manifest())
                self.created.add(p.name)
                return
            except ApiError as exc:
                if exc.status == 409:  # our earlier try went through (the reply was lost)
                    self.created.add(p.name)
                    return
                if time.monotonic() > deadline or exc.status not in (0, 429, 500, 502, 503, 504):
                    self.create_failed[p.name] = str(exc)[:200]
                    return
                time.sleep(0.5)

    def _delete(self, p: PodPlan) -> None:
        from ..kube.client import ApiError, call

        deadline = time.monotonic() + 180
        while True:
            try:
                call(self.core.delete_namespaced_pod, p.name, NAMESPACE, grace_period_seconds=0)
                self.deleted.add(p.name)
                return
            except ApiError as exc:
                if exc.status == 404:  # gone already (or never created)
                    if p.name in self.created:
                        self.deleted.add(p.name)
                    return
                if time.monotonic() > deadline:
                    return
                time.sleep(0.5)

    def _timeline(self) -> None:
        h, plan = self.harness, self.plan
        arrivals = plan.pods
        deletions = sorted((p for p in plan.pods if p.delete_s is not None), key=lambda p: p.delete_s)
        faults, hostile = list(plan.faults), list(plan.hostile)
        i_arr = i_del = i_fault = i_host = 0
        next_progress, next_sample = PROGRESS_S, SAMPLE_S
        pending = []
        with ThreadPoolExecutor(CREATE_THREADS, thread_name_prefix="create") as pool:
            while True:
                t = h.clock.t()
                while i_arr < len(arrivals) and arrivals[i_arr].arrive_s <= t:
                    pending.append(pool.submit(self._create, arrivals[i_arr]))
                    i_arr += 1
                while i_del < len(deletions) and deletions[i_del].delete_s <= t:
                    pending.append(pool.submit(self._delete, deletions[i_del]))
                    i_del += 1
                while i_fault < len(faults) and faults[i_fault].at_s <= t:
                    self._fault(faults[i_fault])
                    i_fault += 1
                while i_host < len(hostile) and hostile[i_host].at_s <= t:
                    pool.submit(self._hostile, hostile[i_host], t)
                    i_host += 1
                pending = [f for f in pending if not f.done()]
                self._supervise()
                if t >= next_sample:
                    self._try(self._sample_overcommit)
                    next_sample += SAMPLE_S
                if t >= next_progress:
                    self._try(lambda: self._progress(t, i_arr, i_fault))
                    next_progress += PROGRESS_S
                if (i_arr == len(arrivals) and i_del == len(deletions) and i_fault == len(faults)
                        and i_host == len(hostile) and not pending):
                    break
                time.sleep(TICK_S)
        for thread in self.background:
            thread.join(timeout=180)

    def _supervise(self) -> None:
        """As a Deployment would: a replica that exited (lease lost, crash) is started again, and counted."""
        for i, replica in enumerate(self.replicas):
            code = replica.proc.poll()
            if code is None:
                continue
            self.replica_exits.append({"replica": i, "t": round(self.harness.clock.t(), 1) if self.harness.clock else None,
                                       "exit_code": code, "identity": replica.identity, "error": replica.last_error()})
            self.say(f"replica {i} exited ({code}): {self.replica_exits[-1]['error'][:120]}; starting it again")
            self.replicas[i] = Replica(self.env, self.harness.log_dir, i)

    def _try(self, fn) -> None:
        """A check during the run: the API server may be restarting; the next one will do."""
        try:
            fn()
        except Exception as exc:  # noqa: BLE001
            self.say(f"check skipped: {str(exc).splitlines()[0][:120]}")

    def _fault(self, fault) -> None:
        h = self.harness
        self.say(f"t={h.clock.t():.1f}s fault: {fault.kind}" + (f" (worker {fault.target})" if fault.kind == WORKER_KILL else ""))
        if fault.kind == WORKER_KILL:
            h.kill_worker(fault.target)
        elif fault.kind == REDIS_FLUSH:
            h.redis_flush()
        elif fault.kind == POSTGRES_OUTAGE:
            h.postgres_outage()
        elif fault.kind == APISERVER_RESTART:
            rec = h.record(APISERVER_RESTART)

            def restart():
                started = time.time()
                with self.restarting:
                    self.cluster.restart_apiserver()
                rec.detail["restart_s"] = round(time.time() - started, 2)

            thread = threading.Thread(target=restart, daemon=True)
            thread.start()
            self.background.append(thread)
        elif fault.kind == LEADER_KILL:
            self._kill_leader()

    def _holder(self) -> str | None:
        from ..kube.client import call

        try:
            lease = call(self.coordination.read_namespaced_lease, self.lease_name, LEASE_NAMESPACE)
        except Exception:  # noqa: BLE001 - no lease yet, or the API server is restarting
            return None
        return (lease.get("spec") or {}).get("holderIdentity")

    def _kill_leader(self) -> None:
        holder = self._holder()
        for i, replica in enumerate(self.replicas):
            if holder and replica.identity == holder and replica.proc.poll() is None:
                replica.kill()
                self.harness.record(LEADER_KILL, {"replica": i})
                # As a Deployment would: the process comes back (and waits for the lease).
                self.replicas[i] = Replica(self.env, self.harness.log_dir, i)
                return
        self.harness.record(LEADER_KILL, {"replica": None, "skipped": f"no live replica holds the lease ({holder})"})

    def _hostile(self, item, t: float) -> None:
        from ..kube.client import ApiError, call

        entry = hostile_catalogue.CATALOGUE[item.kind]
        names = entry.names(item.index)
        verdict, error, status = "admitted", "", 201
        for body in entry.api_bodies(item.index):
            # Raw JSON, as kubectl sends it: the Python client's own models would refuse some bodies first.
            deadline = time.monotonic() + 120
            status, text = self._post_raw(f"/api/v1/namespaces/{HOSTILE_NAMESPACE}/pods", body)
            while status == 0 and time.monotonic() < deadline:  # the API server is restarting: as kubectl, again
                time.sleep(1.0)
                status, text = self._post_raw(f"/api/v1/namespaces/{HOSTILE_NAMESPACE}/pods", body)
            if status >= 300 or status == 0:
                verdict = "refused" if 400 <= status < 500 else "crashed"
                try:
                    error = f"{status}: {json.loads(text).get('message', '')}"[:240]
                except ValueError:
                    error = f"{status}: {text}"[:240]
        pods_in = []
        for name in names:
            try:
                call(self.core.read_namespaced_pod, name, HOSTILE_NAMESPACE)
                pods_in.append(name)
            except ApiError:
                pass
        self.hostile_entries.append({"kind": item.kind, "t": round(t, 2), "verdict": verdict, "status": status,
                                     "pods_in": pods_in, "error": error})
        self.say(f"hostile {item.kind}: {verdict} ({status})")

    def _post_raw(self, path: str, body: dict) -> tuple[int, str]:
        import ssl
        import urllib.error
        import urllib.request

        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # the loopback API server's self-signed certificate
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context))
        request = urllib.request.Request(self.cluster.url + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": f"Bearer {self.cluster.tokens['admin']}"})
        try:
            with opener.open(request, timeout=60) as response:
                return response.status, response.read().decode(errors="replace")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace")
        except OSError as exc:
            return 0, str(exc)

    def _progress(self, t: float, arrived: int, faults_done: int) -> None:
        from ..models import Pod

        bound = Pod.objects.filter(namespace=NAMESPACE).exclude(node_name="").count()
        self.say(f"t={t:.0f}s created {len(self.created)}/{arrived} bound (mirror) {bound} deleted {len(self.deleted)} "
                 f"faults {faults_done}/{len(self.plan.faults)} leader {self._holder()}")

    # ---- the checks (from the API server) ----------------------------------------------------
    def _cluster(self) -> tuple[dict[str, dict], list[dict]]:
        from ..kube.client import call

        nodes = {n["metadata"]["name"]: n for n in call(self.core.list_node).get("items", [])}
        pods = call(self.core.list_pod_for_all_namespaces).get("items", [])
        return nodes, pods

    def _placed(self, pods: list[dict]) -> tuple[list[Placed], list[str]]:
        from ..kube.mirror import pod_manifest
        from ..manifests.objects import pod_from_manifest
        from ..state.reservations import pod_usage_fields

        ours = self.plan.pods_by_name()
        placed, unparsed = [], []
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            phase = (pod.get("status") or {}).get("phase")
            if not node or phase in ("Succeeded", "Failed"):
                continue
            meta = pod["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            p = ours.get(meta["name"]) if meta["namespace"] == NAMESPACE else None
            if p is not None:
                placed.append(Placed(node, key, p.requests, (("TCP", HOST_PORT, "0.0.0.0"),) if p.host_port else ()))
                continue
            try:
                usage = pod_usage_fields(pod_from_manifest(pod_manifest(pod)))
            except Exception:  # noqa: BLE001 - a pod our parser refuses still takes room: say so
                unparsed.append(key)
                placed.append(Placed(node, key, {"pods": 1}))
                continue
            requests = {"cpu": usage["req_cpu"], "memory": usage["req_memory"], "pods": 1,
                        "ephemeral-storage": usage["req_ephemeral"], **usage["req_scalar"]}
            placed.append(Placed(node, key, requests, tuple((str(a), int(b), str(c)) for a, b, c in usage["host_ports"])))
        return placed, unparsed

    def _sample_overcommit(self) -> None:
        nodes, pods = self._cluster()
        placed, _ = self._placed(pods)
        for found in overcommitted({name: _allocatable(n) for name, n in nodes.items()}, placed):
            self.over_seen.setdefault((found["node"], found["resource"]), {**found, "t": round(self.harness.clock.t(), 1)})

    def _states(self, pods: list[dict]) -> tuple[dict[str, str], dict[str, dict], int]:
        from ..models import Pod
        from ..queue.queues import get_queue

        queued = get_queue().keys()
        api = {p["metadata"]["name"]: p for p in pods if p["metadata"]["namespace"] == NAMESPACE}
        rows = {r.name: r for r in Pod.objects.filter(namespace=NAMESPACE).only("name", "assumed_node", "node_name")}
        categories, details, transient = {}, {}, 0
        for p in self.plan.pods:
            if p.name not in self.created or p.name in self.deleted:
                continue
            pod = api.get(p.name)
            row = rows.get(p.name)
            if pod is None:
                state = PodState(exists=False)
            else:
                c = _condition(pod)
                state = PodState(exists=True, bound=bool((pod.get("spec") or {}).get("nodeName")),
                                 assumed=bool(row and row.assumed_node and not row.node_name),
                                 condition_status=c.get("status", ""), condition_reason=c.get("reason", ""),
                                 condition_message=c.get("message", ""), queued=p.key in queued)
            categories[p.name] = classify(state)
            transient += is_transient(state)
            if is_lost(categories[p.name]):
                details[p.name] = {"pod": p.key, "why": categories[p.name], "kind": p.kind, "fail_binds": p.fail_binds,
                                   "mirrored": row is not None, "assumed_node": row.assumed_node if row else None,
                                   "condition": [state.condition_status, state.condition_reason,
                                                 state.condition_message[:160]]}
        return categories, details, transient

    def _settle(self) -> float:
        h = self.harness
        for thread in h.outage_threads:
            thread.join(timeout=180)
        started = time.monotonic()
        limit = self.options.settle_seconds()
        self.say(f"settling (up to {limit:.0f} s)")
        calm = 0
        while time.monotonic() - started < limit:
            self._supervise()
            try:
                _, pods = self._cluster()
                categories, _, transient = retrying(lambda: self._states(pods), what="settle", say=self.say)
            except Exception as exc:  # noqa: BLE001
                self.say(f"settle check failed: {exc}")
                time.sleep(2.0)
                continue
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
        nodes, pods = self._cluster()
        placed, unparsed = self._placed(pods)
        for found in overcommitted({name: _allocatable(n) for name, n in nodes.items()}, placed):
            self.over_seen.setdefault((found["node"], found["resource"]), {**found, "t": round(h.clock.t(), 1)})
        categories, lost_details, _ = self._states(pods)
        bound, pending, lost_by = category_counts(categories)
        planned = self.plan.pods_by_name()
        waiting = [Placed("", planned[name].key, planned[name].requests,
                          (("TCP", HOST_PORT, "0.0.0.0"),) if planned[name].host_port else ())
                   for name, category in categories.items() if category == PENDING_WITH_REASON]
        with_room = pending_with_room({name: _allocatable(n) for name, n in nodes.items()}, placed, waiting)

        api_node = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": (p.get("spec") or {}).get("nodeName") or ""
                    for p in pods}
        records = [BindingRecord(uid, f"{ns}/{name}", node) for uid, ns, name, node in
                   Binding.objects.values_list("pod_uid", "namespace", "pod_name", "node_name")]
        doubles = double_bound(records, api_node)
        mirror = {r.key: r.node_name for r in Pod.objects.only("namespace", "name", "node_name")}
        # Bound by us in the API server (not arrived bound) with no Binding row: an audit record lost.
        recorded = {r.key for r in records}
        arrived_bound = {p.key for p in self.plan.pods if p.node_name}
        bound_without_binding = sorted(k for k, node in api_node.items()
                                       if node and k.startswith(NAMESPACE + "/") and k not in recorded
                                       and k not in arrived_bound)
        mirror_disagrees = sorted(k for k, node in api_node.items() if k in mirror and mirror[k] != node)

        faults = recovery_report(h.faults, self.watcher.times(), until=end_wall)
        pg = faults.get(POSTGRES_OUTAGE)
        if pg is not None:
            pg["edges"] = h.outage_edges()

        ours = scheduler_names()
        poison = {}
        for pod in pods:
            if pod["metadata"]["namespace"] != HOSTILE_NAMESPACE:
                continue
            c = _condition(pod)
            poison[pod["metadata"]["name"]] = poison_state(
                bound=bool((pod.get("spec") or {}).get("nodeName")),
                ours=((pod.get("spec") or {}).get("schedulerName") or "default-scheduler") in ours,
                condition_status=c.get("status", ""), condition_message=c.get("message", ""))

        drift = usage_drift()
        over = sorted(self.over_seen.values(), key=lambda f: (f["node"], f["resource"]))
        result = {
            "backend": "kubernetes", "seed": self.plan.seed, "pods": len(self.plan.pods), "nodes": len(self.plan.nodes),
            "workers": self.options.workers, "replicas": len(self.replicas), "duration_s": self.plan.duration_s,
            "run_s": round(end_wall - h.clock.start_wall, 1), "settle_s": settle_s, "plan": self.plan.counts,
            "pods_created": len(self.created), "pods_create_failed": len(self.create_failed),
            "pods_bound": bound, "pods_pending_with_reason": pending, "pods_lost": sum(lost_by.values()),
            "lost_by_reason": lost_by, "lost_pods": list(lost_details.values())[:SAMPLE],
            "pods_deleted": len(self.deleted),
            "nodes_overcommitted": len({f["node"] for f in over}), "overcommitted": over[:SAMPLE],
            "bound_pods_our_parser_refuses": unparsed[:SAMPLE],
            "double_bound": len(doubles), "double_bound_pods": doubles[:SAMPLE],
            "bound_without_binding": len(bound_without_binding),
            "replica_exits": self.replica_exits,
            "mirror_disagrees_with_api": len(mirror_disagrees), "mirror_disagreements": mirror_disagrees[:SAMPLE],
            "pods_pending_with_room": len(with_room), "pending_with_room": with_room[:SAMPLE],
            "usage_drift_nodes": len(drift), "usage_drift": drift[:SAMPLE],
            "drift_repaired": h.drift_repaired(), "recount_passes": h.recounts(),
            "bind_failures": {
                "pods_annotated": self.plan.counts["bind_failure_pods"],
                **(self.webhook.report() if self.webhook else {}),
                "bind_failed_attempts": Attempt.objects.filter(namespace=NAMESPACE, result="bind_failed").count()},
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


def run_kubernetes(options: Options, say: Callable[[str], None]) -> dict:
    from ..testing.kube_apiserver import KubeApiServerNotBuilt

    try:
        return KubeRun(options, say).run()
    except KubeApiServerNotBuilt as exc:
        raise RuntimeError(str(exc)) from exc

