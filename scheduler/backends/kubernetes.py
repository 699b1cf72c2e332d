"""A real cluster through the official client: bindings to pods/binding, events and conditions to the API.

Any worker process schedules (against the Postgres mirror of the cluster); only the process that
holds the Lease talks to the API server. Workers hand placed pods and scheduling failures to it
through a Redis list (`<queue prefix>:kube:jobs`, kube/jobs.py); the leader's committer
(scheduler/kube/controller.py, given the loop's binder by scheduler/replica.py) binds them and records the
events and PodScheduled conditions.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ..kube import currency
# (Imported once here, not at every binding: a function's own import statement was 7 % of a binding's CPU.)
from ..kube.client import AMBIGUOUS_STATUS, BIND_PARALLELISM, ApiError, HotCalls, LeanCoreV1, call
from ..kube.jobs import jobs_key
from .bind_item import BindItem, to_wire
from .errors import BindError, BindOutcomeUnknown, BoundElsewhere, PodGone

log = logging.getLogger(__name__)



def _pod_ref(pod) -> dict:
    manifest = pod.manifest if isinstance(pod.manifest, dict) else {}
    meta = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    version = meta.get("resourceVersion")
    return {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid,
            "resourceVersion": version if isinstance(version, str) else "", "scheduler": pod.scheduler_name}


class KubernetesBackend:
    name = "kubernetes"
    # The API server's watch also tells us a pod is bound (ours or anyone's); the mirror may get there first.
    mirrors_bindings = True

    def __init__(self, *, api_client=None, elector=None, redis=None, backoff=None, report_sink=None):
        self._api_client = api_client
        # In the leader itself (scheduler/replica.py): its binder's reports go straight to its events thread,
        # not through Redis and back (a worker's still go through the jobs list).
        self.report_sink = report_sink
        self.elector = elector
        self._redis = redis
        self.backoff = backoff
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._hot = None
        self._core = None

    # ---- worker side: hand work to the leader ---------------------------------------------------
    @property
    def redis(self):
        if self._redis is None:
            from ..queue.queues import get_redis

            self._redis = get_redis()
            if self._redis is None:
                raise RuntimeError("SCHEDBOARD_BACKEND=kubernetes needs REDIS_URL (workers hand bindings to the leader)")
        return self._redis

    def hand_off(self, items: list[BindItem]) -> None:
        self.redis.rpush(jobs_key(), json.dumps({"op": "bind", "items": to_wire(items)}))

    def mirror_current_through(self) -> float | None:
        return currency.current_through(self.redis)

    def report(self, *, failed: list, scheduled: list) -> None:
        """failed: (Pod row, condition reason or None for an event only, message[, nominated node: "" clears it]);
        scheduled: (Pod row, node)."""
        if not failed and not scheduled:
            return
        job = {"op": "report",
               "failed": [{**_pod_ref(pod), "reason": reason, "message": message,
                           **({"nominated": rest[0]} if rest and rest[0] is not None else {})}
                          for pod, reason, message, *rest in failed],
               "scheduled": [{**_pod_ref(pod), "node": node} for pod, node in scheduled]}
        if self.report_sink is not None:
            self.report_sink(job)
            return
        self.redis.rpush(jobs_key(), json.dumps(job))

    def preempt(self, job: dict) -> None:
        """Only the lease holder talks to the API: the victims go to it with the other jobs (None: deferred)."""
        self.redis.rpush(jobs_key(), json.dumps({"op": "preempt", **job}))

    # ---- leader side: the API calls ---------------------------------------------------------------
    @property
    def api_client(self):
        if self._api_client is None:
            from ..kube.client import api_client

            self._api_client = api_client()
        return self._api_client

    @property
    def hot(self):
        """The per-pod calls without the generated client's layers (kube/client.py)."""
        if self._hot is None or self._hot.api_client is not self.api_client:
            self._hot = HotCalls(self.api_client)
        return self._hot

    @property
    def core(self):
        if self._core is None or self._core.api_client is not self.api_client:  # made once: bind() asks per pod
            self._core = LeanCoreV1(self.api_client)
        return self._core

    def _check_leader(self) -> None:
        if self.elector is not None and not self.elector.is_leader():
            raise BindError("not the leader: the lease is held by another replica (or could not be renewed)")

    def bind(self, *, pod_manifest: dict, node_name: str, attempt_number: int = 0, previous_bind_failures: int = 0,
             deadline: float | None = None) -> None:
        """POST pods/{name}/binding (with the pod's UID, as DefaultBinder); interpret 409 and 404.

        The pods/binding subresource, as kube-scheduler's `Pods(ns).Bind`: it is what the ClusterRole
        grants. (The client's create_namespaced_binding posts to the namespace's `bindings` resource,
        a different permission.) `deadline` (time.monotonic()): nothing is sent after it, so the
        reconciler can free the reservation after the binding timeout knowing no binding is on its way.
        """
        if deadline is not None and time.monotonic() >= deadline:
            raise BindError("not sent: the binding waited past its deadline; the reservation is given back")
        self._check_leader()
        meta = pod_manifest.get("metadata") or {}
        namespace, name, uid = meta.get("namespace") or "default", meta.get("name"), meta.get("uid")
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
        core = self.core
        kwargs = {"backoff": self.backoff} if self.backoff else {}
        unsettled: ApiError | None = None  # the last answer that left open whether the binding happened
        conflict: ApiError | None = None
        while True:
            try:
                # Only the binding itself is held to the deadline (a read sends nothing).
                call(self.hot.create_namespaced_pod_binding, name, namespace, body, deadline=deadline, decode=False,
                     **kwargs)
                return
            except ApiError as exc:
                if exc.status == 404:
                    raise PodGone(f"pod {namespace}/{name} not found") from exc
                if exc.status in AMBIGUOUS_STATUS and exc.reason != "DeadlineExceeded":
                    unsettled = exc
                elif exc.status == 409:
                    conflict = exc
                else:
                    if unsettled is not None:  # an earlier try may have bound it: never give the room back
                        raise BindOutcomeUnknown(f"{unsettled}; then {exc}") from exc
                    raise BindError(str(exc)) from exc
            # 409 (already bound, or a new pod under the same name), or no telling whether our binding
            # happened: read the pod to learn where it is.
            try:
                current = call(core.read_namespaced_pod, name, namespace, **kwargs)
            except ApiError as exc:
                if exc.status == 404:
                    raise PodGone(f"pod {namespace}/{name} not found") from exc
                current = None
                unsettled = unsettled or exc
            if current is not None:
                if uid and (current.get("metadata") or {}).get("uid") != uid:
                    raise PodGone(f"pod {namespace}/{name} was replaced (uid {uid} is gone)")
                bound_to = (current.get("spec") or {}).get("nodeName") or ""
                if bound_to == node_name:
                    return  # our own binding, whichever try of it landed: success
                if bound_to:
                    raise BoundElsewhere(bound_to)
                if unsettled is None:
                    raise BindError(str(conflict))
            # Not bound yet (or not known): bind again while the deadline allows; past it, keep the room.
            if deadline is None or time.monotonic() >= deadline:
                if unsettled is None:
                    raise BindError("the binding was not settled")
                raise BindOutcomeUnknown(f"no answer settled whether the binding happened: {unsettled}")
            if self.elector is not None and not self.elector.is_leader():
                # The next leader binds this job again (idempotent); meanwhile the room stays taken.
                raise BindOutcomeUnknown(f"lost the lease while the binding was unsettled: {unsettled or conflict}")
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))

    def counts_bind_failures(self, pod_manifest: dict) -> bool:
        return False  # the API server decides; no failure is injected here

    def bind_many(self, requests: list[dict]) -> list[tuple[BaseException | None, float]]:
        """Bind in parallel (each request: bind()'s keyword arguments): (None or the error, seconds) each."""
        with self._pool_lock:  # the leader's binding cycles run in parallel (kube/controller.py): one pool
            if self._pool is None:
                self._pool = ThreadPoolExecutor(BIND_PARALLELISM, thread_name_prefix="bind")

        def one(request):
            started = time.perf_counter()
            try:
                self.bind(**request)
                return None, time.perf_counter() - started
            except Exception as exc:  # noqa: BLE001 - a BindError, or a bug: this pod's failure, not the batch's
                return exc, time.perf_counter() - started

        return list(self._pool.map(one, requests))
