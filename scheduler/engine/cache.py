"""The scheduler cache over a NodeTable: assume, finish_binding, forget, expire (as backend/cache).

A pod is counted against its node from the moment it is assumed, so the next cycle already
sees the room it took; a binding that fails, or never finishes, gives the room back.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from .nodes import NodeTable
from .pods import PodSpec

DEFAULT_ASSUMED_POD_TTL = 30.0  # seconds an assumed pod may wait for its binding before it expires


@dataclass
class AssumedPod:
    pod: PodSpec
    row: int
    deadline: float | None = None  # set by finish_binding; None while binding is in progress


class Cache:
    def __init__(self, table: NodeTable, *, ttl: float = DEFAULT_ASSUMED_POD_TTL, clock: Callable[[], float] = time.monotonic):
        self.table = table
        self.ttl = ttl
        self.clock = clock
        self.assumed: dict[str, AssumedPod] = {}

    def assume(self, pod: PodSpec, row: int) -> None:
        key = pod.key
        if key in self.assumed:
            raise ValueError(f"pod {key} is already assumed")
        self.table.add_pod(row, pod)
        self.assumed[key] = AssumedPod(pod, row)

    def finish_binding(self, key: str) -> None:
        """The binding was sent: start the expiry clock."""
        if key in self.assumed:
            self.assumed[key].deadline = self.clock() + self.ttl

    def confirm(self, key: str) -> None:
        """The binding is observed: the pod stays counted, but is no longer merely assumed."""
        self.assumed.pop(key, None)

    def forget(self, key: str) -> None:
        """Undo assume (binding failed or was abandoned)."""
        entry = self.assumed.pop(key, None)
        if entry is not None:
            self.table.remove_pod(entry.row, entry.pod)

    def cleanup_expired(self) -> list[str]:
        now = self.clock()
        expired = [k for k, a in self.assumed.items() if a.deadline is not None and a.deadline < now]
        for key in expired:
            self.forget(key)
        return expired

    def node_name(self, key: str) -> str | None:
        entry = self.assumed.get(key)
        return self.table.names[entry.row] if entry else None
