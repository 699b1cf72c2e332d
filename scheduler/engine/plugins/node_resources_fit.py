"""NodeResourcesFit: rejects nodes without room for the pod's requests, scores by the scoring strategy.

As kube-scheduler's pkg/scheduler/framework/plugins/noderesources (fit.go, resource_allocation.go,
least_allocated.go, most_allocated.go, requested_to_capacity_ratio.go and helper/shape_score.go),
columnar over the NodeTable. The request/allocatable helpers here are shared with
NodeResourcesBalancedAllocation, as resourceAllocationScorer is upstream.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..framework import FilterResult
from ..nodes import NodeTable
from ..plugin_args import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    ResourceSpec,
)
from ..pods import PodSpec, derived
from ..resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MAX_NODE_SCORE,
    MEMORY,
    PODS,
    STANDARD_RESOURCES,
    is_extended_resource,
    is_scalar_resource,
)

# As requested_to_capacity_ratio.go's maxUtilization.
MAX_UTILIZATION = 100
# As validation.ValidateNodeResourcesFitArgs: resource weights must lie in [1, 100].
MIN_RESOURCE_WEIGHT, MAX_RESOURCE_WEIGHT = 1, 100


def is_scalar_resource_name(name: str) -> bool:
    """As schedutil.IsScalarResourceName: extended, hugepages, attachable volumes, and prefixed native
    ("kubernetes.io/..." anywhere in the name, which resources.is_scalar_resource does not cover)."""
    return is_scalar_resource(name) or (name not in STANDARD_RESOURCES and "kubernetes.io/" in name)


def go_div(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Go's int64 division: truncates toward zero (numpy's // floors). `b` must be non-zero."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def go_round(x: np.ndarray) -> np.ndarray:
    """Go's math.Round (half away from zero) of float64 values, as int64."""
    t = np.trunc(x)
    frac = x - t  # exact for doubles
    return (t + np.where(frac >= 0.5, 1.0, 0.0) - np.where(frac <= -0.5, 1.0, 0.0)).astype(np.int64)


# ---- shared with BalancedAllocation (resource_allocation.go) --------------------------------

def pod_resource_request(pod: PodSpec, resource: str, use_requested: bool) -> int:
    """As resourceAllocationScorer.calculatePodResourceRequest.

    Unless `use_requested`, cpu and memory read the non-zero requests (a container without a
    request counts DefaultMilliCPURequest / DefaultMemoryRequest); other resources read the plain
    requests. PodRequests never reports "pods" (our PodSpec adds it only to count pods).
    """
    if resource == PODS:
        return 0
    if not use_requested and resource in (CPU, MEMORY):
        return int(pod.nonzero_requests[resource])
    return int(pod.requests.get(resource, 0))


def allocatable_and_requested(
    nodes: NodeTable, rows: np.ndarray, resource: str, pod_request: int, use_requested: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """As calculateResourceAllocatableRequest, over `rows`: (allocatable, allocated on the node,
    allocated + the pod's request). Rows where allocatable is 0 come back all zeros, which the
    scorers skip (as resourceAllocationScorer.score does)."""
    return gather_resource(nodes, rows, resource, pod_request, use_requested)[:3]


def gather_resource(
    nodes: NodeTable, rows: np.ndarray, resource: str, pod_request: int, use_requested: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """allocatable_and_requested, plus whether every row's allocatable is non-zero (every row counts)."""
    # As upstream: an extended resource the pod does not request is bypassed.
    if pod_request == 0 and is_scalar_resource_name(resource):
        zeros = np.zeros(len(rows), dtype=np.int64)
        return zeros, zeros, zeros, len(rows) == 0
    if resource in (CPU, MEMORY):
        alloc = nodes.allocatable_of(resource)[rows]
        used = (nodes.requested_of(resource) if use_requested else nodes.nonzero_requested[resource])[rows]
    elif resource == EPHEMERAL_STORAGE or is_scalar_resource_name(resource):
        # As upstream: ephemeral storage and scalar resources always use the plain requests.
        alloc = nodes.allocatable_of(resource)[rows]
        used = nodes.requested_of(resource)[rows]
    else:
        # Not a resource kube-scheduler tracks (e.g. "pods"): omitted from the score.
        zeros = np.zeros(len(rows), dtype=np.int64)
        return zeros, zeros, zeros, len(rows) == 0
    if np.count_nonzero(alloc) == len(alloc):
        # Every row counts (the usual case): the gathers above are already fresh int64 copies.
        return alloc, used, used + pod_request, True
    valid = alloc != 0
    alloc = np.where(valid, alloc, 0).astype(np.int64)
    used = np.where(valid, used, 0).astype(np.int64)
    return alloc, used, np.where(valid, used + pod_request, 0).astype(np.int64), False


def validate_resources(resources: tuple[ResourceSpec, ...]) -> None:
    if not resources:
        # Upstream accepts this and then fails every Score with "resources not found".
        raise ValueError("resources not found: the scoring strategy lists no resources")
    for i, r in enumerate(resources):
        if not MIN_RESOURCE_WEIGHT <= r.weight <= MAX_RESOURCE_WEIGHT:
            raise ValueError(f"scoringStrategy.resources[{i}].weight: {r.weight} not in [1, 100]")


# ---- scorers ------------------------------------------------------------------------------

def least_requested_scores(requested: np.ndarray, alloc: np.ndarray, nonzero: bool = False) -> np.ndarray:
    """As leastRequestedScore; rows where `alloc` is 0 score 0 (callers mask them out).

    `nonzero` says no row of `alloc` is 0; then requested > alloc already gives 0 free room.
    """
    if nonzero:
        return np.maximum(alloc - requested, 0) * MAX_NODE_SCORE // alloc
    safe = np.where(alloc == 0, 1, alloc)
    free = np.maximum(safe - requested, 0)
    return np.where(requested > alloc, 0, free * MAX_NODE_SCORE // safe)


def most_requested_scores(requested: np.ndarray, alloc: np.ndarray, nonzero: bool = False) -> np.ndarray:
    """As mostRequestedScore: requested above capacity counts as capacity. `nonzero`: no `alloc` is 0."""
    safe = alloc if nonzero else np.where(alloc == 0, 1, alloc)
    return np.minimum(requested, safe) * MAX_NODE_SCORE // safe


def broken_linear(shape: tuple[tuple[int, int], ...], p: np.ndarray) -> np.ndarray:
    """As helper.BuildBrokenLinearFunction over an int64 array (Go integer arithmetic)."""
    p = np.asarray(p, dtype=np.int64)
    out = np.full(p.shape, shape[-1][1], dtype=np.int64)
    # Walk the points backwards so the first point with p <= utilization wins, as the Go loop.
    for i in range(len(shape) - 1, -1, -1):
        u, s = shape[i]
        if i == 0:
            value = np.full(p.shape, s, dtype=np.int64)
        else:
            pu, ps = shape[i - 1]
            span = u - pu
            value = ps + go_div((s - ps) * (p - pu), span if span != 0 else 1)
        out = np.where(p <= u, value, out)
    return out


class NodeResourcesFit:
    name: ClassVar[str] = "NodeResourcesFit"
    usage_dependent: ClassVar[bool] = True  # the requests counted on the node
    score_extensions: ClassVar[bool] = False  # no NormalizeScore

    def sign(self, pod: PodSpec, nodes: NodeTable):
        """The pod's signature element (KEP-5598): its requests as Filter reads them, and the non-zero
        cpu and memory requests Score reads (computePodResourceRequest)."""
        return tuple(sorted(pod.requests.items())), pod.nonzero_requests[CPU], pod.nonzero_requests[MEMORY]

    def __init__(self, args: NodeResourcesFitArgs | None = None):
        self.args = args or NodeResourcesFitArgs()
        strategy = self.args.scoring_strategy
        if strategy.type not in (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO):
            raise ValueError(f"scoring strategy {strategy.type} is not supported")
        validate_resources(strategy.resources)
        self.resources = tuple(strategy.resources)
        self.ignored_resources = frozenset(self.args.ignored_resources)
        self.ignored_groups = frozenset(self.args.ignored_resource_groups)
        self.shape: tuple[tuple[int, int], ...] = ()
        if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            if not strategy.shape:
                raise ValueError("requestedToCapacityRatio.shape: at least one point is required")
            # As requestedToCapacityRatioScorer: shape scores 0..10 scale to 0..MaxNodeScore.
            self.shape = tuple(
                (p.utilization, p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for p in strategy.shape
            )

    # ---- Filter (fitsRequest) ---------------------------------------------------------------
    def _checks(self, pod: PodSpec) -> tuple[tuple[str, str, int], ...]:
        """(reason, resource, request) for each resource the Filter checks for this pod, in order."""
        checks = []
        for resource in (CPU, MEMORY, EPHEMERAL_STORAGE):
            want = int(pod.requests.get(resource, 0))
            if want > 0:
                checks.append((f"Insufficient {resource}", resource, want))
        # Upstream ranges over a Go map (random order); we go by name so reasons are stable.
        for resource in sorted(r for r in pod.requests if is_scalar_resource_name(r)):
            want = int(pod.requests[resource])
            if want == 0:
                continue
            if is_extended_resource(resource) and self._ignored(resource):
                continue
            checks.append((f"Insufficient {resource}", resource, want))
        return tuple(checks)

    def filter(self, pod: PodSpec, nodes: NodeTable) -> FilterResult:
        checks = derived(pod, (self, "filter"), (pod.requests,), lambda: self._checks(pod))
        if self._fits_everywhere(checks, nodes):
            return FilterResult.all_pass(nodes.n)
        reasons, too_big = self._reasons(checks, nodes, slice(None))
        return FilterResult.from_reasons(nodes.n, reasons, unresolvable_rows=too_big)

    @staticmethod
    def _fits_everywhere(checks, nodes: NodeTable) -> bool:
        # Fast path, exact: every node has room for all of it when even the fullest one does.
        return nodes.min_free(PODS) >= 1 and all(want <= nodes.min_free(resource) for _, resource, want in checks)

    def passes_everywhere(self, pod: PodSpec, nodes: NodeTable) -> bool:
        """Whether Filter passes on every node, known from the least free room alone (the signature
        batches then need no filter_rows for the rows whose usage changed)."""
        return self._fits_everywhere(derived(pod, (self, "filter"), (pod.requests,), lambda: self._checks(pod)), nodes)

    def filter_rows(self, pod: PodSpec, nodes: NodeTable, rows: np.ndarray) -> FilterResult:
        """Filter's verdict on `rows` only, every reason kept (for the signature batches)."""
        checks = derived(pod, (self, "filter"), (pod.requests,), lambda: self._checks(pod))
        reasons, too_big = self._reasons(checks, nodes, rows)
        failed = reasons[0][1]
        for _, mask in reasons[1:]:
            failed = failed | mask
        return FilterResult(~failed, reasons, unresolvable_rows=too_big)

    @staticmethod
    def _reasons(checks, nodes: NodeTable, rows) -> tuple[list[tuple[str, np.ndarray]], np.ndarray | None]:
        """Each reason's mask over `rows` (a slice or row indices), and where a request exceeds allocatable."""
        # As upstream: the pod count is checked before, and independently of, the requests
        # (podCount + 1 > allowedPodNumber, i.e. podCount >= allowedPodNumber).
        reasons: list[tuple[str, np.ndarray]] = [("Too many pods", nodes.pod_count[rows] >= nodes.allocatable_of(PODS)[rows])]
        # As InsufficientResource.Unresolvable: a request above the node's whole allocatable makes the
        # node's status UnschedulableAndUnresolvable (no eviction can make room); "Too many pods" never does.
        too_big = None
        for text, resource, want in checks:
            allocatable = nodes.allocatable_of(resource)[rows]
            reasons.append((text, want > allocatable - nodes.requested_of(resource)[rows]))
            above = want > allocatable
            too_big = above if too_big is None else too_big | above
        return reasons, too_big

    def _ignored(self, resource: str) -> bool:
        prefix = resource.split("/")[0] if self.ignored_groups else ""
        return resource in self.ignored_resources or prefix in self.ignored_groups

    # ---- Score ----------------------------------------------------------------------------
    def score(self, pod: PodSpec, nodes: NodeTable, rows: np.ndarray) -> np.ndarray:
        # As upstream: Fit's PreScore never skips.
        rows = np.asarray(rows, dtype=np.int64)
        node_score: np.ndarray | None = None
        # Each resource adds its weight where it counts: `weight_all` where it counts on every
        # row (the usual case), `weight_rows` where it counts on some rows only.
        weight_all = 0
        weight_rows: np.ndarray | None = None
        strategy = self.args.scoring_strategy.type
        for spec in self.resources:
            want = pod_resource_request(pod, spec.name, use_requested=False)
            alloc, _, requested, everywhere = gather_resource(nodes, rows, spec.name, want, use_requested=False)
            if strategy == LEAST_ALLOCATED:
                resource_score = least_requested_scores(requested, alloc, everywhere)
            elif strategy == MOST_ALLOCATED:
                resource_score = most_requested_scores(requested, alloc, everywhere)
            if strategy != REQUESTED_TO_CAPACITY_RATIO:
                counted = None if everywhere else alloc != 0
            else:
                valid = alloc != 0
                safe = alloc if everywhere else np.where(valid, alloc, 1)
                utilization = np.where(
                    requested > alloc, MAX_UTILIZATION, requested * MAX_UTILIZATION // safe
                )
                resource_score = broken_linear(self.shape, utilization)
                # As upstream: a resource scoring 0 adds neither score nor weight.
                counted = valid & (resource_score > 0)
                if np.count_nonzero(counted) == len(counted):
                    counted = None
            if counted is None:
                weighted = resource_score * spec.weight if spec.weight != 1 else resource_score
                weight_all += spec.weight
            elif np.count_nonzero(counted):
                weighted = np.where(counted, resource_score * spec.weight, 0)
                if weight_rows is None:
                    weight_rows = np.zeros(len(rows), dtype=np.int64)
                weight_rows += np.where(counted, spec.weight, 0)
            else:
                continue
            if node_score is None:
                node_score = np.array(weighted, dtype=np.int64)
            else:
                node_score += weighted
        if node_score is None:
            return np.zeros(len(rows), dtype=np.int64)
        if weight_rows is None:
            if strategy == REQUESTED_TO_CAPACITY_RATIO:
                return go_round(node_score.astype(np.float64) / float(weight_all))
            return node_score // weight_all  # both non-negative
        weight_sum = weight_rows + weight_all
        safe_sum = np.where(weight_sum == 0, 1, weight_sum)
        if strategy == REQUESTED_TO_CAPACITY_RATIO:
            result = go_round(node_score.astype(np.float64) / safe_sum.astype(np.float64))
        else:
            result = node_score // safe_sum  # both non-negative
        return np.where(weight_sum == 0, 0, result).astype(np.int64)

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        return scores
