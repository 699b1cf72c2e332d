"""One scheduling cycle for one pod, read top to bottom like kube-scheduler's scheduleOne().

    pop (the caller) -> skip a deleting pod -> schedulePod (filter, score, select host)
    -> assume in the cache -> reserve on the node (a conditional write shared by every
    worker) -> hand to the binder (asynchronous).

The cluster side (reserve, bind, record) is a port, so the same cycle runs against the
database in a worker, against a plain in-memory cluster in the benchmark, and in tests.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from .cache import Cache
from .framework import Algorithm, Decision, Profile
from .pods import PodSpec

SCHEDULED, UNSCHEDULABLE, ERROR, SKIPPED = "scheduled", "unschedulable", "error", "skipped"

# How often one pod may lose the reservation race in one cycle before it is requeued (Omega-style retry).
MAX_RESERVE_CONFLICTS = 3


class Cluster(Protocol):
    def reserve(self, pod: PodSpec, node_name: str) -> bool:
        """Take the pod's requests on the node, atomically for every worker; False on a lost race."""
        ...

    def refresh_node(self, cache: Cache, node_name: str) -> None:
        """Reload one node's usage into the cache after a lost race."""
        ...


@dataclass
class CycleResult:
    pod: PodSpec
    status: str
    decision: Decision | None = None
    node_name: str | None = None
    message: str = ""
    algorithm_seconds: float = 0.0
    conflicts: int = 0
    cycle_seconds: float = 0.0  # set by the caller: the whole cycle including the reservation


def schedule_one(pod: PodSpec, *, profile: Profile, algorithm: Algorithm, cache: Cache, cluster: Cluster) -> CycleResult:
    # skipPodSchedule: a pod already being deleted is not scheduled.
    if pod.deleting:
        return CycleResult(pod, SKIPPED, message=f"skip schedule deleting pod: {pod.namespace}/{pod.name}")

    conflicts = 0
    elapsed = 0.0
    while True:
        started = time.perf_counter()
        decision = algorithm.schedule(profile, pod, cache.table)
        elapsed += time.perf_counter() - started
        if decision.error:
            return CycleResult(pod, ERROR, decision, message=decision.error, algorithm_seconds=elapsed, conflicts=conflicts)
        if not decision.scheduled:
            return CycleResult(pod, UNSCHEDULABLE, decision, message=decision.fit_error_message(),
                               algorithm_seconds=elapsed, conflicts=conflicts)

        node_name = cache.table.names[decision.selected_row]
        # assume: the next cycle must see this pod's requests on the node already.
        cache.assume(pod, decision.selected_row)
        # Reserve: the shared, conditional write. Losing it means another worker took the
        # room first: forget, look at the node again, and run the algorithm again.
        if cluster.reserve(pod, node_name):
            return CycleResult(pod, SCHEDULED, decision, node_name=node_name, algorithm_seconds=elapsed, conflicts=conflicts)
        cache.forget(pod.key)
        cluster.refresh_node(cache, node_name)
        conflicts += 1
        if conflicts >= MAX_RESERVE_CONFLICTS:
            return CycleResult(pod, ERROR, decision, message=f"lost the reservation race {conflicts} times",
                               algorithm_seconds=elapsed, conflicts=conflicts)
