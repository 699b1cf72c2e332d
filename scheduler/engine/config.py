"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) to and from our declarative profiles.

Loading follows kube-scheduler: strict decoding, SetDefaults_* (pkg/scheduler/apis/config/v1/
defaults.go), mergePlugins (default_plugins.go), the framework's multiPoint expansion
(framework/runtime/framework.go) and ValidateKubeSchedulerConfiguration (apis/config/validation),
with upstream's field paths and field.Error wording. What schedboard does not model is reported
as a warning, never silently dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from . import framework
from .k8s_validation import is_qualified_name, is_valid_label_value
from .plugin_args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from .pods import NodeSelectorTerm, PreferredTerm, Requirement
from .yaml_safe import DecodeProblem, load_yaml

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"  # v1.DefaultSchedulerName
DEFAULT_POD_INITIAL_BACKOFF_SECONDS = 1
DEFAULT_POD_MAX_BACKOFF_SECONDS = 10
MAX_CUSTOM_PRIORITY_SCORE = 10  # config.MaxCustomPriorityScore
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

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
}
MODELLED = tuple(MODELLED_POINTS)

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
UNMODELLED_PLUGINS = frozenset(n for n, _ in DEFAULT_MULTI_POINT if n not in MODELLED_POINTS)
# As validation.invalidPluginsByVersion: removed plugins, rejected by name in v1.
INVALID_PLUGINS = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")
# Plugins with a registered *Args type; the others take no args upstream.
ARGS_PLUGINS = ("NodeResourcesFit", "NodeResourcesBalancedAllocation", "NodeAffinity")

SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)  # sorted, as sets.List

# The in-tree plugins implementing QueueSort and Bind. We run neither (the queue orders by priority,
# the loop binds), but upstream's framework refuses a profile without exactly one queue sort and at
# least one binder, so a profile keeps which of them are on, and validation counts them.
QUEUE_SORT_PLUGINS = ("PrioritySort",)
BIND_PLUGINS = ("DefaultBinder",)
# Unmodelled plugins that implement ScorePlugin: their weights count in upstream's overflow check.
UNMODELLED_SCORE_PLUGINS = frozenset({"PodTopologySpread", "InterPodAffinity", "VolumeBinding"})
MAX_NODE_SCORE = 100  # framework.MaxNodeScore
MAX_TOTAL_SCORE = INT64_MAX  # framework.MaxTotalScore (math.MaxInt64)

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


# ---------------------------------------------------------------- the declarative model


@dataclass
class ProfileConfig:
    """One profile, reduced to what schedboard runs: filters, weighted scores and plugin args."""

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    percentage_of_nodes_to_score: int | None = None
    filters: list[str] = field(default_factory=list)
    scores: list[tuple[str, int]] = field(default_factory=list)
    plugin_args: dict[str, object] = field(default_factory=dict)
    queue_sort: tuple[str, ...] = QUEUE_SORT_PLUGINS
    binders: tuple[str, ...] = BIND_PLUGINS

    def __post_init__(self) -> None:
        # As getScoreWeights: a weight of 0 means 1 (so a stored 0 dumps and loads back unchanged).
        self.scores = [(str(n), int(w) or 1) for n, w in self.scores]
        self.queue_sort, self.binders = tuple(self.queue_sort), tuple(self.binders)

    def to_dict(self) -> dict:
        """JSON-serialisable; plugin args are kept in their v1 wire form."""
        out = {
            "scheduler_name": self.scheduler_name,
            "percentage_of_nodes_to_score": self.percentage_of_nodes_to_score,
            "filters": list(self.filters),
            "scores": [[n, w] for n, w in self.scores],
            "plugin_args": {name: _args_to_v1(name, args) for name, args in self.plugin_args.items()},
        }
        # Only a profile that fails validation differs here, so stored versions never carry these keys.
        if self.queue_sort != QUEUE_SORT_PLUGINS:
            out["queue_sort"] = list(self.queue_sort)
        if self.binders != BIND_PLUGINS:
            out["binders"] = list(self.binders)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> ProfileConfig:
        ctx = _Ctx()
        args = {}
        for name, raw in (data.get("plugin_args") or {}).items():
            parsed = _parse_plugin_args(ctx, name, raw, f"plugin_args[{name}]")
            if parsed is not None:
                args[name] = parsed
        if ctx.problems:
            raise ConfigError(ctx.problems, "<profile>")
        return cls(
            scheduler_name=data["scheduler_name"],
            percentage_of_nodes_to_score=data.get("percentage_of_nodes_to_score"),
            filters=list(data.get("filters") or []),
            scores=[(n, w) for n, w in data.get("scores") or []],
            plugin_args=args,
            queue_sort=tuple(data.get("queue_sort", QUEUE_SORT_PLUGINS)),
            binders=tuple(data.get("binders", BIND_PLUGINS)),
        )

    def args_for(self, name: str) -> object | None:
        """The args a plugin is built with: the configured ones, else upstream's defaults."""
        if name in self.plugin_args:
            return self.plugin_args[name]
        return {"NodeResourcesFit": NodeResourcesFitArgs, "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs,
                "NodeAffinity": NodeAffinityArgs}.get(name, lambda: None)()

    def build(self, version: int = 0, *, global_percentage_of_nodes_to_score: int | None = None) -> framework.Profile:
        """Instantiate the plugins (one instance per plugin, shared by its extension points, as upstream)."""
        from .plugins import plugin_class

        instances: dict[str, object] = {}

        def instance(name: str) -> object:
            if name not in instances:
                cls = plugin_class(name)
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

    def to_dict(self) -> dict:
        """JSON-serialisable, as stored per configuration version; warnings are not part of it."""
        return {
            "percentage_of_nodes_to_score": self.percentage_of_nodes_to_score,
            "pod_initial_backoff_seconds": self.pod_initial_backoff_seconds,
            "pod_max_backoff_seconds": self.pod_max_backoff_seconds,
            "profiles": [p.to_dict() for p in self.profiles],
        }

    @classmethod
    def from_dict(cls, data: dict) -> SchedulerConfig:
        return cls(
            profiles=[ProfileConfig.from_dict(p) for p in data.get("profiles") or []],
            percentage_of_nodes_to_score=data.get("percentage_of_nodes_to_score"),
            pod_initial_backoff_seconds=data.get("pod_initial_backoff_seconds", DEFAULT_POD_INITIAL_BACKOFF_SECONDS),
            pod_max_backoff_seconds=data.get("pod_max_backoff_seconds", DEFAULT_POD_MAX_BACKOFF_SECONDS),
        )

    def build_profiles(self, version: int = 0) -> dict[str, framework.Profile]:
        return {
            p.scheduler_name: p.build(version, global_percentage_of_nodes_to_score=self.percentage_of_nodes_to_score)
            for p in self.profiles
        }


def _default_expansion() -> tuple[list[str], list[tuple[str, int]]]:
    filters = [n for n, _ in DEFAULT_MULTI_POINT if "filter" in MODELLED_POINTS.get(n, ())]
    scores = [(n, w or 1) for n, w in DEFAULT_MULTI_POINT if "score" in MODELLED_POINTS.get(n, ())]
    return filters, scores


def default_profile(scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> ProfileConfig:
    """kube-scheduler's default profile restricted to the plugins we model."""
    filters, scores = _default_expansion()
    return ProfileConfig(scheduler_name=scheduler_name, filters=filters, scores=scores)


def default_config() -> SchedulerConfig:
    return SchedulerConfig(profiles=[default_profile()])


# ---------------------------------------------------------------- Go-style rendering of field errors


def _q(s: str) -> str:
    """Go's %q, close enough for the strings a config holds."""
    return json.dumps(s, ensure_ascii=False)


def _strings(values: list[str] | None) -> str:
    """Go's %#v of a []string."""
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(_q(v) for v in values) + "}"


def _invalid(path: str, value: str, detail: str) -> tuple[str, str]:
    return path, f"Invalid value: {value}: {detail}" if detail else f"Invalid value: {value}"


def _required(path: str, detail: str = "") -> tuple[str, str]:
    return path, "Required value" + (f": {detail}" if detail else "")


def _duplicate(path: str, value: str) -> tuple[str, str]:
    return path, f"Duplicate value: {value}"


def _forbidden(path: str, detail: str) -> tuple[str, str]:
    return path, f"Forbidden: {detail}"


def _not_supported(path: str, value: str, valid: tuple[str, ...] | list[str]) -> tuple[str, str]:
    return path, f"Unsupported value: {value}: supported values: " + ", ".join(_q(v) for v in valid)


def _parse_go_int64(text: str) -> bool:
    """As strconv.ParseInt(text, 10, 64) succeeding."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return False
    return INT64_MIN <= int(text) <= INT64_MAX


# ---------------------------------------------------------------- strict decoding

_GO_JSON_KIND = {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object", type(None): "null"}


class _Ctx:
    def __init__(self) -> None:
        self.problems: list[tuple[str, str]] = []
        self.warnings: list[str] = []

    def type_error(self, path: str, value: Any, go_type: str) -> None:
        kind = _GO_JSON_KIND.get(type(value), type(value).__name__)
        self.problems.append((path, f"cannot unmarshal {kind} into Go value of type {go_type}"))

    def obj(self, value: Any, path: str, fields: tuple[str, ...]) -> dict | None:
        """A JSON object with only known fields (strict decoding); None (and a problem) otherwise."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.type_error(path, value, "struct")
            return None
        for key in value:
            if key not in fields:
                where = f"{path}.{key}" if path else str(key)
                self.problems.append((where, f'strict decoding error: unknown field "{where}"'))
        return value

    def int_(self, value: Any, path: str, bits: int = 32) -> int | None:
        if value is None:
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        lo, hi = (INT32_MIN, INT32_MAX) if bits == 32 else (INT64_MIN, INT64_MAX)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            self.type_error(path, value, f"int{bits}")
            return None
        return value

    def str_(self, value: Any, path: str) -> str | None:
        if value is None:
            return ""
        if not isinstance(value, str):
            self.type_error(path, value, "string")
            return None
        return value

    def list_(self, value: Any, path: str, go_type: str) -> list | None:
        if value is None:
            return None
        if not isinstance(value, list):
            self.type_error(path, value, go_type)
            return []
        return value

    def strings(self, value: Any, path: str) -> list[str] | None:
        items = self.list_(value, path, "[]string")
        if items is None:
            return None
        out = []
        for i, v in enumerate(items):
            s = self.str_(v, f"{path}[{i}]")
            if s is not None:
                out.append(s)
        return out


# ---------------------------------------------------------------- plugin args


def _parse_plugin_args(ctx: _Ctx, name: str, raw: Any, path: str) -> object | None:
    """Decode, default and validate one plugin's args (v1 wire form) into our dataclass."""
    extra = ("apiVersion", "kind")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        ctx.type_error(path, raw, f"{name}Args")
        return None
    kind = raw.get("kind")
    if kind not in (None, "", f"{name}Args"):
        # As PluginConfig.decodeNestedObjects.
        ctx.problems.append((path, f"args for plugin {name} were not of type {name}Args.kubescheduler.config.k8s.io, "
                                   f"got {kind}.kubescheduler.config.k8s.io"))
        return None
    if raw.get("apiVersion") not in (None, "", API_VERSION):
        ctx.problems.append(_not_supported(f"{path}.apiVersion", _q(str(raw.get("apiVersion"))), (API_VERSION,)))
        return None
    if name == "NodeResourcesFit":
        return _parse_fit_args(ctx, ctx.obj(raw, path, extra + ("ignoredResources", "ignoredResourceGroups", "scoringStrategy")), path)
    if name == "NodeResourcesBalancedAllocation":
        return _parse_balanced_args(ctx, ctx.obj(raw, path, extra + ("resources",)), path)
    if name == "NodeAffinity":
        return _parse_node_affinity_args(ctx, ctx.obj(raw, path, extra + ("addedAffinity",)), path)
    return None


def _parse_resources(ctx: _Ctx, value: Any, path: str) -> list[tuple[str, int]]:
    out = []
    for i, item in enumerate(ctx.list_(value, path, "[]v1.ResourceSpec") or []):
        p = f"{path}[{i}]"
        m = ctx.obj(item, p, ("name", "weight"))
        if m is None:
            continue
        name = ctx.str_(m.get("name"), f"{p}.name")
        weight = ctx.int_(m.get("weight"), f"{p}.weight", bits=64)
        if name is not None:
            out.append((name, weight or 0))
    return out


def _parse_shape(ctx: _Ctx, value: Any, path: str) -> list[tuple[int, int]]:
    out = []
    for i, item in enumerate(ctx.list_(value, path, "[]v1.UtilizationShapePoint") or []):
        p = f"{path}[{i}]"
        m = ctx.obj(item, p, ("utilization", "score"))
        if m is None:
            continue
        u = ctx.int_(m.get("utilization"), f"{p}.utilization")
        s = ctx.int_(m.get("score"), f"{p}.score")
        out.append((u or 0, s or 0))
    return out


def _validate_shape(ctx: _Ctx, shape: list[tuple[int, int]], path: str) -> None:
    """As validateFunctionShape."""
    if not shape:
        ctx.problems.append(_required(path, "at least one point must be specified"))
        return
    for i in range(1, len(shape)):
        if shape[i - 1][0] >= shape[i][0]:
            ctx.problems.append(_invalid(f"{path}[{i}].utilization", str(shape[i][0]), "values must be sorted in increasing order"))
            break
    for i, (u, s) in enumerate(shape):
        if not 0 <= u <= 100:
            ctx.problems.append(_invalid(f"{path}[{i}].utilization", str(u), "not in valid range [0, 100]"))
        if not 0 <= s <= MAX_CUSTOM_PRIORITY_SCORE:
            ctx.problems.append(_invalid(f"{path}[{i}].score", str(s), f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"))


def _validate_label_names(ctx: _Ctx, names: list[str], path: str, *, group: bool = False) -> None:
    """As metav1validation.ValidateLabelName per item (one error per message)."""
    for i, res in enumerate(names):
        p = f"{path}[{i}]"
        if group and "/" in res:
            ctx.problems.append(_invalid(p, _q(res), "resource group name can't contain '/'"))
        for msg in is_qualified_name(res):
            ctx.problems.append(_invalid(p, _q(res), msg))


def _parse_fit_args(ctx: _Ctx, m: dict | None, path: str) -> NodeResourcesFitArgs | None:
    if m is None:
        return None
    n_before = len(ctx.problems)
    ignored = ctx.strings(m.get("ignoredResources"), f"{path}.ignoredResources") or []
    groups = ctx.strings(m.get("ignoredResourceGroups"), f"{path}.ignoredResourceGroups") or []
    sp = f"{path}.scoringStrategy"
    strategy_raw = m.get("scoringStrategy")
    # As SetDefaults_NodeResourcesFitArgs: no strategy -> LeastAllocated on cpu and memory;
    # no resources -> cpu and memory; a weight of 0 -> 1. An empty type is not defaulted.
    if strategy_raw is None:
        strategy = ScoringStrategy()
    else:
        sm = ctx.obj(strategy_raw, sp, ("type", "resources", "requestedToCapacityRatio"))
        if sm is None:
            return None
        stype = ctx.str_(sm.get("type"), f"{sp}.type") or ""
        resources = _parse_resources(ctx, sm.get("resources"), f"{sp}.resources")
        if not resources:
            resources = [(r.name, r.weight) for r in ScoringStrategy().resources]
        resources = [(n, w if w != 0 else 1) for n, w in resources]
        rtcr_raw = sm.get("requestedToCapacityRatio")
        shape: list[tuple[int, int]] = []
        # As ValidateNodeResourcesFitArgs.
        if stype not in SCORING_STRATEGY_TYPES:
            ctx.problems.append(_not_supported(f"{sp}.type", _q(stype), SCORING_STRATEGY_TYPES))
        for i, (rname, w) in enumerate(resources):
            if w <= 0 or w > 100:
                ctx.problems.append(_invalid(f"{sp}.resources[{i}].weight", str(w),
                                             f"resource weight of {rname} not in valid range (0, 100]"))
        rp = f"{sp}.requestedToCapacityRatio"
        if stype == REQUESTED_TO_CAPACITY_RATIO:
            if rtcr_raw is None:
                ctx.problems.append(_required(rp, "must be specified when type is RequestedToCapacityRatio"))
            else:
                rm = ctx.obj(rtcr_raw, rp, ("shape",))
                if rm is not None:
                    shape = _parse_shape(ctx, rm.get("shape"), f"{rp}.shape")
                    _validate_shape(ctx, shape, f"{rp}.shape")
        elif rtcr_raw is not None:
            ctx.problems.append(_forbidden(rp, "must be nil when type is not RequestedToCapacityRatio"))
        strategy = ScoringStrategy(
            type=stype,
            resources=tuple(ResourceSpec(n, w) for n, w in resources),
            shape=tuple(UtilizationShapePoint(u, s) for u, s in shape),
        )
    _validate_label_names(ctx, ignored, f"{path}.ignoredResources")
    _validate_label_names(ctx, groups, f"{path}.ignoredResourceGroups", group=True)
    if len(ctx.problems) != n_before:
        return None
    return NodeResourcesFitArgs(ignored_resources=tuple(ignored), ignored_resource_groups=tuple(groups), scoring_strategy=strategy)


def _parse_balanced_args(ctx: _Ctx, m: dict | None, path: str) -> NodeResourcesBalancedAllocationArgs | None:
    if m is None:
        return None
    n_before = len(ctx.problems)
    rp = f"{path}.resources"
    resources = _parse_resources(ctx, m.get("resources"), rp)
    # As SetDefaults_NodeResourcesBalancedAllocationArgs.
    if not resources:
        return NodeResourcesBalancedAllocationArgs() if len(ctx.problems) == n_before else None
    resources = [(n, w if w != 0 else 1) for n, w in resources]
    # As ValidateNodeResourcesBalancedAllocationArgs: unique names, every weight exactly 1.
    seen: set[str] = set()
    for i, (name, w) in enumerate(resources):
        if name in seen:
            ctx.problems.append(_duplicate(f"{rp}[{i}].name", _q(name)))
        seen.add(name)
        if w != 1:
            ctx.problems.append(_invalid(f"{rp}[{i}].weight", str(w), "must be 1"))
    if len(ctx.problems) != n_before:
        return None
    return NodeResourcesBalancedAllocationArgs(resources=tuple(ResourceSpec(n, w) for n, w in resources))


_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_FIELD_OPERATORS = ("In", "NotIn")


def _parse_requirements(ctx: _Ctx, value: Any, path: str, *, fields: bool) -> tuple[list[Requirement], list[tuple[str, str]]]:
    """Decode requirements; return them with the parse errors upstream's nodeaffinity helper reports."""
    reqs, errs = [], []
    for j, item in enumerate(ctx.list_(value, path, "[]v1.NodeSelectorRequirement") or []):
        p = f"{path}[{j}]"
        m = ctx.obj(item, p, ("key", "operator", "values"))
        if m is None:
            continue
        key = ctx.str_(m.get("key"), f"{p}.key")
        op = ctx.str_(m.get("operator"), f"{p}.operator")
        raw_values = m.get("values")
        values = ctx.strings(raw_values, f"{p}.values")
        if key is None or op is None:
            continue
        vals = values or []
        reqs.append(Requirement(key, op, tuple(vals)))
        if fields:
            # As nodeSelectorRequirementsAsFieldSelector: In/NotIn with exactly one value.
            if op in _FIELD_OPERATORS:
                if len(vals) != 1:
                    errs.append(_invalid(f"{p}.values", _strings(values), "must have one element"))
            else:
                errs.append(_not_supported(f"{p}.operator", _q(op), _FIELD_OPERATORS))
            continue
        # As nodeSelectorRequirementsAsSelector and labels.NewRequirement.
        if op not in _SELECTOR_OPERATORS:
            errs.append(_not_supported(f"{p}.operator", _q(op), _SELECTOR_OPERATORS))
            continue
        key_errs = is_qualified_name(key)
        if key_errs:
            errs.append(_invalid(f"{p}.key", _q(key), "; ".join(key_errs)))
        if op in ("In", "NotIn") and not vals:
            errs.append(_invalid(f"{p}.values", _strings(values), "for 'in', 'notin' operators, values set can't be empty"))
        elif op in ("Exists", "DoesNotExist") and vals:
            errs.append(_invalid(f"{p}.values", _strings(values), "values set must be empty for exists and does not exist"))
        elif op in ("Gt", "Lt"):
            if len(vals) != 1:
                errs.append(_invalid(f"{p}.values", _strings(values), "for 'Gt', 'Lt' operators, exactly one value is required"))
            for k, v in enumerate(vals):
                if not _parse_go_int64(v):
                    errs.append(_invalid(f"{p}.values[{k}]", _q(v), "for 'Gt', 'Lt' operators, the value must be an integer"))
        for k, v in enumerate(vals):
            v_errs = is_valid_label_value(v)
            if v_errs:
                errs.append(_invalid(f"{p}.values[{k}][{key}]", _q(v), "; ".join(v_errs)))
    return reqs, errs


def _parse_term(ctx: _Ctx, value: Any, path: str) -> tuple[NodeSelectorTerm | None, list[tuple[str, str]]]:
    m = ctx.obj(value, path, ("matchExpressions", "matchFields"))
    if m is None:
        return None, []
    exprs, e1 = _parse_requirements(ctx, m.get("matchExpressions"), f"{path}.matchExpressions", fields=False)
    flds, e2 = _parse_requirements(ctx, m.get("matchFields"), f"{path}.matchFields", fields=True)
    return NodeSelectorTerm(tuple(exprs), tuple(flds)), e1 + e2


def _parse_node_affinity_args(ctx: _Ctx, m: dict | None, path: str) -> NodeAffinityArgs | None:
    if m is None:
        return None
    n_before = len(ctx.problems)
    ap = f"{path}.addedAffinity"
    am = ctx.obj(m.get("addedAffinity"), ap, ("requiredDuringSchedulingIgnoredDuringExecution",
                                             "preferredDuringSchedulingIgnoredDuringExecution"))
    if am is None:
        return None
    required: tuple[NodeSelectorTerm, ...] | None = None
    parse_errs: list[tuple[str, str]] = []
    rp = f"{ap}.requiredDuringSchedulingIgnoredDuringExecution"
    if am.get("requiredDuringSchedulingIgnoredDuringExecution") is not None:
        rm = ctx.obj(am["requiredDuringSchedulingIgnoredDuringExecution"], rp, ("nodeSelectorTerms",))
        terms = []
        for i, t in enumerate(ctx.list_((rm or {}).get("nodeSelectorTerms"), f"{rp}.nodeSelectorTerms", "[]v1.NodeSelectorTerm") or []):
            term, errs = _parse_term(ctx, t, f"{rp}.nodeSelectorTerms[{i}]")
            if term is not None:
                terms.append(term)
                # As NewNodeSelector: empty terms select nothing and are not parsed.
                if term.match_expressions or term.match_fields:
                    parse_errs += errs
        required = tuple(terms)
    preferred = []
    pp = f"{ap}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, t in enumerate(ctx.list_(am.get("preferredDuringSchedulingIgnoredDuringExecution"), pp, "[]v1.PreferredSchedulingTerm") or []):
        tm = ctx.obj(t, f"{pp}[{i}]", ("weight", "preference"))
        if tm is None:
            continue
        weight = ctx.int_(tm.get("weight"), f"{pp}[{i}].weight") or 0
        # As NewPreferredSchedulingTerms: the term's errors are reported under the term's index
        # (no ".preference" in the path); zero-weight and empty terms are skipped.
        term, errs = _parse_term(ctx, tm.get("preference"), f"{pp}[{i}]")
        if term is None:
            continue
        preferred.append(PreferredTerm(weight, term))
        if weight != 0 and (term.match_expressions or term.match_fields):
            parse_errs += errs
    ctx.problems += parse_errs
    if len(ctx.problems) != n_before:
        return None
    return NodeAffinityArgs(added_required_terms=required, added_preferred_terms=tuple(preferred))


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


def _args_to_v1(name: str, args: object) -> dict:
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
    else:
        raise TypeError(f"no v1 form for args of plugin {name}: {args!r}")
    return out


# ---------------------------------------------------------------- plugins: merge and expand


@dataclass
class _PluginSet:
    enabled: list[tuple[str, int | None]] = field(default_factory=list)  # (name, weight)
    disabled: list[str] = field(default_factory=list)


def _parse_plugin_set(ctx: _Ctx, value: Any, path: str) -> _PluginSet:
    ps = _PluginSet()
    m = ctx.obj(value, path, ("enabled", "disabled"))
    if m is None:
        return ps
    for key in ("enabled", "disabled"):
        for i, item in enumerate(ctx.list_(m.get(key), f"{path}.{key}", "[]v1.Plugin") or []):
            p = f"{path}.{key}[{i}]"
            pm = ctx.obj(item, p, ("name", "weight"))
            if pm is None:
                continue
            name = ctx.str_(pm.get("name"), f"{p}.name")
            weight = ctx.int_(pm.get("weight"), f"{p}.weight")
            if name is None:
                continue
            if key == "enabled":
                ps.enabled.append((name, weight))
            else:
                ps.disabled.append(name)
    return ps


def _merge_plugin_set(default: _PluginSet, custom: _PluginSet) -> _PluginSet:
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
    return _PluginSet(enabled, list(custom.disabled) + list(default.disabled))


def _expand(ctx: _Ctx, point: str, specific: _PluginSet, multi: _PluginSet, path: str) -> list[str]:
    """The modelled plugins at one extension point, in order: as updatePluginList then expandMultiPointPlugins."""
    go_type = EXTENSION_POINTS[point]
    enabled: list[str] = []
    for i, (name, _) in enumerate(specific.enabled):
        if name not in MODELLED_POINTS:
            continue
        if point not in MODELLED_POINTS[name]:
            ctx.problems.append((f"{path}.{point}.enabled[{i}]", f"plugin {_q(name)} does not extend {go_type} plugin"))
            continue
        if name in enabled:
            ctx.problems.append((f"{path}.{point}.enabled[{i}]", f"plugin {_q(name)} already registered as {_q(go_type)}"))
            continue
        enabled.append(name)
    if "*" in specific.disabled:
        return enabled
    disabled = set(specific.disabled)
    overrides: set[str] = set()
    from_multi: list[str] = []
    for name, _ in multi.enabled:
        if point not in MODELLED_POINTS.get(name, ()):
            continue
        if name in disabled:
            continue
        if name in enabled:
            overrides.add(name)
            continue
        if name in from_multi:
            ctx.problems.append((f"{path}.multiPoint", f"plugin {_q(name)} already registered as {_q(go_type)}"))
            continue
        from_multi.append(name)
    # Order: explicitly re-configured plugins, then multiPoint ones, then the rest of the specific list.
    return [n for n in enabled if n in overrides] + from_multi + [n for n in enabled if n not in overrides]


def _enabled_of(specific: _PluginSet, multi: _PluginSet, providers: tuple[str, ...]) -> list[str]:
    """The plugins among `providers` that end up at one extension point (updatePluginList, then multiPoint)."""
    names = [n for n, _ in specific.enabled if n in providers]
    if "*" not in specific.disabled:
        names += [n for n, _ in multi.enabled if n in providers and n not in specific.disabled and n not in names]
    return list(dict.fromkeys(names))


def score_total_overflows(weights) -> bool:
    """As getScoreWeights: weight × MaxNodeScore summed over the score plugins must stay within MaxTotalScore."""
    total = 0
    for w in weights:
        if w * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
            return True
        total += w * MAX_NODE_SCORE
    return False


def _parse_plugins(ctx: _Ctx, raw: Any, path: str) -> tuple[dict[str, _PluginSet], _PluginSet]:
    fields = tuple(EXTENSION_POINTS) + ("multiPoint",) + WORKLOAD_EXTENSION_POINTS
    m = ctx.obj(raw, path, fields) or {}
    sets: dict[str, _PluginSet] = {}
    for point in EXTENSION_POINTS:
        sets[point] = _parse_plugin_set(ctx, m.get(point), f"{path}.{point}")
    multi = _parse_plugin_set(ctx, m.get("multiPoint"), f"{path}.multiPoint")
    for point in WORKLOAD_EXTENSION_POINTS:
        if m.get(point):
            ctx.warnings.append(f"{path}.{point}: workload scheduling is not modelled by schedboard; ignored")
    return sets, multi


def _check_plugin_names(ctx: _Ctx, sets: dict[str, _PluginSet], multi: _PluginSet, path: str, warned: set[str]) -> None:
    """Unknown names are errors (as upstream's framework); unmodelled ones that the user enables are warnings."""
    for point, ps in list(sets.items()) + [("multiPoint", multi)]:
        for i, (name, _) in enumerate(ps.enabled):
            p = f"{path}.{point}.enabled[{i}]"
            if name in MODELLED_POINTS:
                continue
            if name in UNMODELLED_PLUGINS:
                if name not in warned:
                    warned.add(name)
                    ctx.warnings.append(f"{p}: plugin {name} is not modelled by schedboard; ignored")
            elif name in INVALID_PLUGINS and point != "multiPoint":
                # As validatePluginSetForInvalidPlugins.
                ctx.problems.append(_invalid(p, _q(name), f"was invalid in version {_q(API_VERSION)} "
                                                          f"(KubeSchedulerConfiguration is version {_q(API_VERSION)})"))
            else:
                # As the framework's updatePluginList / expandMultiPointPlugins (PreFilter is expanded first).
                go_type = EXTENSION_POINTS.get(point, "PreFilterPlugin")
                ctx.problems.append((p, f"{go_type} {_q(name)} does not exist"))
        for i, name in enumerate(ps.disabled):
            if name != "*" and name not in MODELLED_POINTS and name not in UNMODELLED_PLUGINS:
                ctx.warnings.append(f"{path}.{point}.disabled[{i}]: unknown plugin {name} has no effect")


# ---------------------------------------------------------------- loading


def _go_plugin_set(ps: _PluginSet) -> str:
    """Go's %#v of an internal config.PluginSet, for the queueSort error."""
    def plugins(items: list[tuple[str, int]]) -> str:
        if not items:
            return "[]config.Plugin(nil)"
        return "[]config.Plugin{" + ", ".join(f"config.Plugin{{Name:{_q(n)}, Weight:{w}}}" for n, w in items) + "}"
    return (f"config.PluginSet{{Enabled:{plugins([(n, w or 0) for n, w in ps.enabled])}, "
            f"Disabled:{plugins([(n, 0) for n in ps.disabled])}}}")


def _load_profile(ctx: _Ctx, raw: Any, path: str, single: bool) -> tuple[ProfileConfig, _PluginSet] | None:
    m = ctx.obj(raw, path, PROFILE_FIELDS)
    if m is None:
        return None
    name = ctx.str_(m.get("schedulerName"), f"{path}.schedulerName")
    if "schedulerName" not in m and single:
        name = DEFAULT_SCHEDULER_NAME  # As SetDefaults_KubeSchedulerConfiguration: only for a single profile.
    if name == "":
        ctx.problems.append(_required(f"{path}.schedulerName"))
    pct = ctx.int_(m.get("percentageOfNodesToScore"), f"{path}.percentageOfNodesToScore")
    if pct is not None and not 0 <= pct <= 100:
        ctx.problems.append(_invalid(f"{path}.percentageOfNodesToScore", str(pct), "not in valid range [0-100]"))
    if "percentageOfPlacementsToScore" in m:
        ctx.warnings.append(f"{path}.percentageOfPlacementsToScore: workload scheduling is not modelled by schedboard; ignored")

    pp = f"{path}.plugins"
    sets, multi = _parse_plugins(ctx, m.get("plugins"), pp)
    _check_plugin_names(ctx, sets, multi, pp, set())
    default_multi = _PluginSet(list(DEFAULT_MULTI_POINT))
    multi = _merge_plugin_set(default_multi, multi)
    sets = {point: _merge_plugin_set(_PluginSet(), ps) for point, ps in sets.items()}

    expanded = {point: _expand(ctx, point, sets[point], multi, pp) for point in EXTENSION_POINTS}
    filters = expanded["filter"]
    score_names = expanded["score"]
    # As getScoreWeights: the score list's weight first, then multiPoint's; unset or 0 means 1.
    weights: dict[str, int] = {}
    for plugin, weight in sets["score"].enabled + multi.enabled:
        if "score" in MODELLED_POINTS.get(plugin, ()) and plugin not in weights:
            weights[plugin] = weight or 1
    scores = [(n, weights[n]) for n in score_names]
    # As NewFramework: exactly one queue sort plugin, at least one binder, and weights whose total fits.
    queue_sort = _enabled_of(sets["queueSort"], multi, QUEUE_SORT_PLUGINS)
    binders = _enabled_of(sets["bind"], multi, BIND_PLUGINS)
    if len(queue_sort) != 1:
        ctx.problems.append((f"{pp}.queueSort", f"only one queue sort plugin required for profile with scheduler name "
                                                f"{_q(name or '')}, but got {len(queue_sort)}"))
    if not binders:
        ctx.problems.append((f"{pp}.bind", f"at least one bind plugin is needed for profile with scheduler name {_q(name or '')}"))
    all_weights: dict[str, int] = {}
    for plugin, weight in sets["score"].enabled + multi.enabled:
        if ("score" in MODELLED_POINTS.get(plugin, ()) or plugin in UNMODELLED_SCORE_PLUGINS) and plugin not in all_weights:
            all_weights[plugin] = weight or 1
    if score_total_overflows(all_weights.values()):
        ctx.problems.append((f"{pp}.score", "total score of Score plugins could overflow"))

    # We run PreFilter with Filter and PreScore with Score; say so when a config splits them.
    for pre, main in (("preFilter", "filter"), ("preScore", "score")):
        pre_set, main_set = set(expanded[pre]), set(expanded[main])
        for n in expanded[main]:
            if pre in MODELLED_POINTS[n] and n not in pre_set:
                ctx.warnings.append(f"{pp}: plugin {n} is enabled at {main} but not at {pre}; "
                                    f"schedboard runs its {pre} with its {main}")
        for n in expanded[pre]:
            if n not in main_set:
                ctx.warnings.append(f"{pp}: plugin {n} is enabled at {pre} but not at {main}; "
                                    f"schedboard runs it only with {main}, so it is ignored")

    # Plugin args: as validatePluginConfig (duplicates, removed plugins) and each plugin's args validation.
    args: dict[str, object] = {}
    seen: set[str] = set()
    for i, item in enumerate(ctx.list_(m.get("pluginConfig"), f"{path}.pluginConfig", "[]v1.PluginConfig") or []):
        cp = f"{path}.pluginConfig[{i}]"
        cm = ctx.obj(item, cp, ("name", "args"))
        if cm is None:
            continue
        pname = ctx.str_(cm.get("name"), f"{cp}.name")
        if pname is None:
            continue
        if pname in seen:
            ctx.problems.append(_duplicate(cp, _q(pname)))
            continue
        seen.add(pname)
        if pname in INVALID_PLUGINS:
            ctx.problems.append(_invalid(cp, _q(pname), f"was invalid in version {_q(API_VERSION)} "
                                                        f"(KubeSchedulerConfiguration is version {_q(API_VERSION)})"))
        elif pname in ARGS_PLUGINS:
            parsed = _parse_plugin_args(ctx, pname, cm.get("args"), f"{cp}.args")
            if parsed is not None:
                args[pname] = parsed
        elif pname in MODELLED_POINTS:
            if cm.get("args"):
                ctx.warnings.append(f"{cp}: plugin {pname} takes no args; ignored")
        elif pname in UNMODELLED_PLUGINS:
            ctx.warnings.append(f"{cp}: plugin {pname} is not modelled by schedboard; its args are ignored")
        else:
            ctx.warnings.append(f"{cp}: no plugin named {pname}; its args are ignored")
    profile = ProfileConfig(scheduler_name=name or "", percentage_of_nodes_to_score=pct,
                            filters=filters, scores=scores, plugin_args=args,
                            queue_sort=tuple(queue_sort), binders=tuple(binders))
    return profile, sets["queueSort"]


def _parse_text(text: str, filename: str) -> Any:
    try:
        return load_yaml(text)
    except DecodeProblem as exc:
        raise ConfigError([(exc.path, exc.message + exc.where)], filename) from None
    except yaml.YAMLError as exc:
        raise ConfigError([("", f"error parsing {filename}: {exc}")], filename) from None


def load_config(text: str, filename: str = "<config>") -> SchedulerConfig:
    """Parse, default and validate a KubeSchedulerConfiguration (YAML or JSON) as kube-scheduler would."""
    doc = _parse_text(text, filename)
    ctx = _Ctx()
    if not isinstance(doc, dict):
        raise ConfigError([("", "expected a KubeSchedulerConfiguration object")], filename)
    if doc.get("apiVersion") != API_VERSION:
        ctx.problems.append(_not_supported("apiVersion", _q(str(doc.get("apiVersion") or "")), (API_VERSION,)))
    if doc.get("kind") != KIND:
        ctx.problems.append(_not_supported("kind", _q(str(doc.get("kind") or "")), (KIND,)))
    if ctx.problems:
        raise ConfigError(ctx.problems, filename)
    ctx.obj(doc, "", TOP_LEVEL_FIELDS)
    for key in TOP_LEVEL_UNMODELLED:
        if key in doc:
            ctx.warnings.append(f"{key}: not modelled by schedboard; ignored")
    if "parallelism" in doc:
        par = ctx.int_(doc["parallelism"], "parallelism")
        if par is not None and par <= 0:
            ctx.problems.append(_invalid("parallelism", str(par), "should be an integer value greater than zero"))

    profiles: list[ProfileConfig] = []
    queue_sorts: list[_PluginSet] = []
    raw_profiles = ctx.list_(doc.get("profiles"), "profiles", "[]v1.KubeSchedulerProfile") or [{}]
    if doc.get("profiles") == []:
        raw_profiles = [{}]  # As SetDefaults: an empty list gets the default profile.
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_profiles):
        path = f"profiles[{i}]"
        loaded = _load_profile(ctx, raw, path, single=len(raw_profiles) == 1)
        if loaded is None:
            continue
        profile, queue_sort = loaded
        if profile.scheduler_name in seen:
            ctx.problems.append(_duplicate(f"{path}.schedulerName", f"profiles[{seen[profile.scheduler_name]}].schedulerName"))
        seen[profile.scheduler_name] = i
        profiles.append(profile)
        queue_sorts.append(queue_sort)

    # As validateCommonQueueSort.
    if queue_sorts:
        canon = queue_sorts[0]
        if len(canon.enabled) > 1:
            ctx.problems.append(_invalid("profiles[0].plugins.queueSort.Enabled", str(len(canon.enabled)),
                                         "only one queue sort plugin can be enabled"))
        for i, qs in enumerate(queue_sorts[1:], start=1):
            if (qs.enabled, qs.disabled) != (canon.enabled, canon.disabled):
                ctx.problems.append(_invalid(f"profiles[{i}].plugins.queueSort", _go_plugin_set(qs), "must be the same for all profiles"))

    pct = ctx.int_(doc.get("percentageOfNodesToScore"), "percentageOfNodesToScore")
    if pct is not None and not 0 <= pct <= 100:
        ctx.problems.append(_invalid("percentageOfNodesToScore", str(pct), "not in valid range [0-100]"))
    initial = ctx.int_(doc.get("podInitialBackoffSeconds"), "podInitialBackoffSeconds", bits=64)
    maximum = ctx.int_(doc.get("podMaxBackoffSeconds"), "podMaxBackoffSeconds", bits=64)
    initial = DEFAULT_POD_INITIAL_BACKOFF_SECONDS if initial is None else initial
    maximum = DEFAULT_POD_MAX_BACKOFF_SECONDS if maximum is None else maximum
    if initial <= 0:
        ctx.problems.append(_invalid("podInitialBackoffSeconds", str(initial), "must be greater than 0"))
    if maximum < initial:
        ctx.problems.append(_invalid("podMaxBackoffSeconds", str(maximum), "must be greater than or equal to PodInitialBackoffSeconds"))

    if ctx.problems:
        raise ConfigError(ctx.problems, filename)
    return SchedulerConfig(profiles=profiles, percentage_of_nodes_to_score=pct, pod_initial_backoff_seconds=initial,
                           pod_max_backoff_seconds=maximum, warnings=ctx.warnings)


# ---------------------------------------------------------------- dumping


def _plugins_to_v1(profile: ProfileConfig) -> dict | None:
    """Upstream plugin sets that expand to exactly our profile (None for the default profile).

    Our plugins are taken out of multiPoint and listed at each extension point explicitly, so
    upstream's unmodelled defaults (volume plugins, ...) stay as they are; queue sort and bind are
    written only when they differ from upstream's default (which validation then refuses).
    """
    out: dict[str, Any] = {}
    filters, scores = _default_expansion()
    if profile.filters != filters or profile.scores != scores:
        out = _modelled_plugins_to_v1(profile)
    for point, names, default in (("queueSort", profile.queue_sort, QUEUE_SORT_PLUGINS),
                                  ("bind", profile.binders, BIND_PLUGINS)):
        if tuple(names) != default:
            item: dict[str, Any] = {"disabled": [{"name": n} for n in default]}
            if names:
                item["enabled"] = [{"name": n} for n in names]
            out[point] = item
    return out or None


def _modelled_plugins_to_v1(profile: ProfileConfig) -> dict:
    for n in profile.filters:
        if "filter" not in MODELLED_POINTS.get(n, ()):
            raise ValueError(f"{profile.scheduler_name}: {n} is not a filter plugin")
    for n, _ in profile.scores:
        if "score" not in MODELLED_POINTS.get(n, ()):
            raise ValueError(f"{profile.scheduler_name}: {n} is not a score plugin")

    def enabled(items: list[tuple[str, int | None]]) -> dict:
        return {"enabled": [{"name": n} if w is None else {"name": n, "weight": w} for n, w in items]}

    # An empty point is expressed by listing nothing there: disabling "*" would also drop
    # upstream's unmodelled plugins at that point.
    out: dict[str, Any] = {"multiPoint": {"disabled": [{"name": n} for n in MODELLED]}}
    points = {
        "preFilter": [(n, None) for n in profile.filters if "preFilter" in MODELLED_POINTS[n]],
        "filter": [(n, None) for n in profile.filters],
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
        plugins = _plugins_to_v1(p)
        if plugins is not None:
            item["plugins"] = plugins
        if p.plugin_args:
            item["pluginConfig"] = [{"name": name, "args": _args_to_v1(name, p.plugin_args[name])}
                                    for name in sorted(p.plugin_args)]
        profiles.append(item)
    doc["profiles"] = profiles
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True)
