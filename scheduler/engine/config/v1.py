"""The v1 wire form (kubescheduler.config.k8s.io/v1) of what schedboard runs: plugin args as kube-scheduler
prints them, a whole KubeSchedulerConfiguration that upstream accepts and that loads back the same, and
the JSON a configuration version is stored as (its plugin args in the v1 form; decode.py reads it back)."""

from __future__ import annotations

from typing import Any

import yaml

from ..plugins.default_preemption import DefaultPreemptionArgs
from ..plugins.inter_pod_affinity import InterPodAffinityArgs
from ..plugins.pod_topology_spread import PodTopologySpreadArgs
from .topology_args import inter_pod_affinity_args_to_v1, pod_topology_spread_args_to_v1
from ..plugin_args import REQUESTED_TO_CAPACITY_RATIO, NodeAffinityArgs, NodeResourcesBalancedAllocationArgs, NodeResourcesFitArgs
from ..pods import NodeSelectorTerm
from .defaults import DEFAULT_POST_FILTERS, default_expansion
from .types import (API_VERSION, BIND_PLUGINS, KIND, MODELLED, MODELLED_POINTS, PRE_ENQUEUE_PLUGINS, QUEUE_SORT_PLUGINS,
                    ProfileConfig, SchedulerConfig)


def _term_to_v1(term: NodeSelectorTerm) -> dict:
    out: dict[str, Any] = {}
    for key, reqs in (("matchExpressions", term.match_expressions), ("matchFields", term.match_fields)):
        if reqs:
            items = []
            for r in reqs:
                item: dict[str, Any] = {"key": r.key, "operator": r.operator}
                if r.values:
                    item["values"] = list(r.values)
                items.append(item)
            out[key] = items
    return out


def args_to_v1(name: str, args: object) -> dict:
    """A plugin's args in the v1 wire form, fully defaulted (as kube-scheduler prints them)."""
    out: dict[str, Any] = {"apiVersion": API_VERSION, "kind": f"{name}Args"}
    if isinstance(args, NodeResourcesFitArgs):
        if args.ignored_resources:
            out["ignoredResources"] = list(args.ignored_resources)
        if args.ignored_resource_groups:
            out["ignoredResourceGroups"] = list(args.ignored_resource_groups)
        s = args.scoring_strategy
        strategy: dict[str, Any] = {"type": s.type, "resources": [{"name": r.name, "weight": r.weight} for r in s.resources]}
        if s.type == REQUESTED_TO_CAPACITY_RATIO:
            strategy["requestedToCapacityRatio"] = {"shape": [{"utilization": p.utilization, "score": p.score} for p in s.shape]}
        out["scoringStrategy"] = strategy
    elif isinstance(args, NodeResourcesBalancedAllocationArgs):
        out["resources"] = [{"name": r.name, "weight": r.weight} for r in args.resources]
    elif isinstance(args, NodeAffinityArgs):
        added: dict[str, Any] = {}
        if args.added_required_terms is not None:
            added["requiredDuringSchedulingIgnoredDuringExecution"] = {
                "nodeSelectorTerms": [_term_to_v1(t) for t in args.added_required_terms]}
        if args.added_preferred_terms:
            added["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": t.weight, "preference": _term_to_v1(t.preference)} for t in args.added_preferred_terms]
        if added:
            out["addedAffinity"] = added
    elif isinstance(args, PodTopologySpreadArgs):
        out.update(pod_topology_spread_args_to_v1(args))
    elif isinstance(args, InterPodAffinityArgs):
        out.update(inter_pod_affinity_args_to_v1(args))
    elif isinstance(args, DefaultPreemptionArgs):
        out["minCandidateNodesPercentage"] = args.min_candidate_nodes_percentage
        out["minCandidateNodesAbsolute"] = args.min_candidate_nodes_absolute
    else:
        raise TypeError(f"no v1 form for args of plugin {name}: {args!r}")
    return out


def plugins_to_v1(profile: ProfileConfig) -> dict | None:
    """Upstream plugin sets that expand to exactly our profile (None for the default profile).

    Our plugins are taken out of multiPoint and listed at each extension point explicitly, so
    upstream's unmodelled defaults (volume plugins, ...) stay as they are; queue sort and bind are
    written only when they differ from upstream's default (which validation then refuses).
    """
    out: dict[str, Any] = {}
    filters, scores = default_expansion()
    if profile.filters != filters or profile.scores != scores or tuple(profile.post_filters) != DEFAULT_POST_FILTERS:
        out = _modelledplugins_to_v1(profile)
    for point, names, default in (("queueSort", profile.queue_sort, QUEUE_SORT_PLUGINS),
                                  ("bind", profile.binders, BIND_PLUGINS),
                                  ("preEnqueue", profile.pre_enqueue, PRE_ENQUEUE_PLUGINS)):
        if tuple(names) != default:
            item: dict[str, Any] = {"disabled": [{"name": n} for n in default]}
            if names:
                item["enabled"] = [{"name": n} for n in names]
            out[point] = item
    return out or None


def _modelledplugins_to_v1(profile: ProfileConfig) -> dict:
    for n in profile.filters:
        if "filter" not in MODELLED_POINTS.get(n, ()):
            raise ValueError(f"{profile.scheduler_name}: {n} is not a filter plugin")
    for n, _ in profile.scores:
        if "score" not in MODELLED_POINTS.get(n, ()):
            raise ValueError(f"{profile.scheduler_name}: {n} is not a score plugin")
    for n in profile.post_filters:
        if "postFilter" not in MODELLED_POINTS.get(n, ()):
            raise ValueError(f"{profile.scheduler_name}: {n} is not a postFilter plugin")

    def enabled(items: list[tuple[str, int | None]]) -> dict:
        return {"enabled": [{"name": n} if w is None else {"name": n, "weight": w} for n, w in items]}

    # An empty point is expressed by listing nothing there: disabling "*" would also drop
    # upstream's unmodelled plugins at that point.
    out: dict[str, Any] = {"multiPoint": {"disabled": [{"name": n} for n in MODELLED]}}
    points = {
        "preFilter": [(n, None) for n in profile.filters if "preFilter" in MODELLED_POINTS[n]],
        "filter": [(n, None) for n in profile.filters],
        "postFilter": [(n, None) for n in profile.post_filters],
        "preScore": [(n, None) for n, _ in profile.scores if "preScore" in MODELLED_POINTS[n]],
        "score": list(profile.scores),
    }
    for point, items in points.items():
        if items:
            out[point] = enabled(items)
    return out


def dump_config(cfg: SchedulerConfig) -> str:
    """A v1 KubeSchedulerConfiguration that upstream accepts and that loads back to `cfg`."""
    doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
    if cfg.percentage_of_nodes_to_score is not None:
        doc["percentageOfNodesToScore"] = cfg.percentage_of_nodes_to_score
    doc["podInitialBackoffSeconds"] = cfg.pod_initial_backoff_seconds
    doc["podMaxBackoffSeconds"] = cfg.pod_max_backoff_seconds
    profiles = []
    for p in cfg.profiles:
        item: dict[str, Any] = {"schedulerName": p.scheduler_name}
        if p.percentage_of_nodes_to_score is not None:
            item["percentageOfNodesToScore"] = p.percentage_of_nodes_to_score
        plugins = plugins_to_v1(p)
        if plugins is not None:
            item["plugins"] = plugins
        if p.plugin_args:
            item["pluginConfig"] = [{"name": name, "args": args_to_v1(name, p.plugin_args[name])}
                                    for name in sorted(p.plugin_args)]
        profiles.append(item)
    doc["profiles"] = profiles
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True)


# ---------------------------------------------------------------- the stored form (per configuration version)


def profile_to_dict(profile: ProfileConfig) -> dict:
    """JSON-serialisable; plugin args are kept in their v1 wire form."""
    out = {
        "scheduler_name": profile.scheduler_name,
        "percentage_of_nodes_to_score": profile.percentage_of_nodes_to_score,
        "filters": list(profile.filters),
        "scores": [[n, w] for n, w in profile.scores],
        "post_filters": list(profile.post_filters),
        "plugin_args": {name: args_to_v1(name, args) for name, args in profile.plugin_args.items()},
    }
    # Only a profile that fails validation differs here, so stored versions never carry these keys.
    if profile.queue_sort != QUEUE_SORT_PLUGINS:
        out["queue_sort"] = list(profile.queue_sort)
    if profile.binders != BIND_PLUGINS:
        out["binders"] = list(profile.binders)
    if profile.pre_enqueue != PRE_ENQUEUE_PLUGINS:  # SchedulingGates disabled
        out["pre_enqueue"] = list(profile.pre_enqueue)
    return out


def config_to_dict(cfg: SchedulerConfig) -> dict:
    """JSON-serialisable, as stored per configuration version; warnings are not part of it."""
    return {
        "percentage_of_nodes_to_score": cfg.percentage_of_nodes_to_score,
        "pod_initial_backoff_seconds": cfg.pod_initial_backoff_seconds,
        "pod_max_backoff_seconds": cfg.pod_max_backoff_seconds,
        "profiles": [profile_to_dict(p) for p in cfg.profiles],
    }
