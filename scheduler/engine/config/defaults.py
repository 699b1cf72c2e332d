"""kube-scheduler's defaults (pkg/scheduler/apis/config/v1/default_plugins.go and defaults.go): the default
multiPoint plugin list, the default profile and configuration, and mergePluginSet."""

from __future__ import annotations

from ..pods import DEFAULT_SCHEDULER_NAME
from .types import MODELLED_POINTS, PRE_ENQUEUE_PLUGINS, PluginSet, ProfileConfig, SchedulerConfig

# As getDefaultPlugins (current master, DynamicResourceAllocation GA and on): the multiPoint list.
DEFAULT_MULTI_POINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", None),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)
# In-tree plugins upstream registers that we accept by name but do not model.
UNMODELLED_PLUGINS = frozenset(n for n, _ in DEFAULT_MULTI_POINT if n not in MODELLED_POINTS and n not in PRE_ENQUEUE_PLUGINS)


def default_expansion() -> tuple[list[str], list[tuple[str, int]]]:
    """The filters and weighted scores the default multiPoint list expands to, among the plugins we model."""
    filters = [n for n, _ in DEFAULT_MULTI_POINT if "filter" in MODELLED_POINTS.get(n, ())]
    scores = [(n, w or 1) for n, w in DEFAULT_MULTI_POINT if "score" in MODELLED_POINTS.get(n, ())]
    return filters, scores


# The PostFilter plugins of the default list (DefaultPreemption).
DEFAULT_POST_FILTERS: tuple[str, ...] = tuple(n for n, _ in DEFAULT_MULTI_POINT if "postFilter" in MODELLED_POINTS.get(n, ()))


def default_profile(scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> ProfileConfig:
    """kube-scheduler's default profile restricted to the plugins we model."""
    filters, scores = default_expansion()
    return ProfileConfig(scheduler_name=scheduler_name, filters=filters, scores=scores,
                         post_filters=list(DEFAULT_POST_FILTERS))


def default_config() -> SchedulerConfig:
    return SchedulerConfig(profiles=[default_profile()])


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """As mergePluginSet: defaults minus disabled (all with "*"), re-configured in place, then the rest."""
    disabled = set(custom.disabled) | set(default.disabled)
    custom_index = {name: i for i, (name, _) in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[tuple[str, int | None]] = []
    if "*" not in disabled:
        for name, weight in default.enabled:
            if name in disabled:
                continue
            if name in custom_index:
                i = custom_index[name]
                name, weight = custom.enabled[i]
                replaced.add(i)
            enabled.append((name, weight))
    enabled += [p for i, p in enumerate(custom.enabled) if i not in replaced]
    return PluginSet(enabled, list(custom.disabled) + list(default.disabled))
