"""NodeAffinity: spec.nodeSelector, required node affinity and the profile's addedAffinity filter
nodes; preferred terms score them. As kube-scheduler's plugins/nodeaffinity with the selector
semantics of component-helpers' nodeaffinity and apimachinery's labels.Requirement.

Every requirement is evaluated over all nodes at once through the NodeTable's label columns.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..field import parse_int64
from ..framework import FilterResult, default_normalize_score, PreFilterRejected
from ..k8s_validation import is_qualified_name, is_valid_label_value
from ..nodes import LabelColumn, NodeTable
from ..plugin_args import NodeAffinityArgs
from ..pods import (
    OP_DOES_NOT_EXIST,
    OP_EXISTS,
    OP_GT,
    OP_IN,
    OP_LT,
    OP_NOT_IN,
    NodeSelectorTerm,
    PodSpec,
    PreferredTerm,
    Requirement,
)
from ..resources import MAX_NODE_SCORE

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
# As upstream PreFilter: every term pins metadata.name and their union is empty. Upstream rejects
# the pod at PreFilter with this status; our PreFilter protocol can only say "no nodes" (an empty set).
ERR_REASON_CONFLICT = "pod affinity terms conflict"

OBJECT_NAME_FIELD = "metadata.name"

# ---- selector validation, as labels.NewRequirement and nodeSelectorRequirementsAsFieldSelector ----

def _label_requirement_valid(req: Requirement) -> bool:
    # As labels.NewRequirement: any validation message on the key or a value makes it an error.
    if is_qualified_name(req.key):
        return False
    if req.operator in (OP_IN, OP_NOT_IN):
        ok = len(req.values) > 0
    elif req.operator in (OP_EXISTS, OP_DOES_NOT_EXIST):
        ok = len(req.values) == 0
    elif req.operator in (OP_GT, OP_LT):
        ok = len(req.values) == 1 and all(parse_int64(v) is not None for v in req.values)
    else:
        return False  # unsupported operator
    return ok and not any(is_valid_label_value(v) for v in req.values)


def _field_requirement_valid(req: Requirement) -> bool:
    # As upstream: field selectors support In and NotIn with exactly one value each.
    return req.operator in (OP_IN, OP_NOT_IN) and len(req.values) == 1


def term_is_empty(term: NodeSelectorTerm) -> bool:
    """As isEmptyNodeSelectorTerm: such a term is dropped, and so selects nothing."""
    return not term.match_expressions and not term.match_fields


def term_is_valid(term: NodeSelectorTerm) -> bool:
    """False where upstream's newNodeSelectorTerm records parse errors (the term then never matches)."""
    return all(_label_requirement_valid(r) for r in term.match_expressions) and all(
        _field_requirement_valid(r) for r in term.match_fields
    )


# ---- evaluation over all nodes ---------------------------------------------------------------
def _int_codes(col: LabelColumn) -> tuple[np.ndarray, np.ndarray]:
    """Each node's label value as int64 and where it parses as Go would (missing keys never do)."""
    k = len(col.vocab)
    parsed = np.zeros(k + 1, dtype=np.int64)
    ok = np.zeros(k + 1, dtype=bool)
    for value, code in col.vocab.items():
        v = parse_int64(value)
        if v is not None:
            parsed[code], ok[code] = v, True
    idx = np.where(col.codes >= 0, col.codes, k)  # slot k: key absent
    return parsed[idx], ok[idx]


def _label_mask(req: Requirement, nodes: NodeTable) -> np.ndarray:
    """As labels.Requirement.Matches, for a requirement already known to be valid."""
    col = nodes.label(req.key)
    if req.operator == OP_IN:
        return col.isin(req.values)
    if req.operator == OP_NOT_IN:
        return ~col.isin(req.values)  # a node lacking the key matches NotIn
    if req.operator == OP_EXISTS:
        return col.exists()
    if req.operator == OP_DOES_NOT_EXIST:
        return ~col.exists()
    bound = parse_int64(req.values[0])
    values, parses = _int_codes(col)
    if req.operator == OP_GT:
        return parses & (values > bound)
    return parses & (values < bound)


def _field_mask(req: Requirement, nodes: NodeTable) -> np.ndarray:
    # As extractNodeFields: a node has the one field metadata.name; fields.Set.Get of any other key is "".
    if req.key == OBJECT_NAME_FIELD:
        equal = nodes.name_array == req.values[0]
    else:
        equal = np.full(nodes.n, req.values[0] == "", dtype=bool)
    return np.asarray(equal, dtype=bool) if req.operator == OP_IN else ~np.asarray(equal, dtype=bool)


def term_mask(term: NodeSelectorTerm, nodes: NodeTable) -> np.ndarray:
    """Nodes matching one term: its requirements ANDed; empty or invalid terms match nothing."""
    if term_is_empty(term) or not term_is_valid(term):
        return np.zeros(nodes.n, dtype=bool)
    mask = np.ones(nodes.n, dtype=bool)
    for req in term.match_expressions:
        mask &= _label_mask(req, nodes)
    for req in term.match_fields:
        mask &= _field_mask(req, nodes)
    return mask


def selector_mask(terms: tuple[NodeSelectorTerm, ...], nodes: NodeTable) -> np.ndarray:
    """A NodeSelector: its terms ORed (so no terms match no node)."""
    mask = np.zeros(nodes.n, dtype=bool)
    for term in terms:
        mask |= term_mask(term, nodes)
    return mask


def required_mask(pod: PodSpec, nodes: NodeTable) -> np.ndarray:
    """As RequiredNodeAffinity.Match: nodeSelector labels all equal, and the required terms."""
    mask = np.ones(nodes.n, dtype=bool)
    for key, value in pod.node_selector.items():
        mask &= nodes.label(key).isin((value,))
    if pod.required_terms is not None:
        mask &= selector_mask(pod.required_terms, nodes)
    return mask


def scored_terms(terms: tuple[PreferredTerm, ...]) -> list[PreferredTerm]:
    """As NewPreferredSchedulingTerms: weight-0 and empty terms are dropped.

    Upstream fails PreScore with an error when a pod's preferred term does not parse; the
    scheduler we model has no error path for Score, so such a term is dropped too (contributes 0).
    """
    return [t for t in terms if t.weight != 0 and not term_is_empty(t.preference) and term_is_valid(t.preference)]


_UNRESOLVABLE = frozenset((ERR_REASON_ENFORCED, ERR_REASON_POD))


class NodeAffinity:
    name: ClassVar[str] = "NodeAffinity"
    usage_dependent: ClassVar[bool] = False  # the node's labels and name only

    def sign(self, pod: PodSpec, nodes: NodeTable):
        """The pod's signature element (KEP-5598): nodeSelector and the node affinity terms (the
        added affinity of the args is the plugin's own, the same for every pod)."""
        selector = tuple(sorted(pod.node_selector.items())) if pod.node_selector else ()
        return selector, pod.required_terms, pod.preferred_terms

    def __init__(self, args: NodeAffinityArgs | None = None):
        self.args = args or NodeAffinityArgs()
        added = self.args.added_required_terms
        # As upstream New/ValidateNodeAffinityArgs: addedAffinity must parse, else the profile is invalid.
        if added is not None:
            bad = [t for t in added if not term_is_empty(t) and not term_is_valid(t)]
            if bad:
                raise ValueError(f"parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: invalid term {bad[0]}")
        pref = self.args.added_preferred_terms
        bad_pref = [t for t in pref if t.weight != 0 and not term_is_empty(t.preference) and not term_is_valid(t.preference)]
        if bad_pref:
            raise ValueError(f"parsing addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: invalid term {bad_pref[0]}")
        self._added_required = added
        self._added_preferred = scored_terms(pref)
        self._has_added_preferred = len(pref) != 0

    def pre_filter(self, pod: PodSpec, nodes: NodeTable) -> set[str] | PreFilterRejected | None:
        """As upstream PreFilter: narrow to the node names pinned by matchFields metadata.name In.

        Terms are ORed, so any term without such a requirement leaves all nodes eligible; within
        a term, the name sets are intersected. An empty result is upstream's conflict status.
        """
        terms = pod.required_terms
        if not terms:
            return None
        names: set[str] | None = None
        for term in terms:
            term_names: set[str] | None = None
            for req in term.match_fields:
                if req.key == OBJECT_NAME_FIELD and req.operator == OP_IN:
                    values = set(req.values)
                    term_names = values if term_names is None else term_names & values
            if term_names is None:
                return None
            names = term_names if names is None else names | term_names
        if not names:
            # As upstream: UnschedulableAndUnresolvable at PreFilter, the whole pod rejected.
            return PreFilterRejected(ERR_REASON_CONFLICT)
        return names

    def filter(self, pod: PodSpec, nodes: NodeTable) -> FilterResult:
        n = nodes.n
        reasons = []
        enforced_ok = np.ones(n, dtype=bool)
        # As upstream: the scheduler-enforced affinity is checked first and wins when both fail.
        if self._added_required is not None:
            enforced_ok = selector_mask(self._added_required, nodes)
            reasons.append((ERR_REASON_ENFORCED, ~enforced_ok))
        if pod.node_selector or pod.required_terms is not None:
            reasons.append((ERR_REASON_POD, enforced_ok & ~required_mask(pod, nodes)))
        if not reasons:
            return FilterResult.all_pass(n)  # As upstream PreFilter Skip
        # As upstream: evicting pods cannot change a node's labels (UnschedulableAndUnresolvable).
        return FilterResult.from_reasons(n, reasons, unresolvable=_UNRESOLVABLE)

    def score(self, pod: PodSpec, nodes: NodeTable, rows: np.ndarray) -> np.ndarray | None:
        # As upstream PreScore: Skip when neither the pod nor the args have preferred terms.
        if not pod.preferred_terms and not self._has_added_preferred:
            return None
        rows = np.asarray(rows, dtype=np.int64)
        total = np.zeros(len(rows), dtype=np.int64)
        for term in self._added_preferred + scored_terms(pod.preferred_terms):
            total += np.int64(term.weight) * term_mask(term.preference, nodes)[rows]
        return total

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        return default_normalize_score(MAX_NODE_SCORE, False, scores)
