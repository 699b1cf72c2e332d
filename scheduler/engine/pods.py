"""PodSpec: what the scheduler needs to know about one pod, already parsed and in integer units.

Built by the manifest parser (scheduler/manifests/) or by the models; the engine never
reads a raw manifest.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .labels import OP_IN, OP_NOT_IN, LabelSelector, merge_label_keys
from .resources import CPU, DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, MEMORY, PODS

HUGEPAGES_PREFIX = "hugepages-"
DEFAULT_SCHEDULER_NAME = "default-scheduler"  # v1.DefaultSchedulerName: a pod that names no scheduler

Resources = dict[str, int]

# Node selector operators (NodeSelectorRequirement.operator); In/NotIn are metav1's too.
OP_EXISTS, OP_DOES_NOT_EXIST, OP_GT, OP_LT = "Exists", "DoesNotExist", "Gt", "Lt"

# Taint effects.
NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "PreferNoSchedule", "NoExecute"


@dataclass(frozen=True)
class Requirement:
    """A NodeSelectorRequirement: key, operator and values (match_expressions or match_fields)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeSelectorTerm:
    """Requirements ANDed together; a term with no requirements matches no node (as upstream)."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()


@dataclass(frozen=True)
class PreferredTerm:
    weight: int
    preference: NodeSelectorTerm


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # "" matches every effect
    toleration_seconds: int | None = None


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = NO_SCHEDULE


@dataclass(frozen=True)
class HostPort:
    """A container port with hostPort set, as NodePorts sees it."""

    port: int
    protocol: str = "TCP"
    ip: str = "0.0.0.0"


@dataclass(frozen=True)
class Container:
    name: str
    image: str = ""
    requests: Resources = field(default_factory=dict)
    ports: tuple[HostPort, ...] = ()
    restart_policy: str | None = None  # "Always" on an init container makes it a sidecar


# PodSpec.preemptionPolicy (v1.PreemptionPolicy).
PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER = "PreemptLowerPriority", "Never"
# The reason of the DisruptionTarget condition the scheduler sets on a victim (v1.PodReasonPreemptionByScheduler).
POD_REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

# TopologySpreadConstraint.whenUnsatisfiable.
DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
# NodeInclusionPolicy (nodeAffinityPolicy, nodeTaintsPolicy).
HONOR, IGNORE = "Honor", "Ignore"


@dataclass(frozen=True)
class TopologySpreadConstraint:
    """A v1.TopologySpreadConstraint as stored. None stands for an unset (nil) field: the plugin
    defaults minDomains to 1, nodeAffinityPolicy to Honor and nodeTaintsPolicy to Ignore."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str = DO_NOT_SCHEDULE
    label_selector: LabelSelector | None = None  # None: nil, selects nothing
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class PodAffinityTerm:
    """A v1.PodAffinityTerm. The scheduler reads label_selector as stored: kube-apiserver has already
    merged matchLabelKeys / mismatchLabelKeys into it at creation (see with_label_keys_merged)."""

    topology_key: str
    label_selector: LabelSelector | None = None  # None: nil, matches no pod
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None  # None: nil; LabelSelector(): every namespace
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True)
class PodAffinity:
    """v1.PodAffinity or v1.PodAntiAffinity (the same shape): requiredDuringScheduling... and
    preferredDuringScheduling...IgnoredDuringExecution."""

    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()


@dataclass(frozen=True)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    controller: bool = False


@dataclass
class PodSpec:
    namespace: str
    name: str
    uid: str = ""
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    priority: int = 0
    node_name: str = ""  # spec.nodeName: set means bound (or the NodeName plugin's target)
    node_selector: dict[str, str] = field(default_factory=dict)
    required_terms: tuple[NodeSelectorTerm, ...] | None = None  # None: no required node affinity
    preferred_terms: tuple[PreferredTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: Resources = field(default_factory=dict)
    # spec.resources.requests (PodLevelResources), defaulted as the API server does: for the resources
    # it names (cpu, memory, hugepages-*) these replace what the containers add up to.
    pod_level_requests: Resources = field(default_factory=dict)
    deleting: bool = False  # metadata.deletionTimestamp set
    labels: dict[str, str] = field(default_factory=dict)
    owner_references: tuple[OwnerReference, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    pod_affinity: PodAffinity | None = None  # spec.affinity.podAffinity (None: unset)
    pod_anti_affinity: PodAffinity | None = None  # spec.affinity.podAntiAffinity
    # What preemption reads (DefaultPreemption): spec.preemptionPolicy (resolved from the PriorityClass
    # by admission), status.startTime as seconds since the epoch (None: not started, read as "now" as
    # util.GetPodStartTime does), status.nominatedNodeName, and the reason of a True DisruptionTarget
    # condition ("PreemptionByScheduler" on a victim the scheduler is evicting).
    preemption_policy: str = PREEMPT_LOWER_PRIORITY
    start_time: float | None = None
    nominated_node_name: str = ""
    disruption_target_reason: str = ""
    # spec.schedulingGates' names: while any is left the SchedulingGates PreEnqueue plugin keeps it out of the queue.
    scheduling_gates: tuple[str, ...] = ()
    # Computed from the containers and pod-level requests in __post_init__ (as resource.PodRequests does).
    requests: Resources = field(init=False)
    nonzero_requests: Resources = field(init=False)
    host_ports: tuple[HostPort, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.requests = pod_requests(self.containers, self.init_containers, self.overhead, self.pod_level_requests)
        self.requests[PODS] = 1
        # As NonMissingContainerRequests: each container without a cpu/memory request counts the default,
        # and a pod-level request still replaces the sum (so a pod-level cpu request is the pod's cpu).
        defaulted = tuple(_with_nonzero_defaults(c) for c in self.containers)
        defaulted_init = tuple(_with_nonzero_defaults(c) for c in self.init_containers)
        full = pod_requests(defaulted, defaulted_init, self.overhead, self.pod_level_requests)
        self.nonzero_requests = {CPU: full.get(CPU, 0), MEMORY: full.get(MEMORY, 0)}
        # As schedutil.GetHostPorts: only sidecar init containers (restartPolicy Always) hold their
        # host ports for the pod's life; an ordinary init container has exited before the rest start.
        sidecars = tuple(c for c in self.init_containers if c.restart_policy == "Always")
        self.host_ports = tuple(p for c in sidecars + self.containers for p in c.ports if p.port > 0)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def controller(self) -> OwnerReference | None:
        """As metav1.GetControllerOf: the first owner reference marked as the controller."""
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None

    @property
    def images(self) -> tuple[str, ...]:
        return tuple(c.image for c in self.containers if c.image)


def _add(into: Resources, more: Resources) -> None:
    for name, value in more.items():
        into[name] = into.get(name, 0) + value


def _max(into: Resources, other: Resources) -> None:
    for name, value in other.items():
        if value > into.get(name, 0):
            into[name] = value


def is_supported_pod_level_resource(name: str) -> bool:
    """As resource.IsSupportedPodLevelResource: what spec.resources may name."""
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def pod_requests(containers, init_containers, overhead: Resources, pod_level: Resources | None = None) -> Resources:
    """The pod's effective requests, as k8s.io/component-helpers resource.PodRequests.

    Regular containers add up; an init container runs alone (with the sidecars started
    before it), so the pod needs the larger of the two; sidecars (restartPolicy Always)
    run for the pod's whole life and count in both; pod-level requests then replace the
    result for the resources they name (applyPodLevelResources); overhead comes on top.
    """
    reqs: Resources = {}
    for c in containers:
        _add(reqs, c.requests)
    init_max: Resources = {}
    sidecars: Resources = {}
    for ic in init_containers:
        if ic.restart_policy == "Always":
            _add(reqs, ic.requests)
            _add(sidecars, ic.requests)
            need = dict(sidecars)
        else:
            need = dict(ic.requests)
            _add(need, sidecars)
        _max(init_max, need)
    _max(reqs, init_max)
    for name, value in (pod_level or {}).items():
        if is_supported_pod_level_resource(name):
            reqs[name] = value
    _add(reqs, overhead)
    return reqs


def _with_nonzero_defaults(c: Container) -> Container:
    """A container whose missing cpu/memory requests read as the scoring defaults (schedutil.GetNonzeroRequests)."""
    reqs = dict(c.requests)
    reqs.setdefault(CPU, DEFAULT_MILLI_CPU_REQUEST)
    reqs.setdefault(MEMORY, DEFAULT_MEMORY_REQUEST)
    return Container(name=c.name, image=c.image, requests=reqs, ports=c.ports, restart_policy=c.restart_policy)


def derived(pod: PodSpec, key: object, sources: tuple, make):
    """Per-pod data a plugin derives once and reuses on every cycle and retry of that pod.

    Kept on the pod, keyed by `key` (e.g. the plugin instance), and recomputed when any of
    `sources` (the pod attributes it derives from) is no longer the same object. PodSpec fields
    are treated as values: replace them, never mutate them in place, or the memo goes stale.
    """
    memo = pod.__dict__.get("_derived")
    if memo is None:
        memo = pod.__dict__["_derived"] = {}
    hit = memo.get(key)
    if hit is not None and len(hit[0]) == len(sources) and all(a is b for a, b in zip(hit[0], sources)):
        return hit[1]
    value = make()
    memo[key] = (sources, value)
    return value


def with_label_keys_merged(pod: PodSpec) -> PodSpec:
    """The pod as kube-apiserver stores it on creation (pkg/registry/core/pod/strategy.go):
    matchLabelKeys of pod (anti-)affinity terms merged into their labelSelector as `key In (value)`,
    mismatchLabelKeys as `key NotIn (value)` (MatchLabelKeysInPodAffinity, GA), and matchLabelKeys of
    topology spread constraints as `key In (value)` (MatchLabelKeysInPodTopologySpreadSelectorMerge,
    on by default since 1.34). Keys the pod has no label for add nothing; a nil selector stays nil.
    The keys themselves stay in the spec, as upstream keeps them."""

    def term(t: PodAffinityTerm) -> PodAffinityTerm:
        if not t.match_label_keys and not t.mismatch_label_keys:
            return t
        sel = merge_label_keys(t.label_selector, t.match_label_keys, OP_IN, pod.labels)
        sel = merge_label_keys(sel, t.mismatch_label_keys, OP_NOT_IN, pod.labels)
        return replace(t, label_selector=sel)

    def affinity(a: PodAffinity | None) -> PodAffinity | None:
        if a is None:
            return None
        return PodAffinity(tuple(term(t) for t in a.required),
                           tuple(WeightedPodAffinityTerm(w.weight, term(w.term)) for w in a.preferred))

    constraints = tuple(
        replace(c, label_selector=merge_label_keys(c.label_selector, c.match_label_keys, OP_IN, pod.labels))
        if c.match_label_keys else c
        for c in pod.topology_spread_constraints
    )
    return replace(pod, pod_affinity=affinity(pod.pod_affinity), pod_anti_affinity=affinity(pod.pod_anti_affinity),
                   topology_spread_constraints=constraints)
