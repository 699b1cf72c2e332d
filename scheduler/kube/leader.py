"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection package.

tryAcquireOrRenew: read the Lease (create it if missing); if another holder's record has not
expired — judged by when *we* last saw it change, plus its leaseDurationSeconds, never by the
holder's clock — give up for now; else write ourselves as holder (optimistic concurrency on the
resourceVersion). A leader renews every retryPeriod; if it cannot renew within renewDeadline it is
no longer the leader, and `is_leader()` turns false at once.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from datetime import datetime, timezone

from .client import ApiError, Backoff, call
from .events import micro_time

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2  # as leaderelection.JitterFactor
# kube-scheduler's defaults (LeaderElectionConfiguration).
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 15.0, 10.0, 2.0


def default_identity() -> str:
    """As kube-scheduler: the hostname and a unique suffix, so two processes on one host differ."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def validate_timings(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """NewLeaderElector's checks, with its messages."""
    if lease_duration <= renew_deadline:
        raise ValueError("leaseDuration must be greater than renewDeadline")
    if renew_deadline <= JITTER_FACTOR * retry_period:
        raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
    if lease_duration < 1:
        raise ValueError("leaseDuration must be greater than zero")
    if retry_period < 0.001:
        raise ValueError("retryPeriod must be greater than zero")


class LeaderElector:
    def __init__(self, coordination_api, *, namespace: str, name: str, identity: str | None = None,
                 lease_duration: float = LEASE_DURATION, renew_deadline: float = RENEW_DEADLINE,
                 retry_period: float = RETRY_PERIOD, monotonic=time.monotonic,
                 wall=lambda: datetime.now(timezone.utc)):
        validate_timings(lease_duration, renew_deadline, retry_period)
        self.api = coordination_api
        self.namespace = namespace
        self.name = name
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.monotonic = monotonic
        self.wall = wall
        self.observed: dict = {}  # the Lease spec as last read or written
        self.observed_at: float | None = None  # monotonic time we saw it change
        self._observed_version = ""
        self._last_renewed: float | None = None  # monotonic time of our last successful write as holder
        self._leading = False
        self.stop = threading.Event()
        self._backoff = Backoff(initial=0.1, cap=1.0, attempts=1)  # one try: the loop itself retries

    # ---- state --------------------------------------------------------------------------------
    def is_leader(self) -> bool:
        """True while we hold the lease and renewed it within renewDeadline (checked at every call)."""
        if not self._leading or self._last_renewed is None:
            return False
        return self.monotonic() - self._last_renewed < self.renew_deadline

    def holder(self) -> str:
        return self.observed.get("holderIdentity") or ""

    def _lease_valid(self, now: float) -> bool:
        duration = self.observed.get("leaseDurationSeconds") or 0
        return self.observed_at is not None and self.observed_at + duration > now

    # ---- one attempt -----------------------------------------------------------------------------
    def try_acquire_or_renew(self) -> bool:
        now_wall, now = self.wall(), self.monotonic()
        record = {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.lease_duration),
                  "acquireTime": micro_time(now_wall), "renewTime": micro_time(now_wall)}
        try:
            lease = call(self.api.read_namespaced_lease, self.name, self.namespace, backoff=self._backoff)
        except ApiError as exc:
            if exc.status != 404:
                log.warning("error retrieving lease %s/%s: %s", self.namespace, self.name, exc)
                return False
            record["leaseTransitions"] = 0
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace}, "spec": record}
            try:
                created = call(self.api.create_namespaced_lease, self.namespace, body, backoff=self._backoff)
            except ApiError as create_error:
                log.info("error creating lease %s/%s: %s", self.namespace, self.name, create_error)
                return False
            self._observe(created, now)
            return self._became_holder(now)
        spec = lease.get("spec") or {}
        version = (lease.get("metadata") or {}).get("resourceVersion") or ""
        if version != self._observed_version:
            self.observed, self.observed_at, self._observed_version = dict(spec), now, version
        if spec.get("holderIdentity") and self._lease_valid(now) and spec.get("holderIdentity") != self.identity:
            self._leading = False
            return False  # held by another, not yet expired
        if spec.get("holderIdentity") == self.identity:
            record["acquireTime"] = spec.get("acquireTime") or record["acquireTime"]
            record["leaseTransitions"] = spec.get("leaseTransitions") or 0
        else:
            record["leaseTransitions"] = (spec.get("leaseTransitions") or 0) + 1
        lease["spec"] = record
        try:
            updated = call(self.api.replace_namespaced_lease, self.name, self.namespace, lease, backoff=self._backoff)
        except ApiError as exc:
            log.info("failed to update lease %s/%s: %s", self.namespace, self.name, exc)
            return False
        self._observe(updated, now)
        return self._became_holder(now)

    def _observe(self, lease: dict, now: float) -> None:
        self.observed = dict(lease.get("spec") or {})
        self.observed_at = now
        self._observed_version = (lease.get("metadata") or {}).get("resourceVersion") or ""

    def _became_holder(self, now: float) -> bool:
        self._last_renewed = now
        self._leading = True
        return True

    # ---- the loops ---------------------------------------------------------------------------
    def acquire(self) -> bool:
        """Try every retryPeriod (jittered) until we hold the lease or are stopped."""
        import random

        while not self.stop.is_set():
            if self.try_acquire_or_renew():
                log.info("successfully acquired lease %s/%s as %s", self.namespace, self.name, self.identity)
                return True
            self.stop.wait(self.retry_period * (1.0 + (JITTER_FACTOR - 1.0) * random.random()))
        return False

    def renew(self) -> None:
        """Renew every retryPeriod; return when a renewal could not be made within renewDeadline."""
        while not self.stop.is_set():
            deadline = self.monotonic() + self.renew_deadline
            renewed = False
            while not self.stop.is_set() and self.monotonic() < deadline:
                if self.try_acquire_or_renew():
                    renewed = True
                    break
                if self.holder() and self.holder() != self.identity:
                    break  # someone else holds it now
                self.stop.wait(self.retry_period)
            if not renewed:
                self._leading = False
                log.info("failed to renew lease %s/%s: lost leadership", self.namespace, self.name)
                return
            self.stop.wait(self.retry_period)

    def release(self) -> bool:
        """Give the lease up (ReleaseOnCancel): the next replica need not wait for it to expire."""
        if not self._leading:
            return False
        self._leading = False
        try:
            lease = call(self.api.read_namespaced_lease, self.name, self.namespace, backoff=self._backoff)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return False
            now = micro_time(self.wall())
            lease["spec"] = {"leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now,
                             "leaseTransitions": spec.get("leaseTransitions") or 0}
            call(self.api.replace_namespaced_lease, self.name, self.namespace, lease, backoff=self._backoff)
            return True
        except ApiError as exc:
            log.warning("failed to release lease %s/%s: %s", self.namespace, self.name, exc)
            return False
