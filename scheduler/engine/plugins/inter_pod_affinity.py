"""InterPodAffinity: pods that must (or would rather) share, or must not (or would rather not)
share a topology domain with other pods. As kube-scheduler's plugins/interpodaffinity
(filtering.go, scoring.go, plugin.go), columnar:

- PreFilter builds upstream's three topology-pair count maps as one vector per topology key
  (indexed by the key's value codes): existing pods' required anti-affinity terms that match the
  incoming pod, and existing pods matching the incoming pod's required affinity (all terms) and
  anti-affinity (each term). Existing pods' terms come from the pod index, grouped by term, so
  each distinct term is tested once; the incoming pod's terms are per-node count queries the index
  keeps up to date. Filter then judges every node at once.
- PreScore / Score sum upstream's topologyScore (preferred terms of both sides, the existing pods'
  required affinity at hardPodAffinityWeight) the same way; NormalizeScore scales by the actual
  minimum and maximum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..framework import SKIP, FilterResult, PluginError, PreFilterRejected, cycle_state
from ..nodes import NodeTable
from ..pod_index import RowCounts
from ..pod_info import EMPTY_POD_INFO, AffinityTerm, PodInfo, incoming_term, pod_info
from ..pods import PodSpec
from ..resources import MAX_NODE_SCORE
from ..topology import domains

NAME = "InterPodAffinity"

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1  # as SetDefaults_InterPodAffinityArgs

PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

_NO_NAMESPACE_LABELS: dict[str, str] = {}


@dataclass(frozen=True)
class InterPodAffinityArgs:
    """InterPodAffinityArgs (kubescheduler.config.k8s.io/v1), defaulted."""

    hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    ignore_preferred_terms_of_existing_pods: bool = False


class TopologyCounts:
    """Upstream's topologyToMatchedTermCount: (topology key, value) -> count, as one int64 vector per
    key over that key's value codes, with which entries exist (a Go map entry, even at zero)."""

    def __init__(self) -> None:
        self.by_key: dict[str, np.ndarray] = {}
        self.present: dict[str, np.ndarray] = {}

    def add(self, nodes: NodeTable, key: str, per_value: np.ndarray, touched: np.ndarray) -> None:
        if not touched.any():
            return
        if key in self.by_key:
            self.by_key[key] = self.by_key[key] + per_value
            self.present[key] = self.present[key] | touched
        else:
            self.by_key[key] = per_value.copy()  # never alias the index's own vectors
            self.present[key] = touched

    def bump(self, nodes: NodeTable, key: str, row: int, delta: int) -> None:
        """As topologyToMatchedTermCount.update: add `delta` under (key, value of node `row`) if the
        node has the key; an entry back at zero is deleted."""
        d = domains(nodes, key)
        code = d.codes[row]
        if code < 0:
            return
        if key not in self.by_key:
            self.by_key[key] = np.zeros(d.size, dtype=np.int64)
            self.present[key] = np.zeros(d.size, dtype=bool)
        self.by_key[key][code] += delta
        self.present[key][code] = self.by_key[key][code] != 0

    def __len__(self) -> int:
        return sum(int(np.count_nonzero(p)) for p in self.present.values())

    def at_nodes(self, nodes: NodeTable, key: str) -> np.ndarray:
        """Each node's count under `key` (0 where the node lacks the key or no entry exists)."""
        vec = self.by_key.get(key)
        if vec is None:
            return np.zeros(nodes.n, dtype=np.int64)
        return domains(nodes, key).at_nodes(vec)

    def as_dict(self, nodes: NodeTable) -> dict[tuple[str, str], int]:
        """(key, value) -> count, for explanations and tests."""
        out = {}
        for key, present in self.present.items():
            values = domains(nodes, key).values
            for code in np.flatnonzero(present):
                out[(key, values[code])] = int(self.by_key[key][code])
        return out


@dataclass
class PreFilterState:
    required_affinity: tuple[AffinityTerm, ...]  # the incoming pod's, namespace selectors unrolled
    required_anti_affinity: tuple[AffinityTerm, ...]
    namespace_labels: dict[str, str]
    existing_anti_affinity: TopologyCounts
    affinity: TopologyCounts
    anti_affinity: TopologyCounts
    pod: PodSpec


    def update_with_pod(self, updated: PodSpec, row: int, nodes: NodeTable, delta: int) -> None:
        """As preFilterState.updateWithPod (PreFilterExtensions AddPod / RemovePod, for preemption):
        count `updated` placed on (delta +1) or taken off (-1) node `row`."""
        info = pod_info(updated)
        for t in info.required_anti_affinity:
            if t.matches(self.pod.namespace, self.pod.labels, self.namespace_labels):
                self.existing_anti_affinity.bump(nodes, t.topology_key, row, delta)
        if _matches_all(self.required_affinity, updated.namespace, updated.labels):
            for t in self.required_affinity:
                self.affinity.bump(nodes, t.topology_key, row, delta)
        for t in self.required_anti_affinity:
            if t.matches(updated.namespace, updated.labels, _NO_NAMESPACE_LABELS):
                self.anti_affinity.bump(nodes, t.topology_key, row, delta)


@dataclass
class PreScoreState:
    topology_score: TopologyCounts


def _namespaces_of(terms) -> frozenset[str] | None:
    """The namespaces a pod must be in to match all `terms` (None: any)."""
    out = None
    for t in terms:
        if t.all_namespaces:
            continue
        out = t.namespaces if out is None else out & t.namespaces
    return out


def _matches_all(terms, namespace: str, labels) -> bool:
    """As podMatchesAllAffinityTerms for the incoming pod's own (unrolled) terms."""
    if not terms:
        return False
    return all(t.matches(namespace, labels, _NO_NAMESPACE_LABELS) for t in terms)


def _term_query(term: AffinityTerm):
    """The pod index question for an incoming pod's (unrolled) term: the existing pods it matches."""
    return (("term", term), None if term.all_namespaces else term.namespaces,
            lambda ns, labels, deleting: term.matches(ns, labels, _NO_NAMESPACE_LABELS))


def _all_terms_query(terms: tuple[AffinityTerm, ...]):
    """The pod index question for podMatchesAllAffinityTerms: the existing pods matching every term."""
    return (("all", terms), _namespaces_of(terms),
            lambda ns, labels, deleting: all(t.matches(ns, labels, _NO_NAMESPACE_LABELS) for t in terms))


def _add_matching(counts: TopologyCounts, nodes: NodeTable, key: str, query, factor: int = 1) -> None:
    """Add factor * (existing pods the query matches) under (key, value) for every node with the key
    and such pods (each such pod makes a map entry upstream, even when factor is 0). The index keeps
    the per-domain sums up to date between cycles."""
    d = domains(nodes, key)
    sums, _ = nodes.pods.count_per_domain(*query, ("domains", key), d.codes, d.size, d.has_key())
    touched = sums != 0
    if not touched.any():
        return
    counts.add(nodes, key, sums * factor, touched)


def _add_term(counts: TopologyCounts, nodes: NodeTable, key: str, rows: RowCounts, factor: int = 1) -> None:
    """Add factor * (existing pods carrying a term) under (key, value) for each node with the key;
    the index keeps the per-domain sums of each term up to date."""
    d = domains(nodes, key)
    per_value = rows.per_domain(key, d.codes, d.size)
    touched = per_value != 0
    if not touched.any():
        return
    counts.add(nodes, key, per_value * factor, touched)


class InterPodAffinity:
    name: ClassVar[str] = NAME

    def __init__(self, args: InterPodAffinityArgs | None = None):
        self.args = args or InterPodAffinityArgs()
        w = self.args.hard_pod_affinity_weight
        if w < 0 or w > 100:
            raise ValueError(f"hardPodAffinityWeight: Invalid value: {w}: not in valid range [0, 100]")

    # ---- signature (KEP-5598) --------------------------------------------------------------
    usage_dependent: ClassVar[bool] = False  # signed only when both PreFilter and PreScore skip

    def sign(self, pod: PodSpec, nodes: NodeTable):
        """A pod with affinity terms is unsignable, as upstream's SignPod. Upstream signs the others by
        their labels; we sign them only while no pod in the cluster has affinity terms either (then
        PreFilter and PreScore skip), so that a pod with terms placed anywhere never leaves a shared
        verdict stale: a narrower set of pods, the same placements."""
        if pod_info(pod) is not EMPTY_POD_INFO or nodes.pods.pods_with_affinity:
            return None
        return ()

    # ---- PreFilter / Filter --------------------------------------------------------------
    def pre_filter(self, pod: PodSpec, nodes: NodeTable):
        info = pod_info(pod)
        if info is EMPTY_POD_INFO and not nodes.pods.pods_with_required_anti_affinity:
            return SKIP  # the common case: no terms on either side
        if info.parse_error is not None:
            # As upstream: UnschedulableAndUnresolvable at PreFilter.
            return PreFilterRejected(f"parsing pod: {info.parse_error}")
        state = self._pre_filter_state(pod, nodes, info)
        if not len(state.existing_anti_affinity) and not info.required_affinity and not info.required_anti_affinity:
            return SKIP
        cycle_state().write(PRE_FILTER_STATE_KEY, state)
        return None

    def _pre_filter_state(self, pod: PodSpec, nodes: NodeTable, info: PodInfo) -> PreFilterState:
        objects = nodes.objects
        ns_labels = dict(objects.labels_of_namespace(pod.namespace))
        required = tuple(incoming_term(t, objects.namespace_labels) for t in info.required_affinity)
        required_anti = tuple(incoming_term(t, objects.namespace_labels) for t in info.required_anti_affinity)
        index = nodes.pods

        # As getExistingAntiAffinityCounts: existing pods' required anti-affinity terms matching the pod.
        existing = TopologyCounts()
        if index.pods_with_required_anti_affinity:
            for term, rows in index.required_anti_affinity.items():
                if term.matches(pod.namespace, pod.labels, ns_labels):
                    _add_term(existing, nodes, term.topology_key, rows)

        # As getIncomingAffinityAntiAffinityCounts: existing pods matching ALL required affinity
        # terms count once per term; those matching each anti-affinity term count for that term.
        affinity = TopologyCounts()
        if required:
            for t in required:
                _add_matching(affinity, nodes, t.topology_key, _all_terms_query(required))
        anti = TopologyCounts()
        for t in required_anti:
            _add_matching(anti, nodes, t.topology_key, _term_query(t))
        return PreFilterState(required, required_anti, ns_labels, existing, affinity, anti, pod)

    def filter(self, pod: PodSpec, nodes: NodeTable) -> FilterResult:
        state = cycle_state().read(PRE_FILTER_STATE_KEY)
        if state is None:
            info = pod_info(pod)
            if info.parse_error is not None:
                return FilterResult.all_pass(nodes.n)  # PreFilter rejects such a pod before Filter runs
            state = self._pre_filter_state(pod, nodes, info)
        n = nodes.n

        # As satisfyPodAffinity.
        affinity_fails = np.zeros(n, dtype=bool)
        if state.required_affinity:
            lacks_key = np.zeros(n, dtype=bool)
            pods_exist = np.ones(n, dtype=bool)
            for t in state.required_affinity:
                d = domains(nodes, t.topology_key)
                lacks_key |= ~d.has_key()
                pods_exist &= state.affinity.at_nodes(nodes, t.topology_key) > 0
            # The first pod of a group with affinity to itself: no existing pod matches its terms
            # anywhere, and it matches them itself; then only the topology keys must exist.
            first_of_group = not len(state.affinity) and _matches_all(state.required_affinity, pod.namespace, pod.labels)
            affinity_fails = lacks_key if first_of_group else lacks_key | ~pods_exist

        # As satisfyPodAntiAffinity.
        anti_fails = np.zeros(n, dtype=bool)
        if len(state.anti_affinity):
            for t in state.required_anti_affinity:
                anti_fails |= state.anti_affinity.at_nodes(nodes, t.topology_key) > 0
        anti_fails &= ~affinity_fails

        # As satisfyExistingPodsAntiAffinity: any of the node's (key, value) pairs with a count.
        existing_fails = np.zeros(n, dtype=bool)
        if len(state.existing_anti_affinity):
            for key in state.existing_anti_affinity.by_key:
                existing_fails |= state.existing_anti_affinity.at_nodes(nodes, key) > 0
        existing_fails &= ~affinity_fails & ~anti_fails

        return FilterResult.from_reasons(n, [
            (ERR_REASON_AFFINITY_RULES_NOT_MATCH, affinity_fails),
            (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, anti_fails),
            (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, existing_fails),
        ], unresolvable=frozenset((ERR_REASON_AFFINITY_RULES_NOT_MATCH,)))

    # ---- PreScore / Score / NormalizeScore -------------------------------------------------
    def _pre_score_state(self, pod: PodSpec, nodes: NodeTable) -> PreScoreState | None:
        """As PreScore; None for Skip."""
        aff, anti = pod.pod_affinity, pod.pod_anti_affinity
        has_constraints = bool((aff is not None and aff.preferred) or (anti is not None and anti.preferred))
        # Optionally ignore the existing pods' preferences when the pod has none of its own.
        if self.args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return None
        info = pod_info(pod)
        if info.parse_error is not None:
            raise PluginError(f"failed to parse pod: {info.parse_error}")
        index = nodes.pods
        if not has_constraints and not index.pods_with_affinity:
            return None  # no node hosts a pod with affinity: nothing to score
        objects = nodes.objects
        ns_labels = dict(objects.labels_of_namespace(pod.namespace))
        score = TopologyCounts()

        # The incoming pod's preferred terms, against every existing pod.
        for w in info.preferred_affinity:
            t = incoming_term(w.term, objects.namespace_labels)
            _add_matching(score, nodes, t.topology_key, _term_query(t), w.weight)
        for w in info.preferred_anti_affinity:
            t = incoming_term(w.term, objects.namespace_labels)
            _add_matching(score, nodes, t.topology_key, _term_query(t), -w.weight)

        # The existing pods' terms, against the incoming pod.
        hard = self.args.hard_pod_affinity_weight
        if index.pods_with_affinity:
            if hard > 0:
                for term, rows in index.required_affinity.items():
                    if term.matches(pod.namespace, pod.labels, ns_labels):
                        _add_term(score, nodes, term.topology_key, rows, hard)
            for (term, weight), rows in index.preferred_affinity.items():
                if term.matches(pod.namespace, pod.labels, ns_labels):
                    _add_term(score, nodes, term.topology_key, rows, weight)
            for (term, weight), rows in index.preferred_anti_affinity.items():
                if term.matches(pod.namespace, pod.labels, ns_labels):
                    _add_term(score, nodes, term.topology_key, rows, -weight)
        if not len(score):
            return None  # as upstream: no node contributed anything, Skip
        return PreScoreState(score)

    def score(self, pod: PodSpec, nodes: NodeTable, rows: np.ndarray) -> np.ndarray | None:
        state = self._pre_score_state(pod, nodes)
        if state is None:
            return None
        cycle_state().write(PRE_SCORE_STATE_KEY, state)
        rows = np.asarray(rows, dtype=np.int64)
        total = np.zeros(len(rows), dtype=np.int64)
        for key in state.topology_score.by_key:
            total += state.topology_score.at_nodes(nodes, key)[rows]
        return total

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        """As NormalizeScore: 100 * (s - min) / (max - min) in float64, truncated; 0 when all equal."""
        scores = np.asarray(scores, dtype=np.int64)
        if len(scores) == 0:
            return scores
        low, high = int(scores.min()), int(scores.max())
        diff = high - low
        if diff <= 0:
            return np.zeros(len(scores), dtype=np.int64)
        frac = (scores - low).astype(np.float64) / float(diff)
        return np.trunc(float(MAX_NODE_SCORE) * frac).astype(np.int64)


# ---- QueueingHint ------------------------------------------------------------------------------------

def is_schedulable_after_pod_change(pod: PodSpec, old: PodSpec | None, new: PodSpec | None) -> bool:
    """As isSchedulableAfterPodChange, the hint for an assigned pod added (old None), updated or deleted
    (new None): True is Queue (the change may make `pod`, rejected by this plugin, schedulable), False
    QueueSkip. A pod not bound never helps. One bound pod must match every required affinity term (the
    filter looks for a single pod satisfying them all); a pod leaving the anti-affinity terms' match helps."""
    if (new is not None and not new.node_name) or (old is not None and not old.node_name):
        return False
    info = pod_info(pod)
    if info.parse_error:
        return True  # as upstream on an error: requeue, the next attempt reports it
    anti = info.required_anti_affinity
    if old is not None and new is not None:
        if (not _matches_all(info.required_affinity, old.namespace, old.labels)
                and _matches_all(info.required_affinity, new.namespace, new.labels)):
            return True
        return _matches_all(anti, old.namespace, old.labels) and not _matches_all(anti, new.namespace, new.labels)
    if new is not None:
        return _matches_all(info.required_affinity, new.namespace, new.labels)
    return _matches_all(anti, old.namespace, old.labels)
