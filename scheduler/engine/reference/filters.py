"""Per-node reference versions of NodeUnschedulable, NodeName, TaintToleration, NodeAffinity and
NodePorts, following kube-scheduler's Go code line by line (one node, plain Python, no numpy).

Each filter takes (PodSpec, NodeSpec or NodeUsage) and returns its reasons: an empty list passes.
Scores return the raw int; default_normalize_score works on a plain list.
"""

from __future__ import annotations

import re

from ..nodes import NodeSpec, NodeUsage
from ..pods import NodeSelectorTerm, PodSpec, PreferredTerm, Requirement, Taint, Toleration
from ..resources import MAX_NODE_SCORE
from ..framework import PreFilterRejected


# ---- helper.DefaultNormalizeScore --------------------------------------------------------------


def _go_div(a: int, b: int) -> int:
    """Go's int64 division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def default_normalize_score(max_priority: int, reverse: bool, scores: list[int]) -> list[int]:
    max_count = 0
    for s in scores:
        if s > max_count:
            max_count = s
    if max_count == 0:
        if reverse:
            return [max_priority for _ in scores]
        return list(scores)
    out = []
    for s in scores:
        s = _go_div(max_priority * s, max_count)
        if reverse:
            s = max_priority - s
        out.append(s)
    return out


# ---- v1.Toleration.ToleratesTaint and friends ---------------------------------------------------


def toleration_tolerates_taint(t: Toleration, taint: Taint) -> bool:
    if len(t.effect) > 0 and t.effect != taint.effect:
        return False
    if len(t.key) > 0 and t.key != taint.key:
        return False
    if t.operator in ("", "Equal"):
        return t.value == taint.value
    if t.operator == "Exists":
        return True
    # Lt/Gt need the alpha TaintTolerationComparisonOperators gate (off by default).
    return False


def tolerations_tolerate_taint(tolerations, taint: Taint) -> bool:
    for t in tolerations:
        if toleration_tolerates_taint(t, taint):
            return True
    return False


def find_matching_untolerated_taint(taints, tolerations, inclusion_filter) -> Taint | None:
    for taint in taints:
        if inclusion_filter is not None and not inclusion_filter(taint):
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


# ---- NodeUnschedulable -------------------------------------------------------------------------


def node_unschedulable(pod: PodSpec, node: NodeSpec) -> list[str]:
    if not node.unschedulable:
        return []
    unschedulable_taint = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
    if not tolerations_tolerate_taint(pod.tolerations, unschedulable_taint):
        return ["node(s) were unschedulable"]
    return []


# ---- NodeName ------------------------------------------------------------------------------------


def node_name(pod: PodSpec, node: NodeSpec) -> list[str]:
    if len(pod.node_name) == 0 or pod.node_name == node.name:
        return []
    return ["node(s) didn't match the requested node name"]


# ---- TaintToleration -----------------------------------------------------------------------------


def taint_toleration_filter(pod: PodSpec, node: NodeSpec) -> list[str]:
    def do_not_schedule(t: Taint) -> bool:
        return t.effect in ("NoSchedule", "NoExecute")

    if find_matching_untolerated_taint(node.taints, pod.tolerations, do_not_schedule) is None:
        return []
    return ["node(s) had untolerated taint(s)"]


def taint_toleration_score(pod: PodSpec, node: NodeSpec) -> int:
    # PreScore: tolerations with effect "" or PreferNoSchedule.
    prefer = [t for t in pod.tolerations if len(t.effect) == 0 or t.effect == "PreferNoSchedule"]
    intolerable = 0
    for taint in node.taints:
        if taint.effect != "PreferNoSchedule":
            continue
        if not tolerations_tolerate_taint(prefer, taint):
            intolerable += 1
    return intolerable


def taint_toleration_normalize(scores: list[int]) -> list[int]:
    return default_normalize_score(MAX_NODE_SCORE, True, scores)


# ---- label and field selectors (labels.NewRequirement / Requirement.Matches) --------------------

_QNAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*")


def go_parse_int(s: str) -> int | None:
    """strconv.ParseInt(s, 10, 64), None for an error."""
    body = s[1:] if s[:1] in ("+", "-") else s
    if body == "" or any(c not in "0123456789" for c in body):
        return None
    v = int(s)
    if v < -(2**63) or v > 2**63 - 1:
        return None
    return v


def is_qualified_name(key: str) -> bool:
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts[0], parts[1]
        if len(prefix) == 0:
            return False
        if len(prefix) > 253 or _DNS1123_SUBDOMAIN.fullmatch(prefix) is None:
            return False
    else:
        return False
    if len(name) == 0 or len(name) > 63:
        return False
    return _QNAME.fullmatch(name) is not None


def is_valid_label_value(v: str) -> bool:
    return len(v) <= 63 and _LABEL_VALUE.fullmatch(v) is not None


def new_label_requirement(r: Requirement) -> list[str]:
    """The errors labels.NewRequirement reports (after the operator mapping); [] when valid."""
    errs = []
    if not is_qualified_name(r.key):
        errs.append("key")
    if r.operator in ("In", "NotIn"):
        if len(r.values) == 0:
            errs.append("values set can't be empty")
    elif r.operator in ("Exists", "DoesNotExist"):
        if len(r.values) != 0:
            errs.append("values set must be empty")
    elif r.operator in ("Gt", "Lt"):
        if len(r.values) != 1:
            errs.append("exactly one value is required")
        for v in r.values:
            if go_parse_int(v) is None:
                errs.append("the value must be an integer")
    else:
        return ["operator not supported"]
    for v in r.values:
        if not is_valid_label_value(v):
            errs.append("value")
    return errs


def label_requirement_matches(r: Requirement, labels: dict[str, str]) -> bool:
    if r.operator == "In":
        if r.key not in labels:
            return False
        return labels[r.key] in r.values
    if r.operator == "NotIn":
        if r.key not in labels:
            return True
        return labels[r.key] not in r.values
    if r.operator == "Exists":
        return r.key in labels
    if r.operator == "DoesNotExist":
        return r.key not in labels
    if r.operator in ("Gt", "Lt"):
        if r.key not in labels:
            return False
        ls_value = go_parse_int(labels[r.key])
        if ls_value is None:
            return False
        if len(r.values) != 1:
            return False
        r_value = go_parse_int(r.values[0])
        if r_value is None:
            return False
        return (r.operator == "Gt" and ls_value > r_value) or (r.operator == "Lt" and ls_value < r_value)
    return False


def _term_parse_errors(term: NodeSelectorTerm) -> list[str]:
    errs = []
    for r in term.match_expressions:
        errs += new_label_requirement(r)
    for r in term.match_fields:
        if r.operator not in ("In", "NotIn"):
            errs.append("field operator not supported")
        elif len(r.values) != 1:
            errs.append("must have one element")
    return errs


def _is_empty_term(term: NodeSelectorTerm) -> bool:
    return len(term.match_expressions) == 0 and len(term.match_fields) == 0


def node_selector_term_matches(term: NodeSelectorTerm, node: NodeSpec) -> bool:
    """nodeSelectorTerm.match for a non-empty term; a term with parse errors does not match."""
    if _term_parse_errors(term):
        return False
    for r in term.match_expressions:
        if not label_requirement_matches(r, node.labels):
            return False
    fields = {"metadata.name": node.name} if len(node.name) > 0 else {}
    if term.match_fields and len(fields) > 0:
        for r in term.match_fields:
            equal = fields.get(r.key, "") == r.values[0]
            if (r.operator == "In") != equal:
                return False
    return True


def node_selector_matches(terms, node: NodeSpec) -> bool:
    """LazyErrorNodeSelector.Match: terms ORed, empty terms dropped."""
    for term in terms:
        if _is_empty_term(term):
            continue
        if node_selector_term_matches(term, node):
            return True
    return False


def preferred_terms_score(terms, node: NodeSpec) -> int:
    """PreferredSchedulingTerms.Score. Weight-0 and empty terms are dropped as upstream; a term that
    fails to parse (an error at upstream's PreScore) is dropped too, as the engine does."""
    score = 0
    for t in terms:
        if t.weight == 0 or _is_empty_term(t.preference) or _term_parse_errors(t.preference):
            continue
        if node_selector_term_matches(t.preference, node):
            score += t.weight
    return score


# ---- NodeAffinity --------------------------------------------------------------------------------


def node_affinity_pre_filter(pod: PodSpec) -> "set[str] | PreFilterRejected | None":
    """The PreFilterResult node names, None for all nodes; an empty set is upstream's
    "pod affinity terms conflict" rejection."""
    if pod.required_terms is None or len(pod.required_terms) == 0:
        return None
    node_names = None
    for t in pod.required_terms:
        term_node_names = None
        for r in t.match_fields:
            if r.key == "metadata.name" and r.operator == "In":
                s = set(r.values)
                if term_node_names is None:
                    term_node_names = s
                else:
                    term_node_names = term_node_names & s
        if term_node_names is None:
            return None
        node_names = set(term_node_names) if node_names is None else node_names | term_node_names
    if not node_names:
        return PreFilterRejected("pod affinity terms conflict")
    return node_names


def node_affinity_filter(pod: PodSpec, node: NodeSpec, args=None) -> list[str]:
    added = args.added_required_terms if args is not None else None
    if added is not None and not node_selector_matches(added, node):
        return ["node(s) didn't match scheduler-enforced node affinity"]
    # RequiredNodeAffinity.Match
    if len(pod.node_selector) > 0:
        for k, v in pod.node_selector.items():
            if k not in node.labels or node.labels[k] != v:
                return ["node(s) didn't match Pod's node affinity/selector"]
    if pod.required_terms is not None and not node_selector_matches(pod.required_terms, node):
        return ["node(s) didn't match Pod's node affinity/selector"]
    return []


def node_affinity_pre_score_skip(pod: PodSpec, args=None) -> bool:
    added_preferred: tuple[PreferredTerm, ...] = args.added_preferred_terms if args is not None else ()
    return len(pod.preferred_terms) == 0 and len(added_preferred) == 0


def node_affinity_score(pod: PodSpec, node: NodeSpec, args=None) -> int:
    count = 0
    if args is not None and len(args.added_preferred_terms) != 0:
        count += preferred_terms_score(args.added_preferred_terms, node)
    if len(pod.preferred_terms) != 0:
        count += preferred_terms_score(pod.preferred_terms, node)
    return count


def node_affinity_normalize(scores: list[int]) -> list[int]:
    return default_normalize_score(MAX_NODE_SCORE, False, scores)


# ---- NodePorts (HostPortInfo) --------------------------------------------------------------------


def _sanitize(ip: str, protocol: str) -> tuple[str, str]:
    if len(ip) == 0:
        ip = "0.0.0.0"
    if len(protocol) == 0:
        protocol = "TCP"
    return ip, protocol


def host_port_info(usage: NodeUsage) -> dict[str, set[tuple[str, int]]]:
    """HostPortInfo.Add over the node's used ports: ip -> {(protocol, port)}."""
    info: dict[str, set[tuple[str, int]]] = {}
    for p in usage.ports:
        if p.port <= 0:
            continue
        ip, protocol = _sanitize(p.ip, p.protocol)
        info.setdefault(ip, set()).add((protocol, p.port))
    return info


def check_conflict(info, ip: str, protocol: str, port: int) -> bool:
    if port <= 0:
        return False
    ip, protocol = _sanitize(ip, protocol)
    pp = (protocol, port)
    if ip == "0.0.0.0":
        for m in info.values():
            if pp in m:
                return True
        return False
    for key in ("0.0.0.0", ip):
        if key in info and pp in info[key]:
            return True
    return False


def get_host_ports(pod: PodSpec) -> list:
    """As schedutil.GetHostPorts: sidecar init containers (restartPolicy Always), then containers."""
    ports = []
    for c in pod.init_containers:
        if c.restart_policy != "Always":
            continue
        for p in c.ports:
            if p.port > 0:
                ports.append(p)
    for c in pod.containers:
        for p in c.ports:
            if p.port > 0:
                ports.append(p)
    return ports


def node_ports(pod: PodSpec, usage: NodeUsage) -> list[str]:
    want = get_host_ports(pod)
    if len(want) == 0:
        return []
    info = host_port_info(usage)
    for cp in want:
        if check_conflict(info, cp.ip, cp.protocol, cp.port):
            return ["node(s) didn't have free ports for the requested pod ports"]
    return []
