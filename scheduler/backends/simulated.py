"""The built-in simulated cluster: nodes and pods are database rows; binding always succeeds,
except where a pod asks for injected failures (for fault tests and demos)."""

from __future__ import annotations

import time

from .. import dispatch
from .bind_item import BindItem, to_wire
from .errors import BindError

__all__ = ["BindError", "FAIL_BINDS_ANNOTATION", "SimulatedBackend"]

# A pod annotated with this fails its first N binding attempts, like an API server that said no.
FAIL_BINDS_ANNOTATION = "schedboard.io/fail-binds"


class SimulatedBackend:
    name = "simulated"
    # The database rows are the cluster: nothing else ever marks a pod bound.
    mirrors_bindings = False

    def bind(self, *, pod_manifest: dict, node_name: str, attempt_number: int, previous_bind_failures: int) -> None:
        """Raise BindError to refuse the binding; return to accept it."""
        annotations = (pod_manifest.get("metadata") or {}).get("annotations") or {}
        if not isinstance(annotations, dict):
            # As the API server would: an object it cannot read is refused (apply refuses it first).
            raise BindError(f"metadata.annotations: must be a map of string to string, got {type(annotations).__name__}")
        try:
            failures_wanted = int(annotations.get(FAIL_BINDS_ANNOTATION, "0"))
        except ValueError:
            failures_wanted = 0
        if previous_bind_failures < failures_wanted:
            raise BindError(f"injected binding failure {previous_bind_failures + 1} of {failures_wanted}")

    def mirror_current_through(self) -> None:
        return None  # no mirror: the reconciler frees a dead worker's reservation by the assume TTL alone

    def bind_many(self, requests: list[dict]) -> list[tuple[BaseException | None, float]]:
        """One after the other (each binding is a row update, no call to wait on), each before its deadline."""
        answered: list[tuple[BaseException | None, float]] = []
        for request in requests:
            request = dict(request)
            deadline = request.pop("deadline", None)
            t0 = time.perf_counter()
            try:
                if deadline is not None and time.monotonic() > deadline:
                    raise BindError("the binding was not sent before its deadline; the reservation is given back")
                self.bind(**request)
                answered.append((None, time.perf_counter() - t0))
            except Exception as exc:  # noqa: BLE001 - BindError, or this pod's own bug: its failure only
                answered.append((exc, time.perf_counter() - t0))
        return answered

    def counts_bind_failures(self, pod_manifest: dict) -> bool:
        """Only a pod that asks for injected failures needs its count of failed bindings."""
        annotations = (pod_manifest.get("metadata") or {}).get("annotations") or {}
        return isinstance(annotations, dict) and FAIL_BINDS_ANNOTATION in annotations  # bind() says what is wrong

    def hand_off(self, items: list[BindItem]) -> None:
        """Placed pods go to the bind task (any worker)."""
        dispatch.send(dispatch.BIND, to_wire(items))

    def preempt(self, job: dict) -> list[str]:
        """Evict the victims of a preemption (the rows are the cluster): the keys evicted now."""
        from ..cluster.preemption import preempt_victims

        return preempt_victims(job)

    def report(self, *, failed: list, scheduled: list) -> None:
        """Nothing to tell: the events and conditions are already the rows the loop wrote."""
