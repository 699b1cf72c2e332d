"""NodeResourcesBalancedAllocation: favours nodes whose resource usage the pod makes more balanced.

As kube-scheduler's noderesources/balanced_allocation.go in master, which since
kubernetes/kubernetes#135573 scores the *change* in balance: the balance score (1 - std of the
usage fractions) with the pod and without it, mapped to [50, 100] (75 when the balance does not
change). Columnar over the candidate rows.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import numpy as np

from ..nodes import NodeTable
from ..plugin_args import NodeResourcesBalancedAllocationArgs
from ..pods import PodSpec
from ..resources import CPU, EPHEMERAL_STORAGE, MAX_NODE_SCORE, MEMORY
from .node_resources_fit import allocatable_and_requested, is_scalar_resource_name, pod_resource_request, validate_resources


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


def dense_balance_scores(fractions: list[np.ndarray]) -> np.ndarray:
    """balance_scores where every fraction is included on every row: the same float64 operations in
    the same order, without the per-row bookkeeping. Works elementwise on arrays of any shape."""
    k = len(fractions)
    if k == 2:
        std = np.abs((fractions[0] - fractions[1]) / 2)
    elif k > 2:
        total = fractions[0]
        for f in fractions[1:]:
            total = total + f
        mean = total / float(k)
        squares = None
        for f in fractions:
            d = f - mean
            squares = d * d if squares is None else squares + d * d
        std = np.sqrt(squares / float(k))
    else:
        return np.full(fractions[0].shape if fractions else 0, MAX_NODE_SCORE, dtype=np.int64)
    return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


def go_half(a: np.ndarray) -> np.ndarray:
    """Go's int64 a / 2 (truncating toward zero): add 1 to negative values, then shift."""
    return (a - (a >> 63)) >> 1


@functools.lru_cache(maxsize=64)
def _with_and_without(want: int) -> np.ndarray:
    """The (2, 1) column ((want,), (0,)) added to the requested counts, made once per request (read-only)."""
    out = np.array(((want,), (0,)), dtype=np.int64)
    out.flags.writeable = False
    return out


class NodeResourcesBalancedAllocation:
    name: ClassVar[str] = "NodeResourcesBalancedAllocation"
    usage_dependent: ClassVar[bool] = True  # the requests counted on the node
    score_extensions: ClassVar[bool] = False  # no NormalizeScore

    def sign(self, pod: PodSpec, nodes: NodeTable):
        """The pod's signature element (KEP-5598): its requests (calculatePodResourceRequestList)."""
        return tuple(sorted(pod.requests.items()))

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
        fractions = self._dense_fractions(nodes, rows, wants)
        if fractions is not None:
            # Row 0 of every score array is with the pod, row 1 without it.
            scores = dense_balance_scores(fractions)
            score_with, score_without = scores[0], scores[1]
        else:
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
        return half + go_half(half + score_with - score_without)

    def _dense_fractions(self, nodes: NodeTable, rows: np.ndarray, wants: list[int]) -> list[np.ndarray] | None:
        """Per resource, a (2, len(rows)) array of usage fractions with and without the pod, when every
        resource counts on every row (the usual case); None otherwise (see allocatable_and_requested)."""
        fractions = []
        for spec, want in zip(self.resources, wants):
            name = spec.name
            scalar = is_scalar_resource_name(name)
            if (want == 0 and scalar) or not (scalar or name in (CPU, MEMORY, EPHEMERAL_STORAGE)):
                return None  # bypassed or untracked: counts on no row
            alloc = nodes.allocatable_of(name)[rows]
            if np.count_nonzero(alloc) != len(alloc):
                return None
            # As upstream: BalancedAllocation reads the plain requests of every resource.
            with_and_without = nodes.requested_of(name)[rows] + _with_and_without(want)
            # int64 / int64 divides as float64, exactly as converting both first. As upstream: a
            # fraction above 1 counts as 1.
            f = np.true_divide(with_and_without, alloc)
            fractions.append(np.minimum(f, 1.0, out=f))
        return fractions

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        return scores
