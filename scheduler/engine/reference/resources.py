"""Per-node reference for NodeResourcesFit, NodeResourcesBalancedAllocation and ImageLocality.

Read line by line from kube-scheduler master (noderesources/fit.go, resource_allocation.go,
least_allocated.go, most_allocated.go, requested_to_capacity_ratio.go, balanced_allocation.go,
helper/shape_score.go, imagelocality/image_locality.go). Plain Python integers and floats, one
node at a time; no numpy and nothing shared with the engine plugins.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..nodes import NodeSpec, NodeUsage
from ..plugin_args import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MOST_ALLOCATED,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
)
from ..pods import PodSpec
from ..resources import MAX_NODE_SCORE

MAX_UTILIZATION = 100
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB

_NATIVE = ("cpu", "memory", "ephemeral-storage", "pods")


def go_div(a: int, b: int) -> int:
    """Go int64 division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def go_round(x: float) -> int:
    """Go math.Round: half away from zero."""
    t = math.trunc(x)
    if x - t >= 0.5:
        return t + 1
    if x - t <= -0.5:
        return t - 1
    return t


# ---- v1helper / schedutil resource-name predicates -----------------------------------------

def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource_name(name: str) -> bool:
    return not _is_native(name) and not name.startswith("requests.")


def is_scalar_resource_name(name: str) -> bool:
    if name in _NATIVE:
        return False
    return (
        is_extended_resource_name(name)
        or name.startswith("hugepages-")
        or "kubernetes.io/" in name
        or name.startswith("attachable-volumes-")
    )


# ---- Filter -------------------------------------------------------------------------------

def fit_filter(pod: PodSpec, node: NodeSpec, usage: NodeUsage, args: NodeResourcesFitArgs | None = None) -> list[str]:
    """fitsRequest: the reasons this node cannot take the pod, in upstream's order."""
    args = args or NodeResourcesFitArgs()
    alloc = node.allocatable
    used = usage.requested
    reasons = []
    pod_count = used.get("pods", 0)
    if pod_count + 1 > alloc.get("pods", 0):
        reasons.append("Too many pods")
    req = pod.requests
    cpu, mem, eph = req.get("cpu", 0), req.get("memory", 0), req.get("ephemeral-storage", 0)
    scalars = {r: q for r, q in req.items() if is_scalar_resource_name(r)}
    if cpu == 0 and mem == 0 and eph == 0 and not scalars:
        return reasons
    if cpu > 0 and cpu > alloc.get("cpu", 0) - used.get("cpu", 0):
        reasons.append("Insufficient cpu")
    if mem > 0 and mem > alloc.get("memory", 0) - used.get("memory", 0):
        reasons.append("Insufficient memory")
    if eph > 0 and eph > alloc.get("ephemeral-storage", 0) - used.get("ephemeral-storage", 0):
        reasons.append("Insufficient ephemeral-storage")
    ignored = set(args.ignored_resources)
    groups = set(args.ignored_resource_groups)
    for name in sorted(scalars):  # a Go map upstream: we fix the order by name
        q = scalars[name]
        if q == 0:
            continue
        if is_extended_resource_name(name):
            prefix = name.split("/")[0] if groups else ""
            if name in ignored or prefix in groups:
                continue
        if q > alloc.get(name, 0) - used.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


# ---- resourceAllocationScorer -------------------------------------------------------------

def _pod_request(pod: PodSpec, resource: str, use_requested: bool) -> int:
    """calculatePodResourceRequest: resourcehelper.PodRequests, with the non-zero defaults for
    cpu/memory unless use_requested."""
    if resource == "pods":
        return 0  # PodRequests has no "pods" entry
    if not use_requested and resource in ("cpu", "memory"):
        return pod.nonzero_requests[resource]
    return pod.requests.get(resource, 0)


def _alloc_req(node: NodeSpec, usage: NodeUsage, resource: str, pod_request: int, use_requested: bool):
    """calculateResourceAllocatableRequest: (allocatable, allocated, allocated + pod request)."""
    if pod_request == 0 and is_scalar_resource_name(resource):
        return 0, 0, 0
    if resource in ("cpu", "memory"):
        if use_requested:
            used = usage.requested.get(resource, 0)
        else:
            used = usage.nonzero_cpu if resource == "cpu" else usage.nonzero_memory
        return node.allocatable.get(resource, 0), used, used + pod_request
    if resource == "ephemeral-storage":
        used = usage.requested.get(resource, 0)
        return node.allocatable.get(resource, 0), used, used + pod_request
    if is_scalar_resource_name(resource) and resource in node.allocatable:
        used = usage.requested.get(resource, 0)
        return node.allocatable[resource], used, used + pod_request
    return 0, 0, 0


def _vectors(pod, node, usage, resources: Sequence[ResourceSpec], use_requested: bool):
    requested, allocated, allocatable = [], [], []
    for r in resources:
        want = _pod_request(pod, r.name, use_requested)
        alloc, used, req = _alloc_req(node, usage, r.name, want, use_requested)
        if alloc == 0:
            alloc, used, req = 0, 0, 0
        requested.append(req)
        allocated.append(used)
        allocatable.append(alloc)
    return requested, allocated, allocatable


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    if requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    if requested > capacity:
        requested = capacity
    return requested * MAX_NODE_SCORE // capacity


def broken_linear_function(shape: Sequence[tuple[int, int]], p: int) -> int:
    for i in range(len(shape)):
        if p <= shape[i][0]:
            if i == 0:
                return shape[0][1]
            return shape[i - 1][1] + go_div(
                (shape[i][1] - shape[i - 1][1]) * (p - shape[i - 1][0]), shape[i][0] - shape[i - 1][0]
            )
    return shape[-1][1]


def fit_score(pod: PodSpec, node: NodeSpec, usage: NodeUsage, args: NodeResourcesFitArgs | None = None) -> int:
    """Fit.Score under args.scoring_strategy."""
    args = args or NodeResourcesFitArgs()
    strategy = args.scoring_strategy
    resources = strategy.resources
    requested, _, allocatable = _vectors(pod, node, usage, resources, use_requested=False)
    node_score = weight_sum = 0
    if strategy.type in (LEAST_ALLOCATED, MOST_ALLOCATED):
        per = least_requested_score if strategy.type == LEAST_ALLOCATED else most_requested_score
        for i in range(len(requested)):
            if allocatable[i] == 0:
                continue
            node_score += per(requested[i], allocatable[i]) * resources[i].weight
            weight_sum += resources[i].weight
        return 0 if weight_sum == 0 else node_score // weight_sum
    shape = [(p.utilization, p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for p in strategy.shape]

    def resource_score(req: int, cap: int) -> int:
        if cap == 0 or req > cap:
            return broken_linear_function(shape, MAX_UTILIZATION)
        return broken_linear_function(shape, req * MAX_UTILIZATION // cap)

    for i in range(len(requested)):
        if allocatable[i] == 0:
            continue
        s = resource_score(requested[i], allocatable[i])
        if s > 0:
            node_score += s * resources[i].weight
            weight_sum += resources[i].weight
    if weight_sum == 0:
        return 0
    return go_round(float(node_score) / float(weight_sum))


# ---- BalancedAllocation ---------------------------------------------------------------------

def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    fractions: list[float] = []
    total = 0.0
    for i in range(len(requested)):
        if allocatable[i] == 0:
            continue
        fraction = float(requested[i]) / float(allocatable[i])
        if fraction > 1:
            fraction = 1.0
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / float(len(fractions))
        s = 0.0
        for f in fractions:
            s = s + (f - mean) * (f - mean)
        std = math.sqrt(s / float(len(fractions)))
    return int((1 - std) * float(MAX_NODE_SCORE))


def balanced_allocation_score(
    pod: PodSpec, node: NodeSpec, usage: NodeUsage, args: NodeResourcesBalancedAllocationArgs | None = None
) -> int | None:
    """BalancedAllocation PreScore + Score; None when PreScore returns Skip (best-effort pod)."""
    args = args or NodeResourcesBalancedAllocationArgs()
    if all(_pod_request(pod, r.name, True) == 0 for r in args.resources):
        return None
    requested, allocated, allocatable = _vectors(pod, node, usage, args.resources, use_requested=True)
    with_pod = balanced_resource_score(requested, allocatable)
    without_pod = balanced_resource_score(allocated, allocatable)
    return MAX_NODE_SCORE // 2 + go_div(MAX_NODE_SCORE // 2 + with_pod - without_pod, 2)


# ---- ImageLocality --------------------------------------------------------------------------

def normalized_image_name(name: str) -> str:
    if name.rfind(":") <= name.rfind("/"):
        name = name + ":latest"
    return name


def _image_states(all_nodes: Sequence[NodeSpec]) -> dict[str, tuple[int, set[str]]]:
    """The scheduler cache's imageStates: name -> (size first reported, nodes holding it)."""
    states: dict[str, tuple[int, set[str]]] = {}
    for n in all_nodes:
        for image in n.images:
            for name in image.names:
                if name not in states:
                    states[name] = (image.size, {n.name})
                else:
                    states[name][1].add(n.name)
    return states


def image_locality_score(pod: PodSpec, node: NodeSpec, all_nodes: Sequence[NodeSpec]) -> int:
    states = _image_states(all_nodes)
    on_node = {name for image in node.images for name in image.names}
    total = len(all_nodes)
    s = 0
    for c in tuple(pod.init_containers) + tuple(pod.containers):
        name = normalized_image_name(c.image)
        if name in on_node:
            size, holders = states[name]
            spread = float(len(holders)) / float(total)
            s += int(float(size) * spread)
    num_containers = len(pod.init_containers) + len(pod.containers)
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if s < MIN_THRESHOLD:
        s = MIN_THRESHOLD
    elif s > max_threshold:
        s = max_threshold
    return go_div(MAX_NODE_SCORE * (s - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)
