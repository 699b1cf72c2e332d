"""The replica that talks to the cluster: leader election, then list+watch into Postgres and the committer.

    elector.acquire() ──► reflectors (nodes, pods) ──► Postgres mirror ──► queue ──► workers schedule
                      └─► committer: jobs from workers (Redis list) ──► pods/binding, events, pods/status

Every replica runs this; only the Lease holder gets past `acquire()`. When the lease is lost the
committer stops before its next API call (the backend checks `is_leader()` at every binding) and the
replica stops, as kube-scheduler exits on "leaderelection lost".

What binds is not this module's: scheduler/replica.py composes a replica from this controller, the
kubernetes backend and the loop's binder (and, inline, its scheduler), so that kube/ imports neither.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone

from django.db import InterfaceError, OperationalError, close_old_connections, connections
from psycopg.errors import DeadlockDetected

from . import currency
from .client import ApiError, Backoff, HotCalls, call
from .events import STRATEGIC_MERGE_PATCH, EventRecorder, pod_reference
from .jobs import jobs_key
from .leader import LeaderElector
from .mirror import NodeStore, PodStore
from .objects import reflectors as object_reflectors
from .reflector import Reflector

log = logging.getLogger(__name__)

# As kube-scheduler's pod informer: terminated pods take no room and are none of our business.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
MAX_JOBS = 32  # jobs the committer takes at once: their bindings go out together, in parallel
# Binding cycles in flight at once in the leader (Committer): their calls share the backend's bounded pool.
BIND_CYCLES = 4


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Committer:
    """Turns the workers' jobs into API calls, never dropping one it has not finished.

    `core` (a CoreV1Api) patches pods/status; `bind` binds a batch of bind items in their wire form (the
    replica gives it the loop's binder; without one the committer only reports).

    Asynchronous binding, as upstream's SchedulerAsyncAPICalls: with `cycles` > 1, `run_once(wait=False)`
    starts each batch's binding cycle (mark in Postgres, the pods/binding calls, the outcomes recorded) on
    one of `cycles` threads and goes back for the next jobs at once, so one slow call no longer holds every
    binding behind it; the calls of all cycles share the backend's bounded pool (BIND_PARALLELISM in
    flight). Per pod the order is kept: at most one cycle holds a pod; a job for a pod whose binding is in
    flight waits for it, then goes out with the next batch, where the binder sends only the one its current
    reservation is for (a newer placement supersedes an older one, as the dispatcher's calls for one
    object). A job leaves the Redis processing list only when every binding in it is settled.
    """

    def __init__(self, core, recorder: EventRecorder, redis, *, bind: Callable[[list[dict]], object] | None = None,
                 is_leader=lambda: True, cycles: int = BIND_CYCLES):
        self.core = core
        self.bind = bind
        self.recorder = recorder
        self.redis = redis
        self.is_leader = is_leader
        self.key = jobs_key()
        self.processing = self.key + ":processing"
        self.jobs_done = 0
        self._reports: queue.Queue = queue.Queue()
        self._reporter: threading.Thread | None = None
        self.cycles = max(1, int(cycles))
        self._cond = threading.Condition()
        self._busy: set = set()  # pods (row ids) some binding cycle holds now
        self._held: list[tuple[dict, bytes]] = []  # (bind item, its raw job) waiting for their pod's cycle
        self._open: dict[bytes, int] = {}  # raw job -> its bindings not settled yet
        self._running = 0  # cycles in flight
        self._failure: BaseException | None = None  # a cycle's error, raised by the next run_once
        self._threads: list[threading.Thread] = []
        self._work: queue.Queue = queue.Queue()

    def recover(self) -> int:
        """A previous leader's unfinished jobs go back to the head of the list (bindings are idempotent).

        Their reservations may still be marked binding (that leader died mid-call): the reconciler leaves
        those alone, and binding them again renews the mark; a pod the API already bound is settled as
        bound (409 for the same node, or the watch got there first). A mark whose job was lost for good
        is freed after SCHEDBOARD_BINDING_TIMEOUT_SECONDS (loop.reconcile). Waits for this committer's own
        cycles first: a job is never in the list and in flight at once.
        """
        self.drain()
        with self._cond:
            self._held.clear()
            self._open.clear()
        moved = 0
        while self.redis.lmove(self.processing, self.key, "RIGHT", "LEFT") is not None:
            moved += 1
        return moved

    def run_once(self, timeout: float = 0.2, *, wait: bool = True) -> bool:
        """Take the waiting jobs (up to MAX_JOBS): their bindings as one batch, their reports to the events thread.

        `wait=False` (the leader's loop): the batch's binding cycle runs on a cycle thread and this returns
        once it started; with every cycle busy it first waits (up to `timeout`) for one to finish, leaving
        the jobs in Redis meanwhile. `wait=True` binds in this thread and returns when all is settled.
        """
        self._raise_failure()
        if not self.is_leader():
            return False
        if not wait and not self._slot_free(timeout):
            return True  # busy binding: the next call takes more
        with self._cond:
            ready_held = any(item["pod"] not in self._busy for item, _raw in self._held)
        first = (self.redis.lmove(self.key, self.processing, "LEFT", "RIGHT") if ready_held else
                 self.redis.blmove(self.key, self.processing, timeout, "LEFT", "RIGHT"))
        if first is None and not ready_held:
            self.recorder.tick()
            return False
        raws = [first] if first is not None else []
        while raws and len(raws) < MAX_JOBS:
            raw = self.redis.lmove(self.key, self.processing, "LEFT", "RIGHT")
            if raw is None:
                break
            raws.append(raw)
        jobs = [(raw, json.loads(raw)) for raw in raws]
        with self._cond:
            for raw, job in jobs:
                items = job["items"] if job.get("op") == "bind" else []
                self._open[raw] = self._open.get(raw, 0) + len(items)
                self._held.extend((item, raw) for item in items)
            batch = self._take_ready()
        for raw, job in jobs:
            if job.get("op") == "report":
                self._reports.put(job)
            elif job.get("op") == "preempt":
                self._preempt(job)
        self.jobs_done += len(raws)
        self._settle_jobs(raws)  # the reports and preemptions (jobs without bindings) are done with
        if batch:
            if wait:
                self._cycle(batch)
                self._raise_failure()
            else:
                self._start_cycle(batch)
        return True

    def _take_ready(self) -> list[tuple[dict, bytes]]:
        """The held items whose pod no cycle holds (under the lock), now held by the batch being made."""
        batch, still = [], []
        pods: set = set()
        for item, raw in self._held:
            if item["pod"] in self._busy:
                still.append((item, raw))
            else:
                batch.append((item, raw))  # the same pod twice in one batch: the binder picks the current one
                pods.add(item["pod"])
        self._held = still
        self._busy |= pods
        return batch

    def _slot_free(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._running < self.cycles or self._failure is not None, timeout)

    def _start_cycle(self, batch) -> None:
        with self._cond:
            self._running += 1
            if len(self._threads) < self.cycles:
                thread = threading.Thread(target=self._cycle_thread, name=f"bind-cycle-{len(self._threads)}", daemon=True)
                self._threads.append(thread)
                thread.start()
        self._work.put(batch)

    def _cycle_thread(self) -> None:
        try:
            while True:
                batch = self._work.get()
                if batch is None:
                    return
                try:
                    close_old_connections()  # one an outage broke is replaced, not reused
                    self._cycle(batch)
                finally:
                    with self._cond:
                        self._running -= 1
                        self._cond.notify_all()
        finally:
            connections.close_all()

    def _cycle(self, batch: list[tuple[dict, bytes]]) -> None:
        """One binding cycle: bind the batch; then its pods are free for the next, its jobs one step nearer done."""
        try:
            self._bind([item for item, _raw in batch])
        except BaseException as exc:  # noqa: BLE001 - the leader's loop raises it (a Postgres outage: recover())
            with self._cond:
                self._failure = self._failure or exc
        finally:
            with self._cond:
                self._busy -= {item["pod"] for item, _raw in batch}
                for _item, raw in batch:
                    self._open[raw] = self._open.get(raw, 1) - 1
                self._cond.notify_all()
            self._settle_jobs([raw for _item, raw in batch])

    def _settle_jobs(self, raws) -> None:
        """The jobs whose every binding is settled leave the processing list (once each)."""
        done = []
        with self._cond:
            if self._failure is not None:
                return  # recover() puts them back in the list: bound again, idempotent
            for raw in dict.fromkeys(raws):
                if self._open.get(raw) == 0:
                    del self._open[raw]
                    done.append(raw)
        for raw in done:
            self.redis.lrem(self.processing, 1, raw)

    def _raise_failure(self) -> None:
        with self._cond:
            failure = self._failure
        if failure is None:
            return
        self.drain()
        with self._cond:
            self._failure = None
        raise failure

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until no binding cycle is in flight."""
        with self._cond:
            return self._cond.wait_for(lambda: self._running == 0, timeout)

    def stop_cycles(self, timeout: float = 30.0) -> None:
        """Let the cycles in flight finish (each call is held to its deadline), then end their threads."""
        self.drain(timeout)
        for _ in self._threads:
            self._work.put(None)
        for thread in self._threads:
            thread.join(timeout)
        self._threads = []

    def _preempt(self, job: dict) -> None:
        """A preemption's victims deleted through the API (kube/preemption.py); an error leaves the job to the
        preemptor's next attempt, which preempts again."""
        from ..state.preemptions import preemption_done
        from .preemption import preempt_through_api

        try:
            deleted = preempt_through_api(self.core, self.recorder, job)
            if deleted:
                log.info("pod %s/%s preempted %s on node %s", job["preemptor"]["namespace"],
                         job["preemptor"]["name"], ", ".join(deleted), job["node"])
        except Exception:  # noqa: BLE001 - one preemption failing never stops the bindings
            log.exception("preemption by %s/%s failed", job["preemptor"]["namespace"], job["preemptor"]["name"])
        finally:
            preemption_done(job)  # the preemptor may be attempted again (a victim terminating keeps it ineligible)

    def _bind(self, items: list[dict], tries: int = 3) -> None:
        """The binder, again when Postgres breaks a deadlock by aborting it.

        The mirror's watch batches and this binder update the same pod rows in orders neither controls;
        Postgres then aborts one transaction. The whole batch rolled back, and binding again is
        idempotent (the API answers 409 for the same node, which counts as bound).
        """
        if self.bind is None:
            raise RuntimeError("this committer was given no binder: it cannot take binding jobs")
        for attempt in range(1, tries + 1):
            try:
                self.bind(items)
                return
            except OperationalError as exc:
                if not isinstance(exc.__cause__, DeadlockDetected) or attempt == tries:
                    raise
                log.warning("binding batch of %d hit a deadlock, binding again (%d/%d)", len(items), attempt, tries)
                time.sleep(0.05 * attempt)

    def submit_report(self, job: dict) -> None:
        """A report job from this process's own binder: to the events thread directly."""
        self._reports.put(job)

    def start_reporting(self) -> threading.Thread:
        """Events and conditions go out from their own thread, as the events broadcaster's: bindings never wait on them."""
        def run():
            try:
                while True:
                    job = self._reports.get()
                    if job is None:
                        return
                    try:
                        close_old_connections()  # one an outage broke is replaced, not reused for ever
                        self.report(job)
                    except Exception:  # noqa: BLE001 - best effort, as upstream's events
                        log.exception("could not report scheduling outcomes")
                    finally:
                        self._reports.task_done()
            finally:
                connections.close_all()

        self._reporter = threading.Thread(target=run, name="reporter", daemon=True)
        self._reporter.start()
        return self._reporter

    def stop_reporting(self, timeout: float = 10.0) -> None:
        if self._reporter is not None:
            self._reports.put(None)
            self._reporter.join(timeout)
            self._reporter = None

    def flush_reports(self) -> None:
        """Wait until every report taken so far went out (tests)."""
        if self._reporter is not None:
            self._reports.join()
        else:
            while not self._reports.empty():
                job = self._reports.get()
                if job is not None:
                    self.report(job)
                self._reports.task_done()

    def report(self, job: dict) -> None:
        """A job's events and conditions, pod by pod: one that cannot be reported does not hold back the others."""
        from ..models import Pod

        for f in job.get("failed") or ():
            try:
                ref = pod_reference(f["namespace"], f["name"], f["uid"], f.get("resourceVersion") or "")
                # As handleSchedulingFailure: the event, then the condition (only if it changed).
                self.recorder.eventf(ref, type="Warning", reason="FailedScheduling", action="Scheduling",
                                     note=f["message"], reporting_controller=f["scheduler"])
                if f.get("reason"):
                    row = (Pod.objects.filter(namespace=f["namespace"], name=f["name"], uid=f["uid"])
                           .only("manifest", "node_name", "binding_at").first())
                    if row is not None and (row.node_name or row.binding_at is not None):
                        # Placed since (bound, or its binding in flight): as the API dispatcher, where a pod's
                        # binding call overwrites its pending status patch, the older patch is not sent.
                        continue
                    current = row.manifest if row is not None and isinstance(row.manifest, dict) else {}
                    self.patch_condition(f["namespace"], f["name"], f["uid"], current, "False", f["reason"], f["message"],
                                         nominated=f.get("nominated"))
            except Exception:  # noqa: BLE001 - best effort, as upstream's events; the next pod's go on
                log.exception("could not report the scheduling failure of %s/%s", f.get("namespace"), f.get("name"))
        for s in job.get("scheduled") or ():
            try:
                ref = pod_reference(s["namespace"], s["name"], s["uid"], s.get("resourceVersion") or "")
                self.recorder.eventf(ref, type="Normal", reason="Scheduled", action="Binding",
                                     note=f"Successfully assigned {s['namespace']}/{s['name']} to {s['node']}",
                                     reporting_controller=s["scheduler"])
            except Exception:  # noqa: BLE001
                log.exception("could not report the binding of %s/%s", s.get("namespace"), s.get("name"))

    def patch_condition(self, namespace: str, name: str, uid: str, current: dict, status: str, reason: str,
                        message: str, *, nominated: str | None = None) -> bool:
        """As updatePod + UpdatePodCondition: patch pods/status when the condition changes, or when a preemption
        nominated the pod (`nominated`: the node, "" to clear): then the nomination goes in the same patch, as
        upstream's, so the API never holds the failure without the nomination made with it (an event showing
        one without the other would race the nominator)."""
        old = next((c for c in (current.get("status") or {}).get("conditions") or () if c.get("type") == "PodScheduled"), None)
        transition = _now()
        if old is not None and old.get("status") == status:
            transition = old.get("lastTransitionTime") or transition
            if (old.get("reason") == reason and old.get("message") == message and not old.get("lastProbeTime")
                    and nominated is None):
                return False
        condition = {"type": "PodScheduled", "status": status, "reason": reason, "message": message,
                     "lastProbeTime": None, "lastTransitionTime": transition}
        # The UID goes in as a precondition, as PatchPodStatus does.
        patch = {"metadata": {"uid": uid}, "status": {"conditions": [condition]}}
        if nominated is not None:
            patch["status"]["nominatedNodeName"] = nominated or None
        try:
            call(self.core.patch_namespaced_pod_status, name, namespace, patch,
                 _content_type=STRATEGIC_MERGE_PATCH, backoff=Backoff(attempts=4))
            return True
        except ApiError as exc:
            log.warning("could not update the PodScheduled condition of %s/%s: %s", namespace, name, exc)
            return False


class Controller:
    """One replica: elect, then mirror and commit while leading. `run()` blocks; `stop()` ends it.

    `bind` is the committer's binder (scheduler/replica.py gives it the loop's).
    """

    def __init__(self, *, bind: Callable[[list[dict]], object], api_client=None, namespace: str | None = None,
                 lease_name: str | None = None, identity: str | None = None, lease_duration: float | None = None,
                 renew_deadline: float | None = None, retry_period: float | None = None, redis=None,
                 watch_timeout: int | None = None, election_client=None, events_client=None):
        from django.conf import settings

        from ..queue.queues import get_redis
        from .client import LeanCoordinationV1, LeanCoreV1, api_client as make_api_client, own_namespace

        self.api_client = api_client or make_api_client()
        # As kube-scheduler's createClients: the Lease and the events have clients of their own, each with its
        # own SCHEDBOARD_KUBE_QPS/BURST bucket, so a renewal never waits behind the bindings' tokens.
        # (A caller that gives only `api_client` gets it used for all three.)
        election_client = election_client or api_client or make_api_client()
        events_client = events_client or api_client or make_api_client()
        self.redis = redis or get_redis()
        if self.redis is None:
            raise RuntimeError("SCHEDBOARD_BACKEND=kubernetes needs REDIS_URL")
        self.elector = LeaderElector(
            LeanCoordinationV1(election_client), namespace=namespace or own_namespace(),
            name=lease_name or settings.SCHEDBOARD_LEASE_NAME, identity=identity,
            lease_duration=lease_duration or settings.SCHEDBOARD_LEASE_DURATION,
            renew_deadline=renew_deadline or settings.SCHEDBOARD_RENEW_DEADLINE,
            retry_period=retry_period or settings.SCHEDBOARD_RETRY_PERIOD)
        self.recorder = EventRecorder(HotCalls(events_client))  # one event per pod: the lean path
        core = LeanCoreV1(self.api_client)
        self.committer = Committer(core, self.recorder, self.redis, bind=bind, is_leader=self.elector.is_leader)
        self.stopping = threading.Event()
        self.nodes = Reflector("nodes", core.list_node, NodeStore(), kind="Node", stop=self.stopping,
                               watch_timeout=watch_timeout)
        # The pods' list is fetched while the nodes and objects are mirrored, and stored once they are.
        self.counted_against = threading.Event()
        self.pods = Reflector("pods", core.list_pod_for_all_namespaces, PodStore(), kind="Pod",
                              field_selector=POD_FIELD_SELECTOR, stop=self.stopping, watch_timeout=watch_timeout,
                              store_after=self.counted_against)
        # Namespaces, Services and controllers: what pod (anti-)affinity and default spreading read.
        self.objects = object_reflectors(self.api_client, stop=self.stopping, watch_timeout=watch_timeout)
        self.threads: list[threading.Thread] = []
        self.leading = threading.Event()
        self.lost = False  # the lease was lost (not given up)

    @property
    def identity(self) -> str:
        return self.elector.identity

    def run(self) -> None:
        if not self.elector.acquire():
            return
        try:
            # The committer starts once the nodes and objects are stored, while the pod list still is: the list's
            # pending pods are queued batch by batch as they are stored (PodStore._replace), the workers' first
            # placements come back to be bound meanwhile, and the pods that hold room were stored first.
            self.start_leading(wait_for_pods=False)
            failures = 0
            while not self.stopping.is_set() and self.elector.is_leader():
                try:
                    self.committer.run_once(wait=False)
                    failures = 0
                except (OperationalError, InterfaceError) as exc:
                    # Postgres restarting or unreachable: the leader stays the leader. The jobs it took
                    # go back to the head of the list (binding again is idempotent) and it tries again
                    # on a fresh connection, rather than exiting and costing a lease's worth of failover.
                    failures += 1
                    log.warning("%s: the database is unavailable (%s); binding resumes when it is back",
                                self.identity, exc)
                    close_old_connections()
                    self.committer.recover()
                    self.stopping.wait(min(5.0, 0.2 * 2 ** min(failures, 5)))
        finally:
            self.stop_leading()

    def start_leading(self, *, wait_for_pods: bool = True) -> None:
        """What the lease holder runs besides the committer: renewal and the watches. Returns once the nodes and
        objects are stored, and (`wait_for_pods`) the pods too; otherwise a thread waits for them."""
        log.info("%s: started leading", self.identity)
        self.leading.set()
        self.committer.recover()
        self.committer.start_reporting()
        started = time.monotonic()
        # Every list is requested at once (the lists are the API server's and the network's time), but stored
        # nodes and objects before pods, so that pods arriving bound find their node to count against and
        # pods arriving with affinity find their namespaces.
        self.threads += [self._thread("lease-renew", self._renew), self._thread("reflector-nodes", self.nodes.run),
                         *(self._thread(f"reflector-{r.name}", r.run) for r in self.objects),
                         self._thread("reflector-pods", self.pods.run)]
        for reflector in (self.nodes, *self.objects):
            self._wait_synced(reflector)
        self.counted_against.set()
        log.info("%s: nodes and cluster objects stored in %.2f s (%d lists); storing the pods", self.identity,
                 time.monotonic() - started, 1 + len(self.objects))
        if wait_for_pods:
            self._pods_synced(started)
        else:
            self.threads.append(self._thread("pods-synced", lambda: self._pods_synced(started)))

    def _pods_synced(self, started: float) -> None:
        self._wait_synced(self.pods)
        if self.stopping.is_set():
            return
        self.threads.append(self._thread("pods-mirror-currency", self._claim_currency))
        # As kube-scheduler's "Caches are synced": how long a new leader took to mirror the whole cluster.
        log.info("%s: caches synced in %.2f s (%d lists)", self.identity, time.monotonic() - started,
                 2 + len(self.objects))

    def _claim_currency(self) -> None:
        """Tell the reconcilers, every second, up to when the pod mirror is complete (kube/currency.py)."""
        while not self.stopping.wait(1.0):
            through = self.pods.current_through(time.time())
            if through is not None and self.leading.is_set():
                currency.claim(self.redis, through)

    def _wait_synced(self, reflector: Reflector) -> None:
        while not reflector.synced.wait(0.1) and not self.stopping.is_set():
            pass

    def stop_leading(self) -> None:
        lost = not self.stopping.is_set()
        self.lost = lost
        self.leading.clear()
        self.stopping.set()
        try:
            currency.withdraw(self.redis)
        except Exception:  # noqa: BLE001 - the claim expires on its own in seconds
            log.warning("%s: could not withdraw the pod mirror's currency claim", self.identity)
        self.nodes.close()
        self.pods.close()
        for reflector in self.objects:
            reflector.close()
        self.elector.stop.set()
        self.committer.stop_cycles()
        for thread in self.threads:
            thread.join(timeout=10)
        self.committer.stop_reporting()
        if not lost:
            self.elector.release()
        connections.close_all()
        log.info("%s: stopped leading%s", self.identity, " (lease lost)" if lost else "")

    def _renew(self) -> None:
        self.elector.renew()

    def _thread(self, name: str, target) -> threading.Thread:
        def run():
            try:
                target()
            except Exception:  # noqa: BLE001
                log.exception("%s crashed", name)
                self.stopping.set()
            finally:
                connections.close_all()

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self.stopping.set()
        self.elector.stop.set()
        self.nodes.close()
        self.pods.close()
        for reflector in self.objects:
            reflector.close()
