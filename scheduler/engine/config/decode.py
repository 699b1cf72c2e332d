"""Decoding a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) as kube-scheduler does: strict
decoding (unknown fields and wrong types refused with upstream's words), SetDefaults_*, mergePlugins, the
framework's multiPoint expansion, and the validation of validation.py at the points upstream runs it.
What schedboard does not model is reported as a warning, never silently dropped.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..field import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    FieldDecoder,
    go_strings,
    invalid,
    GoText,
    duplicate,
    not_supported,
    parse_int64,
    quote,
    required,
    unmarshal_type_error,
)
from ..k8s_validation import is_qualified_name, is_valid_label_value
from ..plugin_args import (
    REQUESTED_TO_CAPACITY_RATIO,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from ..plugins.default_preemption import (DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE, DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE,
                                          DefaultPreemptionArgs, validate_default_preemption_args)
from ..pods import DEFAULT_SCHEDULER_NAME, NodeSelectorTerm, PreferredTerm, Requirement
from ..yaml_safe import DecodeProblem, load_yaml
from .defaults import DEFAULT_MULTI_POINT, DEFAULT_POST_FILTERS, UNMODELLED_PLUGINS, merge_plugin_set
from .topology_args import (INTER_POD_AFFINITY_FIELDS, POD_TOPOLOGY_SPREAD_FIELDS, parse_inter_pod_affinity_args,
                            parse_pod_topology_spread_args)
from .types import (
    API_VERSION,
    ARGS_PLUGINS,
    BIND_PLUGINS,
    DEFAULT_POD_INITIAL_BACKOFF_SECONDS,
    DEFAULT_POD_MAX_BACKOFF_SECONDS,
    EXTENSION_POINTS,
    INVALID_PLUGINS,
    KIND,
    MODELLED_POINTS,
    PRE_ENQUEUE_PLUGINS,
    PROFILE_FIELDS,
    QUEUE_SORT_PLUGINS,
    TOP_LEVEL_FIELDS,
    TOP_LEVEL_UNMODELLED,
    UNMODELLED_SCORE_PLUGINS,
    WORKLOAD_EXTENSION_POINTS,
    ConfigError,
    PluginSet,
    ProfileConfig,
    SchedulerConfig,
)
from .validation import (
    score_total_overflows,
    validate_backoff,
    validate_balanced_resources,
    validate_common_queue_sort,
    validate_label_names,
    validate_percentage,
    validate_requested_to_capacity_ratio,
    validate_scoring_strategy,
    validate_shape,
)

# ---------------------------------------------------------------- strict decoding

class StrictDecoder(FieldDecoder):
    """kube-scheduler's strict decoding: typed getters that record upstream's error instead of raising,
    and the warnings schedboard adds for what it does not model."""

    def __init__(self) -> None:
        super().__init__()
        self.warnings: list[str] = []

    def type_error(self, path: str, value: Any, go_type: str) -> None:
        self.problems.append((path, unmarshal_type_error(value, go_type)))

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


def _parse_plugin_args(ctx: StrictDecoder, name: str, raw: Any, path: str) -> object | None:
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
        ctx.problems.append((f"{path}.apiVersion", not_supported(str(raw.get("apiVersion")), (API_VERSION,))))
        return None
    if name == "NodeResourcesFit":
        return _parse_fit_args(ctx, ctx.obj(raw, path, extra + ("ignoredResources", "ignoredResourceGroups", "scoringStrategy")), path)
    if name == "NodeResourcesBalancedAllocation":
        return _parse_balanced_args(ctx, ctx.obj(raw, path, extra + ("resources",)), path)
    if name == "NodeAffinity":
        return _parse_node_affinity_args(ctx, ctx.obj(raw, path, extra + ("addedAffinity",)), path)
    if name == "PodTopologySpread":
        return parse_pod_topology_spread_args(ctx, ctx.obj(raw, path, extra + POD_TOPOLOGY_SPREAD_FIELDS), path)
    if name == "InterPodAffinity":
        return parse_inter_pod_affinity_args(ctx, ctx.obj(raw, path, extra + INTER_POD_AFFINITY_FIELDS), path)
    if name == "DefaultPreemption":
        return _parse_default_preemption_args(ctx, ctx.obj(raw, path, extra + DEFAULT_PREEMPTION_FIELDS), path)
    return None


DEFAULT_PREEMPTION_FIELDS = ("minCandidateNodesPercentage", "minCandidateNodesAbsolute")


def _parse_default_preemption_args(ctx: StrictDecoder, m: dict | None, path: str) -> DefaultPreemptionArgs | None:
    """Decoded strictly, defaulted as SetDefaults_DefaultPreemptionArgs (an unset field only: an explicit 0
    stays 0) and validated as ValidateDefaultPreemptionArgs."""
    if m is None:
        return None
    before = len(ctx.problems)
    pct = ctx.int_(m.get("minCandidateNodesPercentage"), f"{path}.minCandidateNodesPercentage")
    absolute = ctx.int_(m.get("minCandidateNodesAbsolute"), f"{path}.minCandidateNodesAbsolute")
    if len(ctx.problems) != before:
        return None
    args = DefaultPreemptionArgs(
        min_candidate_nodes_percentage=DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE if pct is None else pct,
        min_candidate_nodes_absolute=DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE if absolute is None else absolute)
    problems = validate_default_preemption_args(args, path)
    ctx.problems += problems
    return None if problems else args


def _parse_resources(ctx: StrictDecoder, value: Any, path: str) -> list[tuple[str, int]]:
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


def _parse_shape(ctx: StrictDecoder, value: Any, path: str) -> list[tuple[int, int]]:
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


def _parse_fit_args(ctx: StrictDecoder, m: dict | None, path: str) -> NodeResourcesFitArgs | None:
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
        ctx.problems += validate_scoring_strategy(stype, resources, sp)
        rp = f"{sp}.requestedToCapacityRatio"
        ctx.problems += validate_requested_to_capacity_ratio(stype, rtcr_raw is not None, rp)
        if stype == REQUESTED_TO_CAPACITY_RATIO and rtcr_raw is not None:
            rm = ctx.obj(rtcr_raw, rp, ("shape",))
            if rm is not None:
                shape = _parse_shape(ctx, rm.get("shape"), f"{rp}.shape")
                ctx.problems += validate_shape(shape, f"{rp}.shape")
        strategy = ScoringStrategy(
            type=stype,
            resources=tuple(ResourceSpec(n, w) for n, w in resources),
            shape=tuple(UtilizationShapePoint(u, s) for u, s in shape),
        )
    ctx.problems += validate_label_names(ignored, f"{path}.ignoredResources")
    ctx.problems += validate_label_names(groups, f"{path}.ignoredResourceGroups", group=True)
    if len(ctx.problems) != n_before:
        return None
    return NodeResourcesFitArgs(ignored_resources=tuple(ignored), ignored_resource_groups=tuple(groups), scoring_strategy=strategy)


def _parse_balanced_args(ctx: StrictDecoder, m: dict | None, path: str) -> NodeResourcesBalancedAllocationArgs | None:
    if m is None:
        return None
    n_before = len(ctx.problems)
    rp = f"{path}.resources"
    resources = _parse_resources(ctx, m.get("resources"), rp)
    # As SetDefaults_NodeResourcesBalancedAllocationArgs.
    if not resources:
        return NodeResourcesBalancedAllocationArgs() if len(ctx.problems) == n_before else None
    resources = [(n, w if w != 0 else 1) for n, w in resources]
    ctx.problems += validate_balanced_resources(resources, rp)
    if len(ctx.problems) != n_before:
        return None
    return NodeResourcesBalancedAllocationArgs(resources=tuple(ResourceSpec(n, w) for n, w in resources))


_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_FIELD_OPERATORS = ("In", "NotIn")


def _parse_requirements(ctx: StrictDecoder, value: Any, path: str, *, fields: bool) -> tuple[list[Requirement], list[tuple[str, str]]]:
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
                    errs.append((f"{p}.values", invalid(go_strings(values), "must have one element")))
            else:
                errs.append((f"{p}.operator", not_supported(op, _FIELD_OPERATORS)))
            continue
        # As nodeSelectorRequirementsAsSelector and labels.NewRequirement.
        if op not in _SELECTOR_OPERATORS:
            errs.append((f"{p}.operator", not_supported(op, _SELECTOR_OPERATORS)))
            continue
        key_errs = is_qualified_name(key)
        if key_errs:
            errs.append((f"{p}.key", invalid(key, "; ".join(key_errs))))
        if op in ("In", "NotIn") and not vals:
            errs.append((f"{p}.values", invalid(go_strings(values), "for 'in', 'notin' operators, values set can't be empty")))
        elif op in ("Exists", "DoesNotExist") and vals:
            errs.append((f"{p}.values", invalid(go_strings(values), "values set must be empty for exists and does not exist")))
        elif op in ("Gt", "Lt"):
            if len(vals) != 1:
                errs.append((f"{p}.values", invalid(go_strings(values), "for 'Gt', 'Lt' operators, exactly one value is required")))
            for k, v in enumerate(vals):
                if parse_int64(v) is None:
                    errs.append((f"{p}.values[{k}]", invalid(v, "for 'Gt', 'Lt' operators, the value must be an integer")))
        for k, v in enumerate(vals):
            v_errs = is_valid_label_value(v)
            if v_errs:
                errs.append((f"{p}.values[{k}][{key}]", invalid(v, "; ".join(v_errs))))
    return reqs, errs


def _parse_term(ctx: StrictDecoder, value: Any, path: str) -> tuple[NodeSelectorTerm | None, list[tuple[str, str]]]:
    m = ctx.obj(value, path, ("matchExpressions", "matchFields"))
    if m is None:
        return None, []
    exprs, e1 = _parse_requirements(ctx, m.get("matchExpressions"), f"{path}.matchExpressions", fields=False)
    flds, e2 = _parse_requirements(ctx, m.get("matchFields"), f"{path}.matchFields", fields=True)
    return NodeSelectorTerm(tuple(exprs), tuple(flds)), e1 + e2


def _parse_node_affinity_args(ctx: StrictDecoder, m: dict | None, path: str) -> NodeAffinityArgs | None:
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


# ---------------------------------------------------------------- plugins: decode and expand


def _parse_plugin_set(ctx: StrictDecoder, value: Any, path: str) -> PluginSet:
    ps = PluginSet()
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


def _expand(ctx: StrictDecoder, point: str, specific: PluginSet, multi: PluginSet, path: str) -> list[str]:
    """The modelled plugins at one extension point, in order: as updatePluginList then expandMultiPointPlugins."""
    go_type = EXTENSION_POINTS[point]
    enabled: list[str] = []
    for i, (name, _) in enumerate(specific.enabled):
        if name not in MODELLED_POINTS:
            continue
        if point not in MODELLED_POINTS[name]:
            ctx.problems.append((f"{path}.{point}.enabled[{i}]", f"plugin {quote(name)} does not extend {go_type} plugin"))
            continue
        if name in enabled:
            ctx.problems.append((f"{path}.{point}.enabled[{i}]", f"plugin {quote(name)} already registered as {quote(go_type)}"))
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
            ctx.problems.append((f"{path}.multiPoint", f"plugin {quote(name)} already registered as {quote(go_type)}"))
            continue
        from_multi.append(name)
    # Order: explicitly re-configured plugins, then multiPoint ones, then the rest of the specific list.
    return [n for n in enabled if n in overrides] + from_multi + [n for n in enabled if n not in overrides]


def _enabled_of(specific: PluginSet, multi: PluginSet, providers: tuple[str, ...]) -> list[str]:
    """The plugins among `providers` that end up at one extension point (updatePluginList, then multiPoint)."""
    names = [n for n, _ in specific.enabled if n in providers]
    if "*" not in specific.disabled:
        names += [n for n, _ in multi.enabled if n in providers and n not in specific.disabled and n not in names]
    return list(dict.fromkeys(names))


def _parse_plugins(ctx: StrictDecoder, raw: Any, path: str) -> tuple[dict[str, PluginSet], PluginSet]:
    fields = tuple(EXTENSION_POINTS) + ("multiPoint",) + WORKLOAD_EXTENSION_POINTS
    m = ctx.obj(raw, path, fields) or {}
    sets: dict[str, PluginSet] = {}
    for point in EXTENSION_POINTS:
        sets[point] = _parse_plugin_set(ctx, m.get(point), f"{path}.{point}")
    multi = _parse_plugin_set(ctx, m.get("multiPoint"), f"{path}.multiPoint")
    for point in WORKLOAD_EXTENSION_POINTS:
        if m.get(point):
            ctx.warnings.append(f"{path}.{point}: workload scheduling is not modelled by schedboard; ignored")
    return sets, multi


def _check_plugin_names(ctx: StrictDecoder, sets: dict[str, PluginSet], multi: PluginSet, path: str, warned: set[str]) -> None:
    """Unknown names are errors (as upstream's framework); unmodelled ones that the user enables are warnings."""
    for point, ps in list(sets.items()) + [("multiPoint", multi)]:
        for i, (name, _) in enumerate(ps.enabled):
            p = f"{path}.{point}.enabled[{i}]"
            if name in MODELLED_POINTS:
                continue
            if name in PRE_ENQUEUE_PLUGINS:  # modelled (engine/scheduling_gates.py), at PreEnqueue only
                if point not in ("preEnqueue", "multiPoint"):
                    ctx.problems.append((p, f"plugin {quote(name)} does not extend {EXTENSION_POINTS[point]} plugin"))
                continue
            if name in UNMODELLED_PLUGINS:
                if name not in warned:
                    warned.add(name)
                    ctx.warnings.append(f"{p}: plugin {name} is not modelled by schedboard; ignored")
            elif name in INVALID_PLUGINS and point != "multiPoint":
                # As validatePluginSetForInvalidPlugins.
                ctx.problems.append((p, invalid(name, f"was invalid in version {quote(API_VERSION)} "
                                                     f"(KubeSchedulerConfiguration is version {quote(API_VERSION)})")))
            else:
                # As the framework's updatePluginList / expandMultiPointPlugins (PreFilter is expanded first).
                go_type = EXTENSION_POINTS.get(point, "PreFilterPlugin")
                ctx.problems.append((p, f"{go_type} {quote(name)} does not exist"))
        for i, name in enumerate(ps.disabled):
            if name != "*" and name not in MODELLED_POINTS and name not in UNMODELLED_PLUGINS and name not in PRE_ENQUEUE_PLUGINS:
                ctx.warnings.append(f"{path}.{point}.disabled[{i}]: unknown plugin {name} has no effect")


# ---------------------------------------------------------------- loading


def _load_profile(ctx: StrictDecoder, raw: Any, path: str, single: bool) -> tuple[ProfileConfig, PluginSet] | None:
    m = ctx.obj(raw, path, PROFILE_FIELDS)
    if m is None:
        return None
    name = ctx.str_(m.get("schedulerName"), f"{path}.schedulerName")
    if "schedulerName" not in m and single:
        name = DEFAULT_SCHEDULER_NAME  # As SetDefaults_KubeSchedulerConfiguration: only for a single profile.
    if name == "":
        ctx.problems.append((f"{path}.schedulerName", required()))
    pct = ctx.int_(m.get("percentageOfNodesToScore"), f"{path}.percentageOfNodesToScore")
    ctx.problems += validate_percentage(pct, f"{path}.percentageOfNodesToScore")
    if "percentageOfPlacementsToScore" in m:
        ctx.warnings.append(f"{path}.percentageOfPlacementsToScore: workload scheduling is not modelled by schedboard; ignored")

    pp = f"{path}.plugins"
    sets, multi = _parse_plugins(ctx, m.get("plugins"), pp)
    _check_plugin_names(ctx, sets, multi, pp, set())
    default_multi = PluginSet(list(DEFAULT_MULTI_POINT))
    multi = merge_plugin_set(default_multi, multi)
    sets = {point: merge_plugin_set(PluginSet(), ps) for point, ps in sets.items()}

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
    pre_enqueue = _enabled_of(sets["preEnqueue"], multi, PRE_ENQUEUE_PLUGINS)
    if not pre_enqueue:
        # Upstream would attempt a gated pod and the API server would refuse its binding ("non-empty
        # .spec.schedulingGates") at every retry: the pod waits for its gates either way, so we hold it.
        ctx.warnings.append(f"{pp}.preEnqueue: SchedulingGates disabled; schedboard still holds gated pods "
                            "(the API server refuses to bind them)")
    if len(queue_sort) != 1:
        ctx.problems.append((f"{pp}.queueSort", f"only one queue sort plugin required for profile with scheduler name "
                                                f"{quote(name or '')}, but got {len(queue_sort)}"))
    if not binders:
        ctx.problems.append((f"{pp}.bind", f"at least one bind plugin is needed for profile with scheduler name {quote(name or '')}"))
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
            ctx.problems.append((cp, duplicate(pname)))
            continue
        seen.add(pname)
        if pname in INVALID_PLUGINS:
            ctx.problems.append((cp, invalid(pname, f"was invalid in version {quote(API_VERSION)} "
                                                   f"(KubeSchedulerConfiguration is version {quote(API_VERSION)})")))
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
                            filters=filters, scores=scores, post_filters=expanded["postFilter"], plugin_args=args,
                            queue_sort=tuple(queue_sort), binders=tuple(binders), pre_enqueue=tuple(pre_enqueue))
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
    ctx = StrictDecoder()
    if not isinstance(doc, dict):
        raise ConfigError([("", "expected a KubeSchedulerConfiguration object")], filename)
    if doc.get("apiVersion") != API_VERSION:
        ctx.problems.append(("apiVersion", not_supported(str(doc.get("apiVersion") or ""), (API_VERSION,))))
    if doc.get("kind") != KIND:
        ctx.problems.append(("kind", not_supported(str(doc.get("kind") or ""), (KIND,))))
    if ctx.problems:
        raise ConfigError(ctx.problems, filename)
    ctx.obj(doc, "", TOP_LEVEL_FIELDS)
    for key in TOP_LEVEL_UNMODELLED:
        if key in doc:
            ctx.warnings.append(f"{key}: not modelled by schedboard; ignored")
    if "parallelism" in doc:
        par = ctx.int_(doc["parallelism"], "parallelism")
        if par is not None and par <= 0:
            ctx.problems.append(("parallelism", invalid(par, "should be an integer value greater than zero")))

    profiles: list[ProfileConfig] = []
    queue_sorts: list[PluginSet] = []
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
            # The value is a field.Path, a Stringer: printed bare.
            ctx.problems.append((f"{path}.schedulerName",
                                 duplicate(GoText(f"profiles[{seen[profile.scheduler_name]}].schedulerName"))))
        seen[profile.scheduler_name] = i
        profiles.append(profile)
        queue_sorts.append(queue_sort)

    ctx.problems += validate_common_queue_sort(queue_sorts)

    pct = ctx.int_(doc.get("percentageOfNodesToScore"), "percentageOfNodesToScore")
    ctx.problems += validate_percentage(pct, "percentageOfNodesToScore")
    initial = ctx.int_(doc.get("podInitialBackoffSeconds"), "podInitialBackoffSeconds", bits=64)
    maximum = ctx.int_(doc.get("podMaxBackoffSeconds"), "podMaxBackoffSeconds", bits=64)
    initial = DEFAULT_POD_INITIAL_BACKOFF_SECONDS if initial is None else initial
    maximum = DEFAULT_POD_MAX_BACKOFF_SECONDS if maximum is None else maximum
    ctx.problems += validate_backoff(initial, maximum)

    if ctx.problems:
        raise ConfigError(ctx.problems, filename)
    return SchedulerConfig(profiles=profiles, percentage_of_nodes_to_score=pct, pod_initial_backoff_seconds=initial,
                           pod_max_backoff_seconds=maximum, warnings=ctx.warnings)


# ---------------------------------------------------------------- the stored form (v1.py writes it)


def profile_from_dict(data: dict) -> ProfileConfig:
    """A profile from its stored form; its plugin args are decoded and validated again."""
    ctx = StrictDecoder()
    args = {}
    for name, raw in (data.get("plugin_args") or {}).items():
        parsed = _parse_plugin_args(ctx, name, raw, f"plugin_args[{name}]")
        if parsed is not None:
            args[name] = parsed
    if ctx.problems:
        raise ConfigError(ctx.problems, "<profile>")
    return ProfileConfig(
        scheduler_name=data["scheduler_name"],
        percentage_of_nodes_to_score=data.get("percentage_of_nodes_to_score"),
        filters=list(data.get("filters") or []),
        scores=[(n, w) for n, w in data.get("scores") or []],
        # Versions stored before PostFilter was modelled ran upstream's default, DefaultPreemption.
        post_filters=list(data.get("post_filters", DEFAULT_POST_FILTERS)),
        plugin_args=args,
        queue_sort=tuple(data.get("queue_sort", QUEUE_SORT_PLUGINS)),
        binders=tuple(data.get("binders", BIND_PLUGINS)),
        pre_enqueue=tuple(data.get("pre_enqueue", PRE_ENQUEUE_PLUGINS)),
    )


def config_from_dict(data: dict) -> SchedulerConfig:
    """A configuration version from its stored form."""
    return SchedulerConfig(
        profiles=[profile_from_dict(p) for p in data.get("profiles") or []],
        percentage_of_nodes_to_score=data.get("percentage_of_nodes_to_score"),
        pod_initial_backoff_seconds=data.get("pod_initial_backoff_seconds", DEFAULT_POD_INITIAL_BACKOFF_SECONDS),
        pod_max_backoff_seconds=data.get("pod_max_backoff_seconds", DEFAULT_POD_MAX_BACKOFF_SECONDS),
    )
