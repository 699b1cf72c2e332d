"""Plugin arguments, as kubescheduler.config.k8s.io/v1's *Args types, already defaulted."""

from __future__ import annotations

from dataclasses import dataclass, field

from .pods import NodeSelectorTerm, PreferredTerm

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
# As config.MaxCustomPriorityScore: the top of a RequestedToCapacityRatio shape's score scale.
MAX_CUSTOM_PRIORITY_SCORE = 10


@dataclass(frozen=True)
class ResourceSpec:
    name: str
    weight: int = 1


@dataclass(frozen=True)
class UtilizationShapePoint:
    utilization: int  # 0..100
    score: int  # 0..10 (MaxCustomPriorityScore)


DEFAULT_RESOURCES = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@dataclass(frozen=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[UtilizationShapePoint, ...] = ()  # requestedToCapacityRatio.shape


@dataclass(frozen=True)
class NodeResourcesFitArgs:
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)


@dataclass(frozen=True)
class NodeResourcesBalancedAllocationArgs:
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES


@dataclass(frozen=True)
class NodeAffinityArgs:
    # addedAffinity: applied to every pod of the profile on top of the pod's own affinity.
    added_required_terms: tuple[NodeSelectorTerm, ...] | None = None
    added_preferred_terms: tuple[PreferredTerm, ...] = ()
