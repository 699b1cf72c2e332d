"""Where pods and nodes come from and where bindings go: SCHEDBOARD_BACKEND picks one per process."""

from __future__ import annotations

import threading

_lock = threading.Lock()
_backend = None


def get_backend():
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


def set_backend(backend) -> None:
    """Use this backend in this process (the controller installs its API-connected one; tests too)."""
    global _backend
    with _lock:
        _backend = backend


def reset_backend() -> None:
    set_backend(None)
