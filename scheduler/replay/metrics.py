"""What a replay run did, measured over nodes with numpy: utilisation and its spread (imbalance),
fragmentation, time to bind in virtual time, spread skew per topology key, and the comparison of runs.

Utilisation is requested / allocatable per node (what the scheduler sees, not what pods use), over
the nodes that declare the resource; the std-dev across nodes is the imbalance: MostAllocated packs
(a high spread: some nodes full, others empty), LeastAllocated spreads (a low one).
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import numpy as np

from scheduler.engine.nodes import NodeTable
from scheduler.engine.pods import PodSpec
from scheduler.engine.resources import CPU, MEMORY

from .natural import natural_key, natural_sorted

RESOURCES = (CPU, MEMORY)
# The keys spread skew is reported for when nodes carry them (the well-known topology labels).
TOPOLOGY_KEYS = ("kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region")


class Sample(NamedTuple):
    """The cluster at one virtual instant, for the plots over time."""

    t: float
    pending: int
    cpu_mean: float
    cpu_std: float
    memory_mean: float
    memory_std: float


def utilization_ratios(table: NodeTable, resource: str) -> np.ndarray:
    """requested / allocatable for each node that has some of `resource`."""
    alloc = table.allocatable_of(resource)
    has = alloc > 0
    return table.requested_of(resource)[has] / alloc[has]


def _mean_std(ratios: np.ndarray) -> tuple[float, float]:
    if len(ratios) == 0:
        return 0.0, 0.0
    return float(ratios.mean()), float(ratios.std())  # population std: the nodes are all there are


def utilization(table: NodeTable) -> dict[str, dict[str, float]]:
    out = {}
    for r in RESOURCES:
        mean, std = _mean_std(utilization_ratios(table, r))
        out[r] = {"mean": round(mean, 6), "std": round(std, 6)}
    return out


def per_node(table: NodeTable) -> dict:
    """Each node's utilisation per resource, for the distribution plot (0 where a node has none of it)."""
    order = sorted(range(table.n), key=lambda i: natural_key(table.names[i]))  # node-2 before node-10
    out: dict = {"names": [table.names[i] for i in order]}
    for r in RESOURCES:
        alloc = table.allocatable_of(r)
        ratio = np.divide(table.requested_of(r), alloc, out=np.zeros(table.n, dtype=np.float64), where=alloc > 0)
        out[r] = [round(float(ratio[i]), 6) for i in order]
    return out


def sample_of(t: float, pending: int, table: NodeTable) -> Sample:
    cpu = _mean_std(utilization_ratios(table, CPU))
    mem = _mean_std(utilization_ratios(table, MEMORY))
    return Sample(round(t, 6), pending, *cpu, *mem)


def fragmentation(table: NodeTable, pending: list[PodSpec]) -> dict:
    """Pending pods whose requests fit the cluster's free total but no single node's free room.

    Only resources are looked at (not taints or affinity): this is the room lost to how it is split,
    not every reason a pod waits. Free room is over schedulable nodes.
    """
    schedulable = ~table.unschedulable
    names = sorted({r for p in pending for r in p.requests} | set(RESOURCES))
    free = {r: np.maximum(table.allocatable_of(r) - table.requested_of(r), 0)[schedulable] for r in names}
    total = {r: int(col.sum()) for r, col in free.items()}
    stranded = 0
    stranded_req = Counter()
    for pod in pending:
        if not all(v <= total[r] for r, v in pod.requests.items()):
            continue  # the cluster as a whole lacks the room: not fragmentation
        fits_one = np.ones(int(schedulable.sum()), dtype=bool)
        for r, v in pod.requests.items():
            fits_one &= free[r] >= v
        if not fits_one.any():
            stranded += 1
            stranded_req.update({r: v for r, v in pod.requests.items() if r in RESOURCES})
    # The classic index per resource: 1 - the largest free block / the free total (0: all in one node).
    index = {}
    for r in RESOURCES:
        col = free[r]
        index[r] = round(1.0 - float(col.max()) / total[r], 6) if total[r] and len(col) else 0.0
    return {"pods": stranded, "cpu_millis": int(stranded_req[CPU]), "memory_bytes": int(stranded_req[MEMORY]),
            "free_cpu_millis": total[CPU], "free_memory_bytes": total[MEMORY], "index": index}


def spread_skew(table: NodeTable) -> dict[str, int]:
    """Per topology key: max - min of the bound pods per domain (domains are the key's node values)."""
    out = {}
    pods = table.pod_count
    for key in TOPOLOGY_KEYS:
        col = table.label(key)
        if not col.vocab:
            continue
        has = col.codes >= 0
        per_domain = np.bincount(col.codes[has], weights=pods[has], minlength=len(col.vocab))
        out[key] = int(per_domain.max() - per_domain.min())
    return out


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(float(np.percentile(np.asarray(values, dtype=np.float64), q)), 6)


def run_report(run, recorded: dict[str, list[str]] | None = None) -> dict:
    """One configuration's entry in the replay JSON."""
    pods = run.pods
    placements = {key: pods[key].node for key in natural_sorted(pods)}
    pending = [p for p in pods.values() if p.node is None]
    waits = [p.bound_at - p.arrived for p in pods.values() if p.arrived is not None and p.bound_at is not None]
    reasons = Counter(p.message or "never attempted (no profile for its schedulerName)" for p in pending)
    report = {
        "config": run.config_name,
        "scheduled": sum(1 for p in pods.values() if p.node is not None and p.arrived is not None),
        "pending": len(pending),
        "pending_reasons": dict(reasons.most_common()),
        "placements": placements,
        "utilization": utilization(run.table),
        "fragmentation": fragmentation(run.table, [p.spec for p in pending]),
        "spread_skew": spread_skew(run.table),
        "preemptions": run.preemptions,  # victims evicted
        "preemptors": run.preemptors,  # cycles that evicted some
        "evicted": natural_sorted(run.evicted),
        "time_to_bind_p50_s": percentile(waits, 50),
        "time_to_bind_p99_s": percentile(waits, 99),
        "attempts": run.attempts,
        "lost_with_node": run.lost_with_node,
        "bind_failures": run.bind_failures,
        "skipped_events": run.skipped_events,
        "virtual_seconds": round(run.virtual_seconds, 6),
        "wall_seconds": round(run.wall_seconds, 3),
        "nodes": per_node(run.table),
        "timeline": [list(s) for s in run.samples],
    }
    if recorded:
        # Bindings, not final placements: a pod bound then deleted within the trace counts too, and a name bound
        # again (a pod created anew under it) counts each time, in order.
        made = run.bindings
        report["recorded_matches"] = sum(sum(1 for i, node in enumerate(nodes) if made.get(k, [])[i:i + 1] == [node])
                                         for k, nodes in recorded.items())
        report["recorded_differs"] = natural_sorted(k for k, nodes in recorded.items() if made.get(k, [])[:len(nodes)] != nodes)
    return report


def differ(reports: list[dict]) -> list[str]:
    """Pods whose node differs between the first configuration and any other (unplaced counts as null)."""
    if len(reports) < 2:
        return []
    first = reports[0]["placements"]
    keys = set(first)
    for r in reports[1:]:
        keys |= set(r["placements"])
    return natural_sorted(k for k in keys if any(r["placements"].get(k) != first.get(k) for r in reports[1:]))


def attempt_of(run, key: str) -> dict:
    """One pod's replayed attempt under one configuration, for the placements that differ: where it went,
    when (virtual seconds), after how many attempts, what the binding cycle weighed or why it still waits."""
    pod = run.pods.get(key)
    if pod is None:
        return {"node": None, "gone": "evicted by preemption" if key in run.evicted else "deleted"}
    return {"node": pod.node, "arrived_s": pod.arrived, "bound_s": pod.bound_at, "attempts": pod.attempts,
            "message": pod.message, "decision": pod.decision}
