"""PodTopologySpreadArgs and InterPodAffinityArgs (kubescheduler.config.k8s.io/v1): strict decoding,
upstream's defaults (SetDefaults_*Args) and validation (validation_pluginargs.go) with its words and
field paths, and the v1 form they are exported in.

The decoders take the config loader's context (`ctx`: obj, int_, str_, list_, strings, type_error and
a `problems` list of (path, message)), so their errors read like every other plugin's.
"""

from __future__ import annotations

import json
from typing import Any

from ..k8s_validation import is_qualified_name
from ..labels import LabelSelector
from ..plugins.inter_pod_affinity import DEFAULT_HARD_POD_AFFINITY_WEIGHT, InterPodAffinityArgs
from ..plugins.pod_topology_spread import LIST_DEFAULTING, SYSTEM_DEFAULTING, PodTopologySpreadArgs
from ..pods import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, TopologySpreadConstraint

POD_TOPOLOGY_SPREAD_FIELDS = ("defaultConstraints", "defaultingType")
INTER_POD_AFFINITY_FIELDS = ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods")
_CONSTRAINT_FIELDS = ("maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector", "minDomains",
                      "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys")
MIN_HARD_POD_AFFINITY_WEIGHT, MAX_HARD_POD_AFFINITY_WEIGHT = 0, 100


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _bool(ctx, value: Any, path: str) -> bool | None:
    if value is None:
        return False
    if not isinstance(value, bool):
        ctx.type_error(path, value, "bool")
        return None
    return value


def _constraint(ctx, value: Any, path: str) -> tuple[TopologySpreadConstraint, bool] | None:
    """One v1.TopologySpreadConstraint, and whether it set a labelSelector (forbidden in args)."""
    m = ctx.obj(value, path, _CONSTRAINT_FIELDS)
    if m is None:
        return None
    max_skew = ctx.int_(m.get("maxSkew"), f"{path}.maxSkew")
    key = ctx.str_(m.get("topologyKey"), f"{path}.topologyKey")
    action = ctx.str_(m.get("whenUnsatisfiable"), f"{path}.whenUnsatisfiable")
    min_domains = ctx.int_(m.get("minDomains"), f"{path}.minDomains")
    affinity_policy = ctx.str_(m.get("nodeAffinityPolicy"), f"{path}.nodeAffinityPolicy") if "nodeAffinityPolicy" in m else None
    taints_policy = ctx.str_(m.get("nodeTaintsPolicy"), f"{path}.nodeTaintsPolicy") if "nodeTaintsPolicy" in m else None
    keys = ctx.strings(m.get("matchLabelKeys"), f"{path}.matchLabelKeys") or []
    selector = m.get("labelSelector")
    if selector is not None and not isinstance(selector, dict):
        ctx.type_error(f"{path}.labelSelector", selector, "v1.LabelSelector")
    if key is None or action is None:
        return None
    constraint = TopologySpreadConstraint(
        max_skew=max_skew or 0, topology_key=key, when_unsatisfiable=action,
        label_selector=LabelSelector() if selector is not None else None, min_domains=min_domains,
        node_affinity_policy=affinity_policy or None, node_taints_policy=taints_policy or None,
        match_label_keys=tuple(keys))
    return constraint, selector is not None


def parse_pod_topology_spread_args(ctx, m: dict | None, path: str) -> PodTopologySpreadArgs | None:
    """Decoded (strictly), defaulted and validated; None (with ctx.problems) when invalid."""
    if m is None:
        return None
    before = len(ctx.problems)
    dp = f"{path}.defaultConstraints"
    parsed = []
    for i, item in enumerate(ctx.list_(m.get("defaultConstraints"), dp, "[]v1.TopologySpreadConstraint") or []):
        one = _constraint(ctx, item, f"{dp}[{i}]")
        if one is not None:
            parsed.append(one)
    defaulting = ctx.str_(m.get("defaultingType"), f"{path}.defaultingType")
    if len(ctx.problems) != before or defaulting is None:
        return None
    # As SetDefaults_PodTopologySpreadArgs.
    defaulting = defaulting or SYSTEM_DEFAULTING
    constraints = [c for c, _ in parsed]
    # As ValidatePodTopologySpreadArgs, in its order.
    tp = f"{path}.defaultingType"
    if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        ctx.problems.append((tp, f"Unsupported value: {_q(defaulting)}: supported values: "
                                 f"{_q(SYSTEM_DEFAULTING)}, {_q(LIST_DEFAULTING)}"))
    elif defaulting == SYSTEM_DEFAULTING and constraints:
        ctx.problems.append((tp, f"Invalid value: {_q(defaulting)}: when .defaultConstraints are not empty"))
    for i, (c, has_selector) in enumerate(parsed):
        p = f"{dp}[{i}]"
        if c.max_skew <= 0:
            ctx.problems.append((f"{p}.maxSkew", f"Invalid value: {c.max_skew}: not in valid range (0, inf)"))
        if not c.topology_key:
            ctx.problems.append((f"{p}.topologyKey", "Required value: can not be empty"))
        else:
            for msg in is_qualified_name(c.topology_key):
                ctx.problems.append((f"{p}.topologyKey", f"Invalid value: {_q(c.topology_key)}: {msg}"))
        if not c.when_unsatisfiable:
            ctx.problems.append((f"{p}.whenUnsatisfiable", "Required value: can not be empty"))
        elif c.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            ctx.problems.append((f"{p}.whenUnsatisfiable", f"Unsupported value: {_q(c.when_unsatisfiable)}: supported "
                                                           f"values: {_q(DO_NOT_SCHEDULE)}, {_q(SCHEDULE_ANYWAY)}"))
        if has_selector:
            ctx.problems.append((f"{p}.labelSelector",
                                 "Forbidden: constraint must not define a selector, as they deduced for each pod"))
        for other, _ in parsed[:i]:
            if (other.topology_key, other.when_unsatisfiable) == (c.topology_key, c.when_unsatisfiable):
                ctx.problems.append((p, f"Duplicate value: {_q('{' + c.topology_key + ', ' + c.when_unsatisfiable + '}')}"))
                break
    if len(ctx.problems) != before:
        return None
    return PodTopologySpreadArgs(default_constraints=tuple(constraints), defaulting_type=defaulting)


def parse_inter_pod_affinity_args(ctx, m: dict | None, path: str) -> InterPodAffinityArgs | None:
    if m is None:
        return None
    before = len(ctx.problems)
    weight = ctx.int_(m.get("hardPodAffinityWeight"), f"{path}.hardPodAffinityWeight")
    ignore = _bool(ctx, m.get("ignorePreferredTermsOfExistingPods"), f"{path}.ignorePreferredTermsOfExistingPods")
    if len(ctx.problems) != before:
        return None
    # As SetDefaults_InterPodAffinityArgs: an unset weight is 1 (an explicit 0 stays 0).
    if weight is None:
        weight = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    if not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
        ctx.problems.append((f"{path}.hardPodAffinityWeight", f"Invalid value: {weight}: not in valid range "
                                                              f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]"))
        return None
    return InterPodAffinityArgs(hard_pod_affinity_weight=weight, ignore_preferred_terms_of_existing_pods=bool(ignore))


def constraint_to_v1(c: TopologySpreadConstraint) -> dict:
    out: dict[str, Any] = {"maxSkew": c.max_skew, "topologyKey": c.topology_key, "whenUnsatisfiable": c.when_unsatisfiable}
    if c.label_selector is not None:
        out["labelSelector"] = c.label_selector.to_v1()
    if c.min_domains is not None:
        out["minDomains"] = c.min_domains
    if c.node_affinity_policy is not None:
        out["nodeAffinityPolicy"] = c.node_affinity_policy
    if c.node_taints_policy is not None:
        out["nodeTaintsPolicy"] = c.node_taints_policy
    if c.match_label_keys:
        out["matchLabelKeys"] = list(c.match_label_keys)
    return out


def pod_topology_spread_args_to_v1(args: PodTopologySpreadArgs) -> dict:
    out: dict[str, Any] = {}
    if args.default_constraints:
        out["defaultConstraints"] = [constraint_to_v1(c) for c in args.default_constraints]
    out["defaultingType"] = args.defaulting_type
    return out


def inter_pod_affinity_args_to_v1(args: InterPodAffinityArgs) -> dict:
    return {"hardPodAffinityWeight": args.hard_pod_affinity_weight,
            "ignorePreferredTermsOfExistingPods": args.ignore_preferred_terms_of_existing_pods}
