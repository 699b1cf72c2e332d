"""The scheduling algorithm alone, in one process, on scheduler_perf's "SchedulingBasic" shape.

As kube-scheduler's test/integration/scheduler_perf (config/performance-config.yaml,
SchedulingBasic with templates node-default.yaml and pod-default.yaml): nodes of 4 CPU,
32Gi and 110 pods with no labels or taints, some pods already placed, then pods of 100m CPU
and 500Mi scheduled one after another with the default profile, each assumed into the cache
before the next, as schedule_one does. No database, queue or binder: only schedulePod and assume.

    python -m scheduler.engine.perf [--pods N] [--nodes N] [--placed N] [--seed N] [--no-gc-freeze] [--topology]
                                    [--no-batching]
    python -m scheduler.engine.perf --preemption [--pods N] [--nodes N] [--seed N]

The pods all have one scheduling signature, so with opportunistic batching (on by default, as upstream's
OpportunisticBatching gate) they share their filter and score work (engine/batching.py); --no-batching
schedules every pod from scratch (the same placements, for comparison).

--topology adds PodTopologySpread and InterPodAffinity where upstream's default profile has them
(filters and scores at weight 2), to show what they cost pods that use neither.

--preemption runs scheduler_perf's "PreemptionBasic" shape instead (templates pod-low-priority.yaml
and pod-high-priority.yaml): every node full of low-priority pods (4 x 900m), then high-priority pods
(priority 10, 3000m) that fit nowhere, each through a whole preemption cycle: the failed attempt,
DefaultPreemption's PostFilter (dry run, pick a node, nominate), its victims removed (as their
deletion would be observed), and the retry that lands on the nominated node.

prints one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .cache import Cache
from .framework import Algorithm, Profile
from .nodes import NodeSpec, NodeTable
from .pods import Container, PodSpec
from .resources import CPU, MEMORY, PODS

GI = 1024**3
MI = 1024**2

# As node-default.yaml.
NODE_ALLOCATABLE = {CPU: 4000, MEMORY: 32 * GI, PODS: 110}
# As pod-default.yaml.
POD_REQUESTS = {CPU: 100, MEMORY: 500 * MI}


def basic_pod(name: str, namespace: str = "sched-test") -> PodSpec:
    return PodSpec(
        namespace=namespace,
        name=name,
        uid=name,
        containers=(Container(name="pause", image="registry.k8s.io/pause:3.10", requests=dict(POD_REQUESTS)),),
    )


TOPOLOGY_PLUGINS = ("PodTopologySpread", "InterPodAffinity")


def upstream_default_profile():
    """The default profile with PodTopologySpread and InterPodAffinity in upstream's places
    (getDefaultPlugins: filters, and scores at weight 2), until the config layer models them."""
    from .config import DEFAULT_MULTI_POINT, MODELLED_POINTS, ProfileConfig

    points = dict(MODELLED_POINTS, **{name: frozenset({"preFilter", "filter", "preScore", "score"})
                                      for name in TOPOLOGY_PLUGINS})
    filters = [n for n, _ in DEFAULT_MULTI_POINT if "filter" in points.get(n, ())]
    scores = [(n, w or 1) for n, w in DEFAULT_MULTI_POINT if "score" in points.get(n, ())]
    return ProfileConfig(filters=filters, scores=scores)


def build_scheduling_basic(nodes: int = 5000, placed: int = 1000, seed: int = 0, *,
                           topology: bool = False) -> tuple[Cache, Profile, Callable[[int], PodSpec]]:
    """A cache over `nodes` default nodes with `placed` default pods on random nodes, the default
    profile (with `topology`, upstream's, including the two topology plugins), and a factory making
    the i-th pod to schedule."""
    from .config import default_config

    specs = [NodeSpec(name=f"node-{i}", allocatable=dict(NODE_ALLOCATABLE)) for i in range(nodes)]
    table = NodeTable(specs)
    rng = np.random.default_rng(seed)
    for i, row in enumerate(rng.integers(0, nodes, size=placed) if nodes else ()):
        table.add_pod(int(row), basic_pod(f"init-pod-{i}", namespace="init"))
    cache = Cache(table)
    profile = upstream_default_profile().build() if topology else default_config().profiles[0].build()

    def make_pod(i: int) -> PodSpec:
        return basic_pod(f"pod-{i}")

    return cache, profile, make_pod


@dataclass
class Churn:
    """scheduler_perf's churn op (mode create) beside the measured pods: `make(i)` is the i-th object, one each
    `interval` seconds of the run's clock, as its ticker; each goes through a whole cycle in the same loop."""

    make: Callable[[int], PodSpec]
    interval: float
    created: int = 0
    attempts: int = 0  # failed attempts of churned pods (each ran the PostFilter: scheduler_preemption_attempts_total)
    preemptions: int = 0  # of them nominating a node
    victims: int = 0
    bound: int = 0  # churned pods placed (on the room their preemption made, or at once)
    victims_measured: int = 0  # measured pods among the victims (they leave the run unplaced)

    def report(self) -> dict:
        return {"churned_pods": self.created, "preemption_attempts": self.attempts, "preemptions": self.preemptions,
                "preemption_victims": self.victims, "preemptors_bound": self.bound,
                "measured_pods_preempted": self.victims_measured}


def _churn_cycle(cache: Cache, profile: Profile, algorithm: Algorithm, pod: PodSpec, churn: Churn,
                 measured: set[str]) -> None:
    """One churned pod through schedule_one; a preemption's victims leave the cache (their deletion observed at
    once: no API server here), and the preemptor's next cycle lands on its nominated node."""
    from .schedule_one import SCHEDULED, UNSCHEDULABLE, schedule_one

    first = schedule_one(pod, profile=profile, algorithm=algorithm, cache=cache)
    if first.status == SCHEDULED:
        churn.bound += 1
        return
    if first.status != UNSCHEDULABLE:
        return
    churn.attempts += first.decision is not None and first.decision.post_filter is not None
    if not first.nominated_node:
        return
    churn.preemptions += 1
    churn.victims += len(first.victims)
    row = cache.table.index[first.nominated_node]
    for v in first.victims:
        churn.victims_measured += v.key in measured
        if v.key in cache.assumed:
            cache.forget(v.key)
        else:
            cache.table.remove_pod(row, v)
    again = schedule_one(dataclasses.replace(pod, nominated_node_name=first.nominated_node), profile=profile,
                         algorithm=algorithm, cache=cache)
    churn.bound += again.status == SCHEDULED


def time_schedule(cache: Cache, profile: Profile, algorithm: Algorithm, batch: list[PodSpec], *,
                  freeze_gc: bool = True, churn: Churn | None = None) -> dict:
    """Schedule `batch` one pod after another (schedulePod, then assume) and time it; with `churn`, its pods are
    created on its ticker and scheduled between the measured ones (the time they take counts: one loop).

    With `freeze_gc`, the objects built before the clock starts (the cluster and the pods, which a
    running scheduler keeps in its informer caches for good) are moved out of the cyclic GC's
    sight (gc.freeze), so its full collections do not rescan them.
    """
    pods = len(batch)
    latencies = np.zeros(pods, dtype=np.float64)
    scheduled = 0
    batched_before = algorithm.batch.batched_pods if algorithm.batch is not None else 0
    clock = time.perf_counter
    measured = {p.key for p in batch} if churn is not None else set()
    if freeze_gc:
        gc.collect()
        gc.freeze()
    try:
        started, cpu_started = clock(), time.process_time()
        next_churn = started + (churn.interval if churn is not None else 0.0)
        for i, pod in enumerate(batch):
            while churn is not None and clock() >= next_churn:
                next_churn += churn.interval
                _churn_cycle(cache, profile, algorithm, churn.make(churn.created), churn, measured)
                churn.created += 1
            t0 = clock()
            decision = algorithm.schedule(profile, pod, cache.table)
            if decision.selected_row is not None:
                cache.assume(pod, decision.selected_row)
                scheduled += 1
            latencies[i] = clock() - t0
        elapsed = clock() - started
        cpu = time.process_time() - cpu_started
    finally:
        if freeze_gc:
            gc.unfreeze()
    ms = latencies * 1000.0
    return {
        **(churn.report() if churn is not None else {}),
        "scheduled": scheduled,
        # Pods whose filter and score work was shared with an earlier pod of their signature.
        "batched": (algorithm.batch.batched_pods - batched_before) if algorithm.batch is not None else 0,
        "gc_frozen": freeze_gc,
        "seconds": round(elapsed, 4),
        "pods_per_second": round(pods / elapsed, 1) if elapsed > 0 else None,
        # CPU time too: on a shared machine the wall clock counts other processes' turns.
        "cpu_seconds": round(cpu, 4),
        "pods_per_cpu_second": round(pods / cpu, 1) if cpu > 0 else None,
        "latency_ms": {
            "p50": round(float(np.percentile(ms, 50)), 4) if pods else None,
            "p90": round(float(np.percentile(ms, 90)), 4) if pods else None,
            "p99": round(float(np.percentile(ms, 99)), 4) if pods else None,
            "max": round(float(ms.max()), 4) if pods else None,
            "mean": round(float(ms.mean()), 4) if pods else None,
        },
    }


def run_engine(pods: int = 10000, nodes: int = 5000, placed: int = 1000, seed: int = 0, *, freeze_gc: bool = True,
               topology: bool = False, batching: bool = True) -> dict:
    """SchedulingBasic: `pods` default pods through time_schedule on `nodes` nodes, `placed` of them placed."""
    cache, profile, make_pod = build_scheduling_basic(nodes=nodes, placed=placed, seed=seed, topology=topology)
    batch = [make_pod(i) for i in range(pods)]  # building pods is the informer's work, not timed
    timed = time_schedule(cache, profile, Algorithm(seed=seed, batching=batching), batch, freeze_gc=freeze_gc)
    out = {"workload": "SchedulingBasic", "nodes": nodes, "placed": placed, "pods": pods, **timed}
    if topology:
        out["profile"] = "default + PodTopologySpread + InterPodAffinity"
    return out


# As pod-low-priority.yaml and pod-high-priority.yaml.
LOW_PRIORITY_REQUESTS = {CPU: 900, MEMORY: 500 * MI}
HIGH_PRIORITY_REQUESTS = {CPU: 3000, MEMORY: 500 * MI}
HIGH_PRIORITY = 10


def _priority_pod(name: str, namespace: str, priority: int, requests: dict, start: float | None) -> PodSpec:
    return PodSpec(namespace=namespace, name=name, uid=name, priority=priority, start_time=start,
                   containers=(Container(name="pause", image="registry.k8s.io/pause:3.10", requests=dict(requests)),))


def run_preemption(pods: int = 1000, nodes: int = 5000, low_per_node: int = 4, seed: int = 0, *,
                   freeze_gc: bool = True) -> dict:
    """`pods` high-priority pods, each through a preemption cycle on `nodes` nodes full of low-priority
    pods; times the whole cycle and, apart, the PostFilter (preemption) inside it."""
    from .config import default_config
    from .nominator import Nominator
    from .plugins.default_preemption import DefaultPreemption
    from .schedule_one import SCHEDULED, schedule_one

    specs = [NodeSpec(name=f"node-{i}", allocatable=dict(NODE_ALLOCATABLE)) for i in range(nodes)]
    table = NodeTable(specs)
    k = 0
    for row in range(nodes):
        for _ in range(low_per_node):
            table.add_pod(row, _priority_pod(f"low-{k}", "init", 0, LOW_PRIORITY_REQUESTS, start=float(k)))
            k += 1
    cache = Cache(table)
    profile = default_config().profiles[0].build()
    profile.post_filters = [DefaultPreemption(seed=seed, clock=lambda: 1e9)]
    algorithm = Algorithm(seed=seed, nominator=Nominator())
    batch = [_priority_pod(f"high-{i}", "sched-test", HIGH_PRIORITY, HIGH_PRIORITY_REQUESTS, None) for i in range(pods)]
    cycle = np.zeros(pods, dtype=np.float64)
    post_filter = np.zeros(pods, dtype=np.float64)
    victims = np.zeros(pods, dtype=np.int64)
    preempted = landed = 0
    clock = time.perf_counter
    if freeze_gc:
        gc.collect()
        gc.freeze()
    try:
        started, cpu_started = clock(), time.process_time()
        for i, pod in enumerate(batch):
            t0 = clock()
            first = schedule_one(pod, profile=profile, algorithm=algorithm, cache=cache)
            t1 = clock()
            if first.status == SCHEDULED:
                landed += 1
            elif first.nominated_node:
                preempted += 1
                victims[i] = len(first.victims)
                # The victims' deletion is observed: they leave the cache.
                for v in first.victims:
                    table.remove_pod(table.index[first.nominated_node], v)
                pod.nominated_node_name = first.nominated_node
                again = schedule_one(pod, profile=profile, algorithm=algorithm, cache=cache)
                landed += again.status == SCHEDULED
            cycle[i] = clock() - t0
            post_filter[i] = t1 - t0
        elapsed = clock() - started
        cpu = time.process_time() - cpu_started
    finally:
        if freeze_gc:
            gc.unfreeze()

    def pct(a: np.ndarray, q: float) -> float | None:
        return round(float(np.percentile(a * 1000.0, q)), 4) if len(a) else None

    return {
        "workload": "PreemptionBasic",
        "nodes": nodes,
        "low_priority_pods": nodes * low_per_node,
        "pods": pods,
        "preempted": preempted,
        "scheduled": landed,
        "victims_per_preemption": round(float(victims[victims > 0].mean()), 2) if preempted else None,
        "gc_frozen": freeze_gc,
        "seconds": round(elapsed, 4),
        "pods_per_second": round(pods / elapsed, 1) if elapsed > 0 else None,
        # CPU time too: on a shared machine the wall clock counts other processes' turns.
        "cpu_seconds": round(cpu, 4),
        "pods_per_cpu_second": round(pods / cpu, 1) if cpu > 0 else None,
        "cycle_ms": {"p50": pct(cycle, 50), "p90": pct(cycle, 90), "p99": pct(cycle, 99)},
        "failed_attempt_with_preemption_ms": {"p50": pct(post_filter, 50), "p90": pct(post_filter, 90),
                                              "p99": pct(post_filter, 99)},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scheduler.engine.perf", description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--placed", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-gc-freeze", action="store_true", help="leave the setup objects to the cyclic GC")
    parser.add_argument("--topology", action="store_true",
                        help="add PodTopologySpread and InterPodAffinity as upstream's default profile has them")
    parser.add_argument("--no-batching", action="store_true",
                        help="every pod from scratch (OpportunisticBatching off): the same placements, slower")
    parser.add_argument("--preemption", action="store_true",
                        help="scheduler_perf's PreemptionBasic: every pod goes through a preemption cycle")
    args = parser.parse_args(argv)
    if args.preemption:
        result = run_preemption(pods=args.pods, nodes=args.nodes, seed=args.seed, freeze_gc=not args.no_gc_freeze)
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    result = run_engine(pods=args.pods, nodes=args.nodes, placed=args.placed, seed=args.seed,
                        freeze_gc=not args.no_gc_freeze, topology=args.topology, batching=not args.no_batching)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
