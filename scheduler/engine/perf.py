"""The scheduling algorithm alone, in one process, on scheduler_perf's "SchedulingBasic" shape.

As kube-scheduler's test/integration/scheduler_perf (config/performance-config.yaml,
SchedulingBasic with templates node-default.yaml and pod-default.yaml): nodes of 4 CPU,
32Gi and 110 pods with no labels or taints, some pods already placed, then pods of 100m CPU
and 500Mi scheduled one after another with the default profile, each assumed into the cache
before the next, as schedule_one does. No database, queue or binder: only schedulePod and assume.

    python -m scheduler.engine.perf [--pods N] [--nodes N] [--placed N] [--seed N] [--no-gc-freeze] [--topology]

--topology adds PodTopologySpread and InterPodAffinity where upstream's default profile has them
(filters and scores at weight 2), to show what they cost pods that use neither.

prints one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable

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


def run_engine(pods: int = 10000, nodes: int = 5000, placed: int = 1000, seed: int = 0, *, freeze_gc: bool = True,
               topology: bool = False) -> dict:
    """Schedule `pods` pods one after another (schedulePod, then assume) and time it.

    With `freeze_gc`, the objects built before the clock starts (the cluster and the pods, which a
    running scheduler keeps in its informer caches for good) are moved out of the cyclic GC's
    sight (gc.freeze), so its full collections do not rescan them.
    """
    cache, profile, make_pod = build_scheduling_basic(nodes=nodes, placed=placed, seed=seed, topology=topology)
    algorithm = Algorithm(seed=seed)
    batch = [make_pod(i) for i in range(pods)]  # building pods is the informer's work, not timed
    latencies = np.zeros(pods, dtype=np.float64)
    scheduled = 0
    clock = time.perf_counter
    if freeze_gc:
        gc.collect()
        gc.freeze()
    try:
        started = clock()
        for i, pod in enumerate(batch):
            t0 = clock()
            decision = algorithm.schedule(profile, pod, cache.table)
            if decision.selected_row is not None:
                cache.assume(pod, decision.selected_row)
                scheduled += 1
            latencies[i] = clock() - t0
        elapsed = clock() - started
    finally:
        if freeze_gc:
            gc.unfreeze()
    ms = latencies * 1000.0
    out = {
        "workload": "SchedulingBasic",
        "nodes": nodes,
        "placed": placed,
        "pods": pods,
        "scheduled": scheduled,
        "gc_frozen": freeze_gc,
        "seconds": round(elapsed, 4),
        "pods_per_second": round(pods / elapsed, 1) if elapsed > 0 else None,
        "latency_ms": {
            "p50": round(float(np.percentile(ms, 50)), 4) if pods else None,
            "p90": round(float(np.percentile(ms, 90)), 4) if pods else None,
            "p99": round(float(np.percentile(ms, 99)), 4) if pods else None,
            "max": round(float(ms.max()), 4) if pods else None,
            "mean": round(float(ms.mean()), 4) if pods else None,
        },
    }
    if topology:
        out["profile"] = "default + PodTopologySpread + InterPodAffinity"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scheduler.engine.perf", description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--placed", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-gc-freeze", action="store_true", help="leave the setup objects to the cyclic GC")
    parser.add_argument("--topology", action="store_true",
                        help="add PodTopologySpread and InterPodAffinity as upstream's default profile has them")
    args = parser.parse_args(argv)
    result = run_engine(pods=args.pods, nodes=args.nodes, placed=args.placed, seed=args.seed,
                        freeze_gc=not args.no_gc_freeze, topology=args.topology)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
