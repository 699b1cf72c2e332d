"""What PodTopologySpread and InterPodAffinity read from a pod manifest, decoded and validated as the
API server does (pkg/apis/core/validation: validateTopologySpreadConstraints, validateAffinity's pod
(anti-)affinity, ValidateOwnerReferences, metav1validation.ValidateLabelSelector), with its words
and field paths, and the rewrite it makes at creation (pkg/registry/core/pod/strategy.go): the
values of matchLabelKeys / mismatchLabelKeys merged into the label selector.

The decoders take the manifest decoder's problem collector `o` (map, list, str, int, item, add).
"""

from __future__ import annotations

import json

from scheduler.engine.k8s_validation import is_dns1123_label, is_qualified_name, is_valid_label_value
from scheduler.engine.labels import OP_DOES_NOT_EXIST, OP_EXISTS, OP_IN, OP_NOT_IN, LabelSelector, LabelSelectorRequirement
from scheduler.engine.pods import (DO_NOT_SCHEDULE, HONOR, IGNORE, SCHEDULE_ANYWAY, OwnerReference, PodAffinity, PodAffinityTerm,
                          TopologySpreadConstraint, WeightedPodAffinityTerm)

IS_NOT_POSITIVE = "must be greater than zero"  # isNotPositiveErrorMsg
_SCHEDULE_ACTIONS = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)  # sorted, as sets.List
_INCLUSION_POLICIES = (HONOR, IGNORE)
REQUIRED_TERMS = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED_TERMS = "preferredDuringSchedulingIgnoredDuringExecution"


def _p(path: str, child) -> str:
    return f"{path}[{child}]" if isinstance(child, int) else f"{path}.{child}"


def _v(value) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)


def _describe(value) -> str:
    """As the manifest decoder names a value of the wrong type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value}"
    return "a list" if isinstance(value, list) else "a map" if isinstance(value, dict) else type(value).__name__


def _invalid(value, detail: str) -> str:
    return f"Invalid value: {_v(value)}: {detail}"


def _strings(o, value, path: str) -> list[str]:
    out = []
    for i, v in enumerate(o.list(value, path)):
        if isinstance(v, str):
            out.append(v)
        else:
            o.add(_p(path, i), f"expected a string, got {_describe(v)}")
    return out


def _label_name(o, path: str, name: str) -> None:
    """As metav1validation.ValidateLabelName: one error per message."""
    for msg in is_qualified_name(name):
        o.add(path, _invalid(name, msg))


# ---- label selectors ----------------------------------------------------------------------------
def label_selector(o, value, path: str) -> LabelSelector | None:
    """A metav1.LabelSelector, validated as ValidateLabelSelector; None for a nil one."""
    if value is None:
        return None
    m = o.map(value, path)
    labels_path = _p(path, "matchLabels")
    match_labels = o.string_map(m.get("matchLabels"), labels_path, "LabelSelector.matchLabels")
    for k, v in match_labels.items():
        _label_name(o, labels_path, k)
        for msg in is_valid_label_value(v):
            o.add(labels_path, _invalid(v, msg))
    exprs_path = _p(path, "matchExpressions")
    seq = o.list(m.get("matchExpressions"), exprs_path)
    exprs = []
    for i in range(len(seq)):
        r = o.item(seq, i, exprs_path)
        if r is None:
            continue
        rp = _p(exprs_path, i)
        key = o.str(r.get("key"), _p(rp, "key"))
        op = o.str(r.get("operator"), _p(rp, "operator"))
        vp = _p(rp, "values")
        values = _strings(o, r.get("values"), vp)
        if op in (OP_IN, OP_NOT_IN):
            if not values:
                o.add(vp, "Required value: must be specified when `operator` is 'In' or 'NotIn'")
        elif op in (OP_EXISTS, OP_DOES_NOT_EXIST):
            if values:
                o.add(vp, "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        else:
            o.add(_p(rp, "operator"), _invalid(op, "not a valid selector operator"))
        _label_name(o, _p(rp, "key"), key)
        for j, v in enumerate(values):
            for msg in is_valid_label_value(v):
                o.add(_p(vp, j), _invalid(v, msg))
        exprs.append(LabelSelectorRequirement(key, op, tuple(values)))
    return LabelSelector.of(match_labels, exprs)


# ---- owner references -----------------------------------------------------------------------------
def owner_references(o, value, path: str = "metadata.ownerReferences") -> tuple[OwnerReference, ...]:
    """As ValidateOwnerReferences (each reference's version, kind, name and uid must be set)."""
    seq = o.list(value, path)
    out = []
    for i in range(len(seq)):
        r = o.item(seq, i, path)
        if r is None:
            continue
        rp = _p(path, i)
        api_version = o.str(r.get("apiVersion"), _p(rp, "apiVersion"))
        kind = o.str(r.get("kind"), _p(rp, "kind"))
        name = o.str(r.get("name"), _p(rp, "name"))
        uid = o.str(r.get("uid"), _p(rp, "uid"))
        controller = o.bool(r.get("controller"), _p(rp, "controller"))
        o.bool(r.get("blockOwnerDeletion"), _p(rp, "blockOwnerDeletion"))
        # As schema.FromAPIVersionAndKind: the version is what follows the last "/".
        if not api_version.rsplit("/", 1)[-1]:
            o.add(_p(rp, "apiVersion"), _invalid(api_version, "version must not be empty"))
        if not kind:
            o.add(_p(rp, "kind"), _invalid(kind, "kind must not be empty"))
        if not name:
            o.add(_p(rp, "name"), _invalid(name, "name must not be empty"))
        if not uid:
            o.add(_p(rp, "uid"), _invalid(uid, "uid must not be empty"))
        out.append(OwnerReference(api_version=api_version, kind=kind, name=name, controller=controller))
    controllers = [r.name for r in out if r.controller]
    if len(controllers) > 1:
        o.add(path, f'Invalid value: "": Only one reference can have Controller set to true. Found "true" in '
                    f"references for {controllers[0]} and {controllers[1]}")
    return tuple(out)


# ---- topology spread constraints --------------------------------------------------------------------
def _label_keys_in_selector(o, path: str, keys: list[str], selector: LabelSelector | None, what: str) -> None:
    """As validateMatchLabelKeysAndMismatchLabelKeys' per-list part: keys need a selector and must be label names;
    a key may not be both a matchLabelKeys entry and already in the selector (its matchLabels, or twice)."""
    if not keys:
        return
    if selector is None:
        o.add(_p(path, what), "Forbidden: must not be specified when labelSelector is not set")
        return
    for i, key in enumerate(keys):
        _label_name(o, _p(_p(path, what), i), key)


def _in_both(o, at: str, match_keys: list[str], selector: LabelSelector | None, pod_labels) -> None:
    """As the check in ValidateMatchLabelKeysAndMismatchLabelKeys, which the API server runs after it merged the
    keys into the selector (PrepareForCreate): a key the merge adds an expression for, that the selector also
    names (in matchLabels, or in an expression before), is in both. Reported at `at[i]`: upstream indexes the
    path it was given, which is the term or the constraint itself, not its matchLabelKeys: `...[0][i]` and
    `podAffinityTerm[i]` for a pod (anti-)affinity term (as its tests expect), and
    `spec.topologySpreadConstraints[c][i]` for a spread constraint (validateTopologySpreadConstraints passes
    subFldPath with MatchLabelKeysInPodTopologySpreadSelectorMerge on, master's default). A key the pod has no
    label for adds no expression, so it is never in both, even when the selector names it (the legacy check,
    gate off, refuses that)."""
    if selector is None or not match_keys:
        return
    index = {key: i for i, key in enumerate(match_keys)}
    seen = {k for k, _ in selector.match_labels}
    merged = [r.key for r in selector.match_expressions] + [k for k in match_keys if k in (pod_labels or {})]
    for key in merged:
        if key in index and key in seen:
            o.add(_p(at, index[key]), _invalid(key, "exists in both matchLabelKeys and labelSelector"))
        seen.add(key)


def topology_spread_constraints(o, value, path: str = "spec.topologySpreadConstraints",
                                pod_labels=None) -> tuple[TopologySpreadConstraint, ...]:
    seq = o.list(value, path)
    parsed = []
    for i in range(len(seq)):
        c = o.item(seq, i, path)
        if c is None:
            continue
        cp = _p(path, i)
        max_skew = o.int(c.get("maxSkew"), _p(cp, "maxSkew"), 0)
        key = o.str(c.get("topologyKey"), _p(cp, "topologyKey"))
        action = o.str(c.get("whenUnsatisfiable"), _p(cp, "whenUnsatisfiable"))
        selector = label_selector(o, c.get("labelSelector"), _p(cp, "labelSelector"))
        min_domains = o.int(c.get("minDomains"), _p(cp, "minDomains"))
        affinity_policy = o.str(c.get("nodeAffinityPolicy"), _p(cp, "nodeAffinityPolicy")) if c.get("nodeAffinityPolicy") is not None else None
        taints_policy = o.str(c.get("nodeTaintsPolicy"), _p(cp, "nodeTaintsPolicy")) if c.get("nodeTaintsPolicy") is not None else None
        keys = _strings(o, c.get("matchLabelKeys"), _p(cp, "matchLabelKeys"))
        parsed.append((cp, TopologySpreadConstraint(
            max_skew=max_skew, topology_key=key, when_unsatisfiable=action, label_selector=selector,
            min_domains=min_domains, node_affinity_policy=affinity_policy, node_taints_policy=taints_policy,
            match_label_keys=tuple(keys))))
    constraints = [c for _, c in parsed]
    for i, (cp, c) in enumerate(parsed):
        if c.max_skew <= 0:
            o.add(_p(cp, "maxSkew"), _invalid(c.max_skew, IS_NOT_POSITIVE))
        if not c.topology_key:
            o.add(_p(cp, "topologyKey"), "Required value: can not be empty")
        if c.when_unsatisfiable not in _SCHEDULE_ACTIONS:
            o.add(_p(cp, "whenUnsatisfiable"), f"Unsupported value: {_v(c.when_unsatisfiable)}: supported values: "
                                               + ", ".join(_v(a) for a in _SCHEDULE_ACTIONS))
        for rest in constraints[i + 1:]:
            if (rest.topology_key, rest.when_unsatisfiable) == (c.topology_key, c.when_unsatisfiable):
                o.add(_p(cp, "{topologyKey, whenUnsatisfiable}"),
                      f"Duplicate value: {_v('{' + c.topology_key + ', ' + c.when_unsatisfiable + '}')}")
                break
        if c.min_domains is not None:
            if c.min_domains <= 0:
                o.add(_p(cp, "minDomains"), _invalid(c.min_domains, IS_NOT_POSITIVE))
            if c.when_unsatisfiable != DO_NOT_SCHEDULE:
                o.add(_p(cp, "minDomains"), _invalid(c.min_domains, f"can only use minDomains if whenUnsatisfiable="
                                                                    f"{DO_NOT_SCHEDULE}, not {c.when_unsatisfiable}"))
        for name, policy in (("nodeAffinityPolicy", c.node_affinity_policy), ("nodeTaintsPolicy", c.node_taints_policy)):
            if policy is not None and policy not in _INCLUSION_POLICIES:
                o.add(_p(cp, name), f"Unsupported value: {_v(policy)}: supported values: "
                                    + ", ".join(_v(p) for p in _INCLUSION_POLICIES))
        # With MatchLabelKeysInPodTopologySpreadSelectorMerge on (beta, default on since 1.34) a new pod's
        # constraint is checked as an affinity term is (ValidateMatchLabelKeysAndMismatchLabelKeys with no
        # mismatchLabelKeys), on the selector the merge made, not by the legacy ValidateMatchLabelKeysInTopologySpread.
        _label_keys_in_selector(o, cp, list(c.match_label_keys), c.label_selector, "matchLabelKeys")
        _in_both(o, cp, list(c.match_label_keys), c.label_selector, pod_labels)
    return tuple(constraints)


# ---- pod (anti-)affinity -----------------------------------------------------------------------------
def _affinity_term(o, t: dict, path: str, pod_labels) -> PodAffinityTerm:
    selector = label_selector(o, t.get("labelSelector"), _p(path, "labelSelector"))
    ns_selector = label_selector(o, t.get("namespaceSelector"), _p(path, "namespaceSelector"))
    namespaces = _strings(o, t.get("namespaces"), _p(path, "namespaces"))
    for name in namespaces:
        for msg in is_dns1123_label(name):
            o.add(_p(path, "namespace"), _invalid(name, msg))  # sic: upstream's path names "namespace"
    match_keys = _strings(o, t.get("matchLabelKeys"), _p(path, "matchLabelKeys"))
    mismatch_keys = _strings(o, t.get("mismatchLabelKeys"), _p(path, "mismatchLabelKeys"))
    _label_keys_in_selector(o, path, match_keys, selector, "matchLabelKeys")
    _label_keys_in_selector(o, path, mismatch_keys, selector, "mismatchLabelKeys")
    _in_both(o, path, match_keys, selector, pod_labels)
    mismatched = set(mismatch_keys)
    for i, key in enumerate(match_keys):
        if key in mismatched:
            o.add(_p(_p(path, "matchLabelKeys"), i), _invalid(key, "exists in both matchLabelKeys and mismatchLabelKeys"))
    key = o.str(t.get("topologyKey"), _p(path, "topologyKey"))
    if not key:
        o.add(_p(path, "topologyKey"), "Required value: can not be empty")
    _label_name(o, _p(path, "topologyKey"), key)
    return PodAffinityTerm(topology_key=key, label_selector=selector, namespaces=tuple(namespaces),
                           namespace_selector=ns_selector, match_label_keys=tuple(match_keys),
                           mismatch_label_keys=tuple(mismatch_keys))


def _one_affinity(o, value, path: str, pod_labels) -> PodAffinity | None:
    if value is None:
        return None
    m = o.map(value, path)
    rp = _p(path, REQUIRED_TERMS)
    seq = o.list(m.get(REQUIRED_TERMS), rp)
    required = []
    for i in range(len(seq)):
        t = o.item(seq, i, rp)
        if t is not None:
            required.append(_affinity_term(o, t, _p(rp, i), pod_labels))
    pp = _p(path, PREFERRED_TERMS)
    seq = o.list(m.get(PREFERRED_TERMS), pp)
    preferred = []
    for i in range(len(seq)):
        w = o.item(seq, i, pp)
        if w is None:
            continue
        wp = _p(pp, i)
        weight = o.int(w.get("weight"), _p(wp, "weight"), 0)
        if weight <= 0 or weight > 100:
            o.add(_p(wp, "weight"), _invalid(weight, "must be in the range 1-100"))
        term = _affinity_term(o, o.map(w.get("podAffinityTerm"), _p(wp, "podAffinityTerm")), _p(wp, "podAffinityTerm"),
                              pod_labels)
        preferred.append(WeightedPodAffinityTerm(weight, term))
    return PodAffinity(tuple(required), tuple(preferred))


def pod_affinities(o, affinity, path: str = "spec.affinity", pod_labels=None
                   ) -> tuple[PodAffinity | None, PodAffinity | None]:
    """spec.affinity's podAffinity and podAntiAffinity (None where unset)."""
    if affinity is None or not isinstance(affinity, dict):
        return None, None  # the node affinity decoder reports a wrong type
    return (_one_affinity(o, affinity.get("podAffinity"), _p(path, "podAffinity"), pod_labels),
            _one_affinity(o, affinity.get("podAntiAffinity"), _p(path, "podAntiAffinity"), pod_labels))


# ---- the API server's rewrite at creation ------------------------------------------------------------
def _merge_keys_json(selector: dict | None, keys, operator: str, labels: dict) -> None:
    if selector is None:
        return
    added = [{"key": k, "operator": operator, "values": [labels[k]]} for k in keys or () if k in labels]
    if added:
        selector["matchExpressions"] = list(selector.get("matchExpressions") or []) + added


def merge_label_keys_into_manifest(manifest: dict) -> None:
    """As the pod strategy's PrepareForCreate with its default-on gates (MatchLabelKeysInPodAffinity,
    MatchLabelKeysInPodTopologySpreadSelectorMerge): in the stored manifest, each pod (anti-)affinity
    term's matchLabelKeys become `key In (value)` and mismatchLabelKeys `key NotIn (value)` in its
    labelSelector, and each topology spread constraint's matchLabelKeys `key In (value)`; keys the pod
    has no label for add nothing, and a term without a labelSelector is left as it is."""
    labels = (manifest.get("metadata") or {}).get("labels") or {}
    spec = manifest.get("spec") or {}
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        a = affinity.get(kind) or {}
        terms = list(a.get(REQUIRED_TERMS) or []) + [w.get("podAffinityTerm") or {} for w in a.get(PREFERRED_TERMS) or []]
        for t in terms:
            _merge_keys_json(t.get("labelSelector"), t.get("matchLabelKeys"), OP_IN, labels)
            _merge_keys_json(t.get("labelSelector"), t.get("mismatchLabelKeys"), OP_NOT_IN, labels)
    for c in spec.get("topologySpreadConstraints") or []:
        _merge_keys_json(c.get("labelSelector"), c.get("matchLabelKeys"), OP_IN, labels)
