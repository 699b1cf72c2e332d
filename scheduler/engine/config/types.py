"""The configuration schedboard runs, as kube-scheduler's internal types (pkg/scheduler/apis/config/types.go):
the profiles, their plugins and args, and the names of upstream's API that the loader and dumper share."""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import framework, plugins
from ..plugin_args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
)
from ..plugins.default_preemption import DefaultPreemptionArgs
from ..plugins.inter_pod_affinity import InterPodAffinityArgs
from ..plugins.pod_topology_spread import PodTopologySpreadArgs
from ..pods import DEFAULT_SCHEDULER_NAME

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_POD_INITIAL_BACKOFF_SECONDS = 1
DEFAULT_POD_MAX_BACKOFF_SECONDS = 10

# ---------------------------------------------------------------- plugins and extension points

# As framework.getExtensionPoints (plus multiPoint); the Go interface name is what upstream's
# framework errors print ("FilterPlugin \"Foo\" does not exist").
EXTENSION_POINTS = {
    "preFilter": "PreFilterPlugin",
    "filter": "FilterPlugin",
    "postFilter": "PostFilterPlugin",
    "reserve": "ReservePlugin",
    "preScore": "PreScorePlugin",
    "score": "ScorePlugin",
    "preBind": "PreBindPlugin",
    "bind": "BindPlugin",
    "postBind": "PostBindPlugin",
    "permit": "PermitPlugin",
    "preEnqueue": "PreEnqueuePlugin",
    "queueSort": "QueueSortPlugin",
}
# Extension points of the workload (pod group) scheduling cycle; nothing we model implements them.
WORKLOAD_EXTENSION_POINTS = ("placementGenerate", "placementScore", "placementFeasible", "podGroupPostFilter")

# The extension points each plugin we model implements upstream.
MODELLED_POINTS: dict[str, frozenset[str]] = {
    "NodeUnschedulable": frozenset({"filter"}),
    "NodeName": frozenset({"preFilter", "filter"}),
    "TaintToleration": frozenset({"filter", "preScore", "score"}),
    "NodeAffinity": frozenset({"preFilter", "filter", "preScore", "score"}),
    "NodePorts": frozenset({"preFilter", "filter"}),
    "NodeResourcesFit": frozenset({"preFilter", "filter", "preScore", "score"}),
    "NodeResourcesBalancedAllocation": frozenset({"preScore", "score"}),
    "ImageLocality": frozenset({"score"}),
    "PodTopologySpread": frozenset({"preFilter", "filter", "preScore", "score"}),
    "InterPodAffinity": frozenset({"preFilter", "filter", "preScore", "score"}),
    "DefaultPreemption": frozenset({"postFilter"}),
}
MODELLED = tuple(MODELLED_POINTS)

# As validation.invalidPluginsByVersion: removed plugins, rejected by name in v1.
INVALID_PLUGINS = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")
# Plugins with a registered *Args type; the others take no args upstream.
ARGS_PLUGINS = ("NodeResourcesFit", "NodeResourcesBalancedAllocation", "NodeAffinity", "PodTopologySpread",
                "InterPodAffinity", "DefaultPreemption")

SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)  # sorted, as sets.List

# The in-tree plugins implementing QueueSort and Bind. We run neither (the queue orders by priority,
# the loop binds), but upstream's framework refuses a profile without exactly one queue sort and at
# least one binder, so a profile keeps which of them are on, and validation counts them.
QUEUE_SORT_PLUGINS = ("PrioritySort",)
BIND_PLUGINS = ("DefaultBinder",)
# The in-tree PreEnqueue plugin: SchedulingGates (engine/scheduling_gates.py). A profile keeps whether it is
# on so a configuration loads and exports as upstream's; gated pods are held either way (see the loader).
PRE_ENQUEUE_PLUGINS = ("SchedulingGates",)
# Unmodelled plugins that implement ScorePlugin: their weights count in upstream's overflow check.
UNMODELLED_SCORE_PLUGINS = frozenset({"VolumeBinding"})

TOP_LEVEL_UNMODELLED = (
    "parallelism", "leaderElection", "clientConnection", "enableProfiling", "enableContentionProfiling",
    "percentageOfPlacementsToScore", "extenders", "delayCacheUntilActive",
)
TOP_LEVEL_FIELDS = ("apiVersion", "kind", "percentageOfNodesToScore", "podInitialBackoffSeconds",
                    "podMaxBackoffSeconds", "profiles") + TOP_LEVEL_UNMODELLED
PROFILE_FIELDS = ("schedulerName", "percentageOfNodesToScore", "percentageOfPlacementsToScore", "plugins", "pluginConfig")


class ConfigError(Exception):
    """A configuration kube-scheduler would refuse; `problems` pairs a field path with upstream's message."""

    def __init__(self, problems: list[tuple[str, str]], filename: str = "<config>"):
        self.problems = list(problems)
        self.filename = filename
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(f"{self.filename}: {p}: {m}" if p else f"{self.filename}: {m}" for p, m in self.problems)


@dataclass
class PluginSet:
    """As config.PluginSet: the plugins enabled (with their weights) and disabled at one extension point."""

    enabled: list[tuple[str, int | None]] = field(default_factory=list)  # (name, weight)
    disabled: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- the declarative model


@dataclass
class ProfileConfig:
    """One profile, reduced to what schedboard runs: filters, weighted scores and plugin args."""

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    percentage_of_nodes_to_score: int | None = None
    filters: list[str] = field(default_factory=list)
    scores: list[tuple[str, int]] = field(default_factory=list)
    # PostFilter plugins (DefaultPreemption), run in order when a pod fits nowhere. Empty unless given:
    # default_profile() and the loader give upstream's default (DefaultPreemption).
    post_filters: list[str] = field(default_factory=list)
    plugin_args: dict[str, object] = field(default_factory=dict)
    queue_sort: tuple[str, ...] = QUEUE_SORT_PLUGINS
    binders: tuple[str, ...] = BIND_PLUGINS
    pre_enqueue: tuple[str, ...] = PRE_ENQUEUE_PLUGINS

    def __post_init__(self) -> None:
        # As getScoreWeights: a weight of 0 means 1 (so a stored 0 dumps and loads back unchanged).
        self.scores = [(str(n), int(w) or 1) for n, w in self.scores]
        self.queue_sort, self.binders = tuple(self.queue_sort), tuple(self.binders)
        self.pre_enqueue = tuple(self.pre_enqueue)
        self.post_filters = list(self.post_filters)

    def args_for(self, name: str) -> object | None:
        """The args a plugin is built with: the configured ones, else upstream's defaults."""
        if name in self.plugin_args:
            return self.plugin_args[name]
        return {"NodeResourcesFit": NodeResourcesFitArgs, "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs,
                "NodeAffinity": NodeAffinityArgs, "PodTopologySpread": PodTopologySpreadArgs,
                "InterPodAffinity": InterPodAffinityArgs, "DefaultPreemption": DefaultPreemptionArgs}.get(name, lambda: None)()

    def build(self, version: int = 0, *, global_percentage_of_nodes_to_score: int | None = None) -> framework.Profile:
        """Instantiate the plugins (one instance per plugin, shared by its extension points, as upstream)."""
        instances: dict[str, object] = {}

        def instance(name: str) -> object:
            if name not in instances:
                cls = plugins.plugin_class(name)
                args = self.args_for(name)
                instances[name] = cls(args) if args is not None else cls()
            return instances[name]

        # As numFeasibleNodesToFind: the profile's value wins, else the global one.
        pct = self.percentage_of_nodes_to_score
        if pct is None:
            pct = global_percentage_of_nodes_to_score
        return framework.Profile(
            scheduler_name=self.scheduler_name,
            filters=[instance(n) for n in self.filters],
            scores=[(instance(n), w) for n, w in self.scores],
            post_filters=[instance(n) for n in self.post_filters],
            percentage_of_nodes_to_score=pct,
            version=version,
        )


@dataclass
class SchedulerConfig:
    profiles: list[ProfileConfig] = field(default_factory=list)
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int = DEFAULT_POD_INITIAL_BACKOFF_SECONDS
    pod_max_backoff_seconds: int = DEFAULT_POD_MAX_BACKOFF_SECONDS
    warnings: list[str] = field(default_factory=list, compare=False)

    def profile(self, scheduler_name: str) -> ProfileConfig | None:
        return next((p for p in self.profiles if p.scheduler_name == scheduler_name), None)

    def build_profiles(self, version: int = 0) -> dict[str, framework.Profile]:
        return {
            p.scheduler_name: p.build(version, global_percentage_of_nodes_to_score=self.percentage_of_nodes_to_score)
            for p in self.profiles
        }
