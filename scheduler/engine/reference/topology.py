"""Per-node reference versions of PodTopologySpread and InterPodAffinity, following kube-scheduler's
Go code (podtopologyspread/{common,filtering,scoring}.go, interpodaffinity/{filtering,scoring}.go,
framework/types.go, helper/spread.go) one node and one pod at a time: plain dicts keyed by
(topology key, value), every existing pod looked at for every incoming pod. No numpy, and nothing
shared with the columnar plugins but the input types.

The cluster is given as `nodes` (NodeSpec), `pods_by_node` (the pods on each node, same order)
and `objects` (ClusterObjects: namespace labels, Services, RCs, ReplicaSets, StatefulSets).
"""

from __future__ import annotations

import math

from ..field import INT32_MAX, INT64_MAX, INT64_MIN
from ..framework import PreFilterRejected
from ..nodes import NodeSpec
from ..pods import PodAffinityTerm, PodSpec
from ..resources import MAX_NODE_SCORE
from . import filters as f

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"

SPREAD_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
SPREAD_NODE_LABEL_NOT_MATCH = SPREAD_CONSTRAINTS_NOT_MATCH + " (missing required label)"
AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"


class ParseError(Exception):
    pass


# ---- labels.Selector ----------------------------------------------------------------------------
# A selector is None for labels.Nothing(), else a list of (key, op, values) requirements ([] is
# labels.Everything()).

def label_selector_as_selector(ls):
    """metav1.LabelSelectorAsSelector."""
    if ls is None:
        return None
    if len(ls.match_labels) + len(ls.match_expressions) == 0:
        return []
    reqs = []
    for k, v in ls.match_labels:
        _check_requirement(k, "=", [v])
        reqs.append((k, "=", [v]))
    for e in ls.match_expressions:
        if e.operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ParseError(f"{e.operator!r} is not a valid label selector operator")
        _check_requirement(e.key, e.operator, list(e.values))
        reqs.append((e.key, e.operator, list(e.values)))
    return reqs


def _check_requirement(key, op, values):
    if not f.is_qualified_name(key):
        raise ParseError("key")
    if op in ("In", "NotIn") and len(values) == 0:
        raise ParseError("values set can't be empty")
    if op in ("Exists", "DoesNotExist") and len(values) != 0:
        raise ParseError("values set must be empty")
    for v in values:
        if not f.is_valid_label_value(v):
            raise ParseError(f"Invalid value: {v!r}")


def selector_matches(sel, labels) -> bool:
    if sel is None:
        return False
    for key, op, values in sel:
        if op in ("=", "In"):
            if key not in labels or labels[key] not in values:
                return False
        elif op == "NotIn":
            if key in labels and labels[key] in values:
                return False
        elif op == "Exists":
            if key not in labels:
                return False
        elif key in labels:  # DoesNotExist
            return False
    return True


def selector_empty(sel) -> bool:
    return sel is not None and len(sel) == 0


def selector_from_set(labels):
    return [(k, "=", [v]) for k, v in labels.items()]


# ---- PodTopologySpread ----------------------------------------------------------------------------

def _default_selector(pod: PodSpec, objects):
    """helper.DefaultSelector."""
    label_set = {}
    for svc in objects.services.get(pod.namespace, []):
        if svc is None:
            continue
        if selector_matches(selector_from_set(svc), pod.labels):
            label_set.update(svc)
    selector = selector_from_set(label_set)
    owner = None
    for ref in pod.owner_references:
        if ref.controller:
            owner = ref
            break
    if owner is None:
        return selector
    key = (pod.namespace, owner.name)
    if (owner.api_version, owner.kind) == ("v1", "ReplicationController"):
        if key in objects.replication_controllers:
            label_set.update(objects.replication_controllers[key] or {})
            selector = selector_from_set(label_set)
    elif (owner.api_version, owner.kind) in (("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")):
        table = objects.replica_sets if owner.kind == "ReplicaSet" else objects.stateful_sets
        if key in table:
            try:
                other = label_selector_as_selector(table[key])
            except ParseError:
                return selector
            if other is not None:
                selector = selector + other
    return selector


def filter_spread_constraints(constraints, pod_labels, action):
    """filterTopologySpreadConstraints; each constraint as a dict."""
    result = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = label_selector_as_selector(c.label_selector)
        if len(c.match_label_keys) > 0:
            match_labels = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
            if len(match_labels) > 0 and selector is not None:
                selector = selector_from_set(match_labels) + selector
        result.append({
            "max_skew": c.max_skew, "key": c.topology_key, "selector": selector,
            "min_domains": c.min_domains if c.min_domains is not None else 1,
            "affinity_policy": c.node_affinity_policy or "Honor",
            "taints_policy": c.node_taints_policy or "Ignore",
        })
    return result


def spread_constraints(pod: PodSpec, args, objects, action):
    """getConstraints / initPreScoreState's choice: the pod's own, else the defaults with the
    default selector. Raises ParseError."""
    if len(pod.topology_spread_constraints) > 0:
        return filter_spread_constraints(pod.topology_spread_constraints, pod.labels, action)
    defaults = _defaults(args)
    constraints = filter_spread_constraints(defaults, pod.labels, action)
    if len(constraints) == 0:
        return []
    selector = _default_selector(pod, objects)
    if selector_empty(selector):
        return []
    for c in constraints:
        c["selector"] = selector
    return constraints


def _defaults(args):
    from ..pods import TopologySpreadConstraint

    if args is None or args.defaulting_type == "System":
        return (TopologySpreadConstraint(3, LABEL_HOSTNAME, "ScheduleAnyway"),
                TopologySpreadConstraint(5, LABEL_ZONE, "ScheduleAnyway"))
    return args.default_constraints


def _system_defaulted(args) -> bool:
    return args is None or args.defaulting_type == "System"


def _node_has_all_keys(node: NodeSpec, constraints) -> bool:
    return all(c["key"] in node.labels for c in constraints)


def _required_node_affinity_matches(pod: PodSpec, node: NodeSpec) -> bool:
    for k, v in pod.node_selector.items():
        if k not in node.labels or node.labels[k] != v:
            return False
    if pod.required_terms is not None and not f.node_selector_matches(pod.required_terms, node):
        return False
    return True


def _inclusion(c, pod: PodSpec, node: NodeSpec) -> bool:
    """matchNodeInclusionPolicies."""
    if c["affinity_policy"] == "Honor" and not _required_node_affinity_matches(pod, node):
        return False
    if c["taints_policy"] == "Honor":
        untolerated = f.find_matching_untolerated_taint(node.taints, pod.tolerations,
                                                        lambda t: t.effect in ("NoSchedule", "NoExecute"))
        if untolerated is not None:
            return False
    return True


def count_pods_match_selector(pods, selector, ns) -> int:
    if selector_empty(selector):
        return 0
    count = 0
    for p in pods:
        if p.deleting or p.namespace != ns:
            continue
        if selector_matches(selector, p.labels):
            count += 1
    return count


def spread_pre_filter(pod: PodSpec, nodes, pods_by_node, args, objects):
    """calPreFilterState: "skip", or (constraints, TpValueToMatchNum per constraint)."""
    constraints = spread_constraints(pod, args, objects, "DoNotSchedule")
    if len(constraints) == 0:
        return "skip"
    tp_value_to_match_num = [dict() for _ in constraints]
    for node, node_pods in zip(nodes, pods_by_node):
        if not _node_has_all_keys(node, constraints):
            continue
        for i, c in enumerate(constraints):
            if not _inclusion(c, pod, node):
                continue
            value = node.labels[c["key"]]
            count = count_pods_match_selector(node_pods, c["selector"], pod.namespace)
            tp_value_to_match_num[i][value] = tp_value_to_match_num[i].get(value, 0) + count
    return constraints, tp_value_to_match_num


def spread_filter(pod: PodSpec, node: NodeSpec, state) -> list[str]:
    constraints, tp_value_to_match_num = state
    for i, c in enumerate(constraints):
        if c["key"] not in node.labels:
            return [SPREAD_NODE_LABEL_NOT_MATCH]
        domains = tp_value_to_match_num[i]
        min_match = INT32_MAX
        for num in domains.values():
            min_match = min(min_match, num)
        if len(domains) < c["min_domains"]:
            min_match = 0
        self_match = 1 if selector_matches(c["selector"], pod.labels) else 0
        match_num = domains.get(node.labels[c["key"]], 0)
        if match_num + self_match - min_match > c["max_skew"]:
            return [SPREAD_CONSTRAINTS_NOT_MATCH]
    return []


def spread_pre_score(pod: PodSpec, nodes, pods_by_node, feasible, args, objects):
    """PreScore: None for Skip, else (constraints, ignored names, TopologyValueToPodCounts, weights)."""
    if len(nodes) == 0:
        return None
    require_all = len(pod.topology_spread_constraints) > 0 or not _system_defaulted(args)
    constraints = spread_constraints(pod, args, objects, "ScheduleAnyway")
    if len(constraints) == 0:
        return None
    ignored = set()
    counts = [dict() for _ in constraints]
    topo_size = [0] * len(constraints)
    for i in feasible:
        node = nodes[i]
        if require_all and not _node_has_all_keys(node, constraints):
            ignored.add(node.name)
            continue
        for ci, c in enumerate(constraints):
            if c["key"] == LABEL_HOSTNAME:
                continue
            value = node.labels.get(c["key"], "")
            if value not in counts[ci]:
                counts[ci][value] = 0
                topo_size[ci] += 1
    weights = []
    for ci, c in enumerate(constraints):
        size = topo_size[ci]
        if c["key"] == LABEL_HOSTNAME:
            size = len(feasible) - len(ignored)
        weights.append(math.log(float(size + 2)))
    for node, node_pods in zip(nodes, pods_by_node):
        if require_all and not _node_has_all_keys(node, constraints):
            continue
        for ci, c in enumerate(constraints):
            if not _inclusion(c, pod, node):
                continue
            value = node.labels.get(c["key"], "")
            if value not in counts[ci]:
                continue
            counts[ci][value] += count_pods_match_selector(node_pods, c["selector"], pod.namespace)
    return constraints, ignored, counts, weights


def spread_score(pod: PodSpec, node: NodeSpec, node_pods, state) -> int:
    constraints, ignored, counts, weights = state
    if node.name in ignored:
        return 0
    score = 0.0
    for ci, c in enumerate(constraints):
        if c["key"] in node.labels:
            if c["key"] == LABEL_HOSTNAME:
                cnt = count_pods_match_selector(node_pods, c["selector"], pod.namespace)
            else:
                cnt = counts[ci][node.labels[c["key"]]]
            score += float(cnt) * weights[ci] + float(c["max_skew"] - 1)
    return _round_half_away(score)


def _round_half_away(x: float) -> int:
    """math.Round for the non-negative scores here."""
    floor = math.floor(x)
    return int(floor + 1) if x - floor >= 0.5 else int(floor)


def spread_normalize(names, scores, state) -> list[int]:
    _, ignored, _, _ = state
    scores = list(scores)
    min_score, max_score = INT64_MAX, 0
    for i, name in enumerate(names):
        if name in ignored:
            scores[i] = -1
            continue
        min_score = min(min_score, scores[i])
        max_score = max(max_score, scores[i])
    out = []
    for s in scores:
        if s == -1:
            out.append(0)
        elif max_score == 0:
            out.append(MAX_NODE_SCORE)
        else:
            out.append(f._go_div(MAX_NODE_SCORE * (max_score + min_score - s), max_score))
    return out


# ---- InterPodAffinity ------------------------------------------------------------------------------
# An affinity term is a dict: namespaces (set), selector, ns_selector, key.

def _affinity_term(pod: PodSpec, t: PodAffinityTerm):
    """newAffinityTerm. Raises ParseError."""
    selector = label_selector_as_selector(t.label_selector)
    if len(t.namespaces) == 0 and t.namespace_selector is None:
        namespaces = {pod.namespace}
    else:
        namespaces = set(t.namespaces)
    return {"namespaces": namespaces, "selector": selector,
            "ns_selector": label_selector_as_selector(t.namespace_selector), "key": t.topology_key}


def pod_info(pod: PodSpec):
    """NewPodInfo: (required affinity, required anti, preferred affinity, preferred anti, error)."""
    aff, anti = pod.pod_affinity, pod.pod_anti_affinity
    out, error = [], None
    for terms, weighted in ((aff.required if aff else (), False), (anti.required if anti else (), False),
                            (aff.preferred if aff else (), True), (anti.preferred if anti else (), True)):
        try:
            if weighted:
                out.append([(_affinity_term(pod, w.term), w.weight) for w in terms])
            else:
                out.append([_affinity_term(pod, t) for t in terms])
        except ParseError as err:
            out.append([])
            error = error or err
    return out[0], out[1], out[2], out[3], error


def term_matches(t, pod: PodSpec, ns_labels) -> bool:
    """AffinityTerm.Matches."""
    if pod.namespace in t["namespaces"] or selector_matches(t["ns_selector"], ns_labels or {}):
        return selector_matches(t["selector"], pod.labels)
    return False


def _merge_namespaces(t, objects):
    """mergeAffinityTermNamespacesIfNotEmpty."""
    if selector_empty(t["ns_selector"]):
        return t
    names = {name for name, labels in objects.namespace_labels.items() if selector_matches(t["ns_selector"], labels)}
    return {**t, "namespaces": t["namespaces"] | names, "ns_selector": None}


def _matches_all(terms, pod: PodSpec) -> bool:
    if len(terms) == 0:
        return False
    return all(term_matches(t, pod, None) for t in terms)


def _bump(counts, node: NodeSpec, key, value):
    if key in node.labels:
        pair = (key, node.labels[key])
        counts[pair] = counts.get(pair, 0) + value


def affinity_pre_filter(pod: PodSpec, nodes, pods_by_node, objects):
    """PreFilter: a PreFilterRejected, "skip", or the state."""
    required, required_anti, _, _, error = pod_info(pod)
    if error is not None:
        return PreFilterRejected("parsing pod")  # the message is checked by the plugin's own tests
    required = [_merge_namespaces(t, objects) for t in required]
    required_anti = [_merge_namespaces(t, objects) for t in required_anti]
    ns_labels = objects.namespace_labels.get(pod.namespace)
    existing_anti, affinity, anti = {}, {}, {}
    for node, node_pods in zip(nodes, pods_by_node):
        for existing in node_pods:
            _, existing_required_anti, _, _, _ = pod_info(existing)
            for t in existing_required_anti:
                if term_matches(t, pod, ns_labels):
                    _bump(existing_anti, node, t["key"], 1)
            if _matches_all(required, existing):
                for t in required:
                    _bump(affinity, node, t["key"], 1)
            for t in required_anti:
                if term_matches(t, existing, None):
                    _bump(anti, node, t["key"], 1)
    if len(existing_anti) == 0 and len(required) == 0 and len(required_anti) == 0:
        return "skip"
    return {"pod": pod, "required": required, "required_anti": required_anti, "existing_anti": existing_anti,
            "affinity": affinity, "anti": anti}


def affinity_filter(node: NodeSpec, state) -> list[str]:
    # satisfyPodAffinity
    pods_exist = True
    for t in state["required"]:
        if t["key"] in node.labels:
            if state["affinity"].get((t["key"], node.labels[t["key"]]), 0) <= 0:
                pods_exist = False
        else:
            return [AFFINITY_RULES_NOT_MATCH]
    if not pods_exist:
        if not (len(state["affinity"]) == 0 and _matches_all(state["required"], state["pod"])):
            return [AFFINITY_RULES_NOT_MATCH]
    # satisfyPodAntiAffinity
    if len(state["anti"]) > 0:
        for t in state["required_anti"]:
            if t["key"] in node.labels and state["anti"].get((t["key"], node.labels[t["key"]]), 0) > 0:
                return [ANTI_AFFINITY_RULES_NOT_MATCH]
    # satisfyExistingPodsAntiAffinity
    if len(state["existing_anti"]) > 0:
        for key, value in node.labels.items():
            if state["existing_anti"].get((key, value), 0) > 0:
                return [EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH]
    return []


def affinity_pre_score(pod: PodSpec, nodes, pods_by_node, args, objects):
    """PreScore: None for Skip, else topologyScore {key: {value: score}}. Raises ParseError."""
    hard_weight = args.hard_pod_affinity_weight if args is not None else 1
    ignore_preferred = args.ignore_preferred_terms_of_existing_pods if args is not None else False
    aff, anti = pod.pod_affinity, pod.pod_anti_affinity
    has_constraints = (aff is not None and len(aff.preferred) > 0) or (anti is not None and len(anti.preferred) > 0)
    if ignore_preferred and not has_constraints:
        return None
    _, _, preferred, preferred_anti, error = pod_info(pod)
    if error is not None:
        raise error
    preferred = [(_merge_namespaces(t, objects), w) for t, w in preferred]
    preferred_anti = [(_merge_namespaces(t, objects), w) for t, w in preferred_anti]
    ns_labels = objects.namespace_labels.get(pod.namespace)
    topology_score: dict[str, dict[str, int]] = {}
    any_entry = False

    def process(t, weight, target, target_ns_labels, node, multiplier):
        nonlocal any_entry
        if term_matches(t, target, target_ns_labels) and t["key"] in node.labels:
            per_value = topology_score.setdefault(t["key"], {})
            value = node.labels[t["key"]]
            per_value[value] = per_value.get(value, 0) + weight * multiplier
            any_entry = True

    for node, node_pods in zip(nodes, pods_by_node):
        for existing in node_pods:
            with_affinity = existing.pod_affinity is not None or existing.pod_anti_affinity is not None
            if not has_constraints and not with_affinity:
                continue
            if len(node.labels) == 0:
                continue
            for t, w in preferred:
                process(t, w, existing, None, node, 1)
            for t, w in preferred_anti:
                process(t, w, existing, None, node, -1)
            e_required, _, e_preferred, e_preferred_anti, _ = pod_info(existing)
            if hard_weight > 0:
                for t in e_required:
                    process(t, hard_weight, pod, ns_labels, node, 1)
            for t, w in e_preferred:
                process(t, w, pod, ns_labels, node, 1)
            for t, w in e_preferred_anti:
                process(t, w, pod, ns_labels, node, -1)
    if not any_entry:
        return None
    return topology_score


def affinity_score(node: NodeSpec, topology_score) -> int:
    score = 0
    for key, values in topology_score.items():
        if key in node.labels:
            score += values.get(node.labels[key], 0)
    return score


def affinity_normalize(scores) -> list[int]:
    min_count, max_count = INT64_MAX, INT64_MIN
    for s in scores:
        max_count = max(max_count, s)
        min_count = min(min_count, s)
    diff = max_count - min_count
    out = []
    for s in scores:
        f_score = 0.0
        if diff > 0:
            f_score = float(MAX_NODE_SCORE) * (float(s - min_count) / float(diff))
        out.append(int(f_score))
    return out
