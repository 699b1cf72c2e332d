"""One scheduling cycle, read top to bottom like kube-scheduler's scheduleOne(), and the batch
around it that reserves placements in the shared state.

    schedule_one:   skip a deleting pod -> schedulePod (filter, score, select host) -> assume;
                    a pod that fits nowhere -> PostFilter (preemption: nominate a node, name victims)
    schedule_batch: schedule_one for each popped pod -> reserve every placement at once on the
                    shared state (one round trip, compare-and-set per node) -> for a lost race:
                    forget, look at those nodes again, run the pod again (Omega-style)
    (then the caller hands the reserved placements to the binder, asynchronously)

The cluster side is a port, so the same cycle runs against Postgres in a worker, against a
plain in-memory cluster in tests and the benchmark.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from .cache import Cache
from .framework import Algorithm, Decision, Handle, Profile, run_post_filter_plugins
from .pods import PodSpec

SCHEDULED, UNSCHEDULABLE, ERROR, SKIPPED, GONE = "scheduled", "unschedulable", "error", "skipped", "gone"

# How often one pod may lose the reservation race in one batch before it goes back to the queue.
MAX_RESERVE_CONFLICTS = 3


@dataclass
class CycleResult:
    pod: PodSpec
    status: str
    decision: Decision | None = None
    node_name: str | None = None
    message: str = ""
    algorithm_seconds: float = 0.0
    conflicts: int = 0
    cycle_seconds: float = 0.0  # the whole cycle, including this pod's share of the reservation
    # The PostFilter's nomination for an unschedulable pod (upstream's NominatingInfo): None leaves
    # status.nominatedNodeName as it is, "" clears it, a name sets it; `victims` are the pods to evict
    # for it (the caller marks them DisruptionTarget, posts "Preempted" and deletes them).
    nominated_node: str | None = None
    victims: tuple[PodSpec, ...] = ()
    # Pods of lower priority nominated to that node: their nomination is cleared (status too).
    cleared_nominations: tuple[PodSpec, ...] = ()


@dataclass
class ReserveOutcome:
    conflicts: set[str]  # pod keys whose node had no room any more (another worker took it)
    gone: set[str]  # pod keys that were deleted or placed elsewhere meanwhile
    errors: dict[str, str] = field(default_factory=dict)  # pod key -> why its reservation failed (that pod only)


class Cluster(Protocol):
    def reserve_many(self, placements: list[tuple[PodSpec, str]]) -> ReserveOutcome:
        """Take each pod's requests on its node, atomically against every other worker."""
        ...

    def refresh_nodes(self, cache: Cache, node_names: set[str]) -> None:
        """Reload these nodes' usage into the cache after a lost race."""
        ...


def schedule_one(pod: PodSpec, *, profile: Profile, algorithm: Algorithm, cache: Cache) -> CycleResult:
    # skipPodSchedule: a pod already being deleted is not scheduled.
    if pod.deleting:
        return CycleResult(pod, SKIPPED, message=f"skip schedule deleting pod: {pod.namespace}/{pod.name}")

    started = time.perf_counter()
    decision = algorithm.schedule(profile, pod, cache.table)
    elapsed = time.perf_counter() - started
    if decision.error:
        return CycleResult(pod, ERROR, decision, message=decision.error, algorithm_seconds=elapsed)
    if not decision.scheduled:
        # The pod fits nowhere: PostFilter may make room for a later cycle (preemption).
        nominated, victims, cleared = None, (), ()
        # (As upstream, only for a FitError: with no nodes at all there is nothing to preempt.)
        if profile.post_filters and decision.num_all_nodes:
            result = run_post_filter_plugins(Handle(profile, algorithm.nominator), pod, cache.table, decision)
            decision.post_filter = result
            nominated, victims = result.nominated_node, result.victims
            cleared = getattr(result.detail, "lower_priority_nominated", ())
            elapsed = time.perf_counter() - started
        if algorithm.nominator is not None:
            for other in cleared:
                algorithm.nominator.delete(other)
            # As handleSchedulingFailure: the nominator keeps the pod on its (new) nominated node.
            algorithm.nominator.add(pod, nominated)
        return CycleResult(pod, UNSCHEDULABLE, decision, message=decision.fit_error_message(), algorithm_seconds=elapsed,
                           nominated_node=nominated, victims=victims, cleared_nominations=cleared)

    # assume: the next cycle must already see this pod's requests on the node; a nominated pod
    # is no longer only nominated.
    cache.assume(pod, decision.selected_row)
    if algorithm.nominator is not None:
        algorithm.nominator.delete(pod)
    return CycleResult(pod, SCHEDULED, decision, node_name=cache.table.names[decision.selected_row],
                       algorithm_seconds=elapsed)


def schedule_batch(pods: list[tuple[PodSpec, Profile]], *, algorithm: Algorithm, cache: Cache,
                   cluster: Cluster) -> list[CycleResult]:
    """Schedule pods in order, then reserve all placements; retry the ones that lost a race."""
    results: dict[str, CycleResult] = {}
    profiles = {pod.key: profile for pod, profile in pods}
    for pod, profile in pods:
        started = time.perf_counter()
        results[pod.key] = _isolated(pod, profile, algorithm, cache)
        results[pod.key].cycle_seconds = time.perf_counter() - started

    pending = [r for r in results.values() if r.status == SCHEDULED]
    for round_ in range(MAX_RESERVE_CONFLICTS + 1):
        if not pending:
            break
        started = time.perf_counter()
        outcome = cluster.reserve_many([(r.pod, r.node_name) for r in pending])
        share = (time.perf_counter() - started) / len(pending)
        for r in pending:
            r.cycle_seconds += share
        lost = [r for r in pending if r.pod.key in outcome.conflicts or r.pod.key in outcome.gone
                or r.pod.key in outcome.errors]
        for r in lost:
            cache.forget(r.pod.key)
        for r in lost:
            if r.pod.key in outcome.errors:
                # As a Reserve plugin's error: the pod fails this cycle (and backs off); the batch goes on.
                results[r.pod.key] = CycleResult(r.pod, ERROR, r.decision, message=outcome.errors[r.pod.key],
                                                 algorithm_seconds=r.algorithm_seconds, cycle_seconds=r.cycle_seconds)
            elif r.pod.key in outcome.gone:
                results[r.pod.key] = CycleResult(r.pod, GONE, message="pod was deleted or placed elsewhere")
        retry = [r for r in lost if r.pod.key in outcome.conflicts]
        if not retry:
            break
        if round_ == MAX_RESERVE_CONFLICTS:
            for r in retry:
                results[r.pod.key] = CycleResult(r.pod, ERROR, r.decision, conflicts=r.conflicts + 1,
                                                 message=f"lost the reservation race {r.conflicts + 1} times",
                                                 algorithm_seconds=r.algorithm_seconds, cycle_seconds=r.cycle_seconds)
            break
        # Another worker took the room first: look at those nodes again and run the pods again.
        cluster.refresh_nodes(cache, {r.node_name for r in retry})
        pending = []
        for r in retry:
            started = time.perf_counter()
            again = _isolated(r.pod, profiles[r.pod.key], algorithm, cache)
            again.conflicts = r.conflicts + 1
            again.algorithm_seconds += r.algorithm_seconds
            again.cycle_seconds = r.cycle_seconds + time.perf_counter() - started
            results[r.pod.key] = again
            if again.status == SCHEDULED:
                pending.append(again)
    return [results[pod.key] for pod, _ in pods]


def _isolated(pod: PodSpec, profile: Profile, algorithm: Algorithm, cache: Cache) -> CycleResult:
    """schedule_one, with an exception failing this pod's cycle only (as schedulePod's error: SchedulerError)."""
    try:
        return schedule_one(pod, profile=profile, algorithm=algorithm, cache=cache)
    except Exception as exc:  # noqa: BLE001 - one pod's bug or bad data must not stop the batch
        cache.forget(pod.key)  # in case it got as far as assume
        return CycleResult(pod, ERROR, message=f"internal error scheduling the pod: {type(exc).__name__}: {exc}")
