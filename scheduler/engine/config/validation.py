"""Validation as kube-scheduler's pkg/scheduler/apis/config/validation: each function checks decoded values
and returns upstream's field errors as (field path, message), in upstream's order; decode.py calls them
where the API server's validation would run."""

from __future__ import annotations

from ..field import duplicate, forbidden, invalid, not_supported, quote, required, GoText
from ..k8s_validation import is_qualified_name
from ..plugin_args import MAX_CUSTOM_PRIORITY_SCORE, REQUESTED_TO_CAPACITY_RATIO
from ..resources import MAX_NODE_SCORE, MAX_TOTAL_SCORE
from .types import SCORING_STRATEGY_TYPES, PluginSet

Problems = list[tuple[str, str]]


def validate_percentage(pct: int | None, path: str) -> Problems:
    """As validatePercentageOfNodesToScore."""
    if pct is not None and not 0 <= pct <= 100:
        return [(path, invalid(pct, "not in valid range [0-100]"))]
    return []


def validate_backoff(initial: int, maximum: int) -> Problems:
    """As ValidateKubeSchedulerConfiguration's backoff checks."""
    problems = []
    if initial <= 0:
        problems.append(("podInitialBackoffSeconds", invalid(initial, "must be greater than 0")))
    if maximum < initial:
        problems.append(("podMaxBackoffSeconds", invalid(maximum, "must be greater than or equal to PodInitialBackoffSeconds")))
    return problems


def go_plugin_set(ps: PluginSet) -> GoText:
    """Go's %#v of an internal config.PluginSet, for the queueSort error."""
    def plugins(items: list[tuple[str, int]]) -> str:
        if not items:
            return "[]config.Plugin(nil)"
        return "[]config.Plugin{" + ", ".join(f"config.Plugin{{Name:{quote(n)}, Weight:{w}}}" for n, w in items) + "}"
    return GoText(f"config.PluginSet{{Enabled:{plugins([(n, w or 0) for n, w in ps.enabled])}, "
                  f"Disabled:{plugins([(n, 0) for n in ps.disabled])}}}")


def validate_common_queue_sort(queue_sorts: list[PluginSet]) -> Problems:
    """As validateCommonQueueSort: one queue sort plugin, the same in every profile."""
    if not queue_sorts:
        return []
    problems = []
    canon = queue_sorts[0]
    if len(canon.enabled) > 1:
        problems.append(("profiles[0].plugins.queueSort.Enabled", invalid(len(canon.enabled),
                                                                          "only one queue sort plugin can be enabled")))
    for i, qs in enumerate(queue_sorts[1:], start=1):
        if (qs.enabled, qs.disabled) != (canon.enabled, canon.disabled):
            problems.append((f"profiles[{i}].plugins.queueSort", invalid(go_plugin_set(qs), "must be the same for all profiles")))
    return problems


def score_total_overflows(weights) -> bool:
    """As getScoreWeights: weight × MaxNodeScore summed over the score plugins must stay within MaxTotalScore."""
    total = 0
    for w in weights:
        if w * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
            return True
        total += w * MAX_NODE_SCORE
    return False


# ---------------------------------------------------------------- plugin args (validation_pluginargs.go)


def validate_shape(shape: list[tuple[int, int]], path: str) -> Problems:
    """As validateFunctionShape."""
    if not shape:
        return [(path, required("at least one point must be specified"))]
    problems = []
    for i in range(1, len(shape)):
        if shape[i - 1][0] >= shape[i][0]:
            problems.append((f"{path}[{i}].utilization", invalid(shape[i][0], "values must be sorted in increasing order")))
            break
    for i, (u, s) in enumerate(shape):
        if not 0 <= u <= 100:
            problems.append((f"{path}[{i}].utilization", invalid(u, "not in valid range [0, 100]")))
        if not 0 <= s <= MAX_CUSTOM_PRIORITY_SCORE:
            problems.append((f"{path}[{i}].score", invalid(s, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")))
    return problems


def validate_label_names(names: list[str], path: str, *, group: bool = False) -> Problems:
    """As metav1validation.ValidateLabelName per item (one error per message)."""
    problems = []
    for i, res in enumerate(names):
        p = f"{path}[{i}]"
        if group and "/" in res:
            problems.append((p, invalid(res, "resource group name can't contain '/'")))
        for msg in is_qualified_name(res):
            problems.append((p, invalid(res, msg)))
    return problems


def validate_scoring_strategy(stype: str, resources: list[tuple[str, int]], path: str) -> Problems:
    """As ValidateNodeResourcesFitArgs: a known strategy type, and each resource's weight in (0, 100]."""
    problems = []
    if stype not in SCORING_STRATEGY_TYPES:
        problems.append((f"{path}.type", not_supported(stype, SCORING_STRATEGY_TYPES)))
    for i, (rname, w) in enumerate(resources):
        if w <= 0 or w > 100:
            problems.append((f"{path}.resources[{i}].weight", invalid(w, f"resource weight of {rname} not in valid range (0, 100]")))
    return problems


def validate_requested_to_capacity_ratio(stype: str, given: bool, path: str) -> Problems:
    """As ValidateNodeResourcesFitArgs: requestedToCapacityRatio is set exactly when the type needs it."""
    if stype == REQUESTED_TO_CAPACITY_RATIO and not given:
        return [(path, required("must be specified when type is RequestedToCapacityRatio"))]
    if stype != REQUESTED_TO_CAPACITY_RATIO and given:
        return [(path, forbidden("must be nil when type is not RequestedToCapacityRatio"))]
    return []


def validate_balanced_resources(resources: list[tuple[str, int]], path: str) -> Problems:
    """As ValidateNodeResourcesBalancedAllocationArgs: unique names, every weight exactly 1."""
    problems = []
    seen: set[str] = set()
    for i, (name, w) in enumerate(resources):
        if name in seen:
            problems.append((f"{path}[{i}].name", duplicate(name)))
        seen.add(name)
        if w != 1:
            problems.append((f"{path}[{i}].weight", invalid(w, "must be 1")))
    return problems
