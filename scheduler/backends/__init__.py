"""Where pods and nodes come from and where bindings go: SCHEDBOARD_BACKEND picks one per process."""

from __future__ import annotations

import threading
from typing import Protocol

from .bind_item import BindItem


class Backend(Protocol):
    """What the loop asks of a backend (simulated.py, kubernetes.py, and the tests' doubles)."""

    name: str
    # True when the cluster's watch marks pods bound itself, so a binder may find its binding already recorded.
    mirrors_bindings: bool

    def bind_many(self, requests: list[dict]) -> list[tuple[BaseException | None, float]]:
        """Bind each request (pod_manifest, node_name, attempt_number, previous_bind_failures, deadline): per
        request, None or the error that refused it (that pod's failure alone), and the seconds it took."""
        ...

    def counts_bind_failures(self, pod_manifest: dict) -> bool:
        """Whether binding this pod needs its previous_bind_failures (a count the loop reads from the audit)."""
        ...

    def hand_off(self, items: list[BindItem]) -> None:
        """Placed pods, to be bound by whichever process binds for this backend."""
        ...

    def mirror_current_through(self) -> float | None:
        """For a backend that mirrors bindings: the epoch time up to which the mirror holds every binding the
        cluster accepted (None: nobody can say now). The reconciler frees a binding mark only behind it."""
        ...

    def report(self, *, failed: list, scheduled: list) -> None:
        """Tell the cluster what the batch decided (events, conditions), if it keeps its own."""
        ...

    def preempt(self, job: dict) -> list[str] | None:
        """Evict a preemption's victims (state/nominations.preemption_job): the keys evicted now, or None when
        the eviction was handed on (to the kubernetes backend's leader). Idempotent."""
        ...


_lock = threading.Lock()
_backend: Backend | None = None


def get_backend() -> Backend:
    global _backend
    with _lock:
        if _backend is None:
            from django.conf import settings

            if settings.SCHEDBOARD_BACKEND == "kubernetes":
                from .kubernetes import KubernetesBackend

                _backend = KubernetesBackend()
            else:
                from .simulated import SimulatedBackend

                _backend = SimulatedBackend()
        return _backend


def set_backend(backend: Backend | None) -> None:
    """Use this backend in this process (the controller installs its API-connected one; tests too)."""
    global _backend
    with _lock:
        _backend = backend


def reset_backend() -> None:
    set_backend(None)
