"""NodeResourcesBalancedAllocation: favours nodes whose resource usage the pod makes more balanced.

As kube-scheduler's noderesources/balanced_allocation.go in master, which since
kubernetes/kubernetes#135573 scores the *change* in balance: the balance score (1 - std of the
usage fractions) with the pod and without it, mapped to [50, 100] (75 when the balance does not
change). Columnar over the candidate rows.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..nodes import NodeTable
from ..plugin_args import NodeResourcesBalancedAllocationArgs
from ..pods import PodSpec
from ..resources import MAX_NODE_SCORE
from .node_resources_fit import allocatable_and_requested, go_div, pod_resource_request, validate_resources


def balance_scores(fractions: list[np.ndarray], included: list[np.ndarray]) -> np.ndarray:
    """As balancedResourceScore, per row: int64((1 - std) * MaxNodeScore) over the included fractions.

    Two fractions: |a - b| / 2; more: the population standard deviation; fewer: 0. The sums run
    over the resources in order, adding 0.0 for skipped ones, so the float64 results match Go's.
    """
    n = len(fractions[0]) if fractions else 0
    count = np.zeros(n, dtype=np.int64)
    total = np.zeros(n, dtype=np.float64)
    first = np.zeros(n, dtype=np.float64)
    second = np.zeros(n, dtype=np.float64)
    for f, inc in zip(fractions, included):
        first = np.where(inc & (count == 0), f, first)
        second = np.where(inc & (count == 1), f, second)
        total = total + np.where(inc, f, 0.0)
        count += inc
    safe_count = np.where(count == 0, 1, count).astype(np.float64)
    mean = total / safe_count
    squares = np.zeros(n, dtype=np.float64)
    for f, inc in zip(fractions, included):
        d = f - mean
        squares = squares + np.where(inc, d * d, 0.0)
    std = np.where(
        count == 2,
        np.abs((first - second) / 2),
        np.where(count > 2, np.sqrt(squares / safe_count), 0.0),
    )
    return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)  # float64 -> int64 truncates, as Go


class NodeResourcesBalancedAllocation:
    name: ClassVar[str] = "NodeResourcesBalancedAllocation"

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | None = None):
        self.args = args or NodeResourcesBalancedAllocationArgs()
        validate_resources(self.args.resources)
        self.resources = tuple(self.args.resources)

    def score(self, pod: PodSpec, nodes: NodeTable, rows: np.ndarray) -> np.ndarray | None:
        # As upstream: BalancedAllocation uses the plain requests (useRequested), not the non-zero ones.
        wants = [pod_resource_request(pod, r.name, use_requested=True) for r in self.resources]
        if all(w == 0 for w in wants):
            # As PreScore: Skip for best-effort pods (kubernetes/kubernetes#129138).
            return None
        rows = np.asarray(rows, dtype=np.int64)
        with_pod, without_pod, included = [], [], []
        for spec, want in zip(self.resources, wants):
            alloc, allocated, requested = allocatable_and_requested(nodes, rows, spec.name, want, use_requested=True)
            valid = alloc != 0
            safe = np.where(valid, alloc, 1).astype(np.float64)
            # As upstream: a fraction above 1 counts as 1.
            with_pod.append(np.minimum(requested.astype(np.float64) / safe, 1.0))
            without_pod.append(np.minimum(allocated.astype(np.float64) / safe, 1.0))
            included.append(valid)
        score_with = balance_scores(with_pod, included)
        score_without = balance_scores(without_pod, included)
        half = MAX_NODE_SCORE // 2
        return (half + go_div(half + score_with - score_without, 2)).astype(np.int64)

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        return scores
