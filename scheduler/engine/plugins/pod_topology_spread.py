"""PodTopologySpread: spread a pod's group evenly across topology domains. As kube-scheduler's
plugins/podtopologyspread (common.go, filtering.go, scoring.go, plugin.go), columnar:

- PreFilter counts, per DoNotSchedule constraint, the matching pods of every eligible domain with
  one bincount over the nodes' topology-value codes (the per-node match counts come from the pod
  index, kept up to date as pods are assumed and forgotten); Filter then judges every node at once
  with upstream's integers: matchNum + selfMatch - globalMin > maxSkew fails.
- PreScore / Score / NormalizeScore do the same for ScheduleAnyway constraints, with upstream's
  float64 sum of cnt * log(size + 2) + (maxSkew - 1), math.Round, and the min/max normalization
  that leaves nodes missing a topology key ("ignored") at 0.

Pods without constraints of their own get the profile's default constraints (the system defaults:
hostname maxSkew 3 and zone maxSkew 5, ScheduleAnyway), selected by the Services, ReplicaSets,
StatefulSets and ReplicationControllers that own or select them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..field import INT32_MAX
from ..framework import SKIP, FilterResult, PluginError, cycle_state
from ..labels import Selector, SelectorError, as_selector, selector_from_set
from ..nodes import NodeTable
from ..pods import (
    DO_NOT_SCHEDULE,
    HONOR,
    IGNORE,
    NO_EXECUTE,
    NO_SCHEDULE,
    SCHEDULE_ANYWAY,
    PodSpec,
    TopologySpreadConstraint,
    derived,
)
from ..resources import MAX_NODE_SCORE
from ..topology import Domains, domains
from .node_affinity import required_mask
from .taint_toleration import tolerations_tolerate

NAME = "PodTopologySpread"

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

LABEL_HOSTNAME = "kubernetes.io/hostname"  # v1.LabelHostname
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"  # v1.LabelTopologyZone

SYSTEM_DEFAULTING = "System"  # config.SystemDefaulting
LIST_DEFAULTING = "List"  # config.ListDefaulting

# As systemDefaultConstraints (plugin.go).
SYSTEM_DEFAULT_CONSTRAINTS = (
    TopologySpreadConstraint(max_skew=3, topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY),
    TopologySpreadConstraint(max_skew=5, topology_key=LABEL_TOPOLOGY_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY),
)

PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

INVALID_SCORE = -1


@dataclass(frozen=True)
class PodTopologySpreadArgs:
    """PodTopologySpreadArgs (kubescheduler.config.k8s.io/v1), defaulted: defaultingType System."""

    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING


@dataclass(frozen=True)
class Constraint:
    """A topologySpreadConstraint: the v1 constraint with its selector parsed and defaults applied."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE


def filter_constraints(constraints: tuple[TopologySpreadConstraint, ...], pod_labels: dict[str, str],
                       action: str) -> list[Constraint]:
    """As filterTopologySpreadConstraints (MatchLabelKeysInPodTopologySpread on, its default): the
    constraints with `action`, matchLabelKeys' values from the pod merged into the selector.
    Raises SelectorError."""
    out = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = as_selector(c.label_selector)
        if c.match_label_keys:
            match = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
            # As mergeLabelSetWithSelector: a nil selector (Nothing) stays Nothing.
            if match and not selector.nothing:
                selector = selector_from_set(match).add(*selector.requirements)
        out.append(Constraint(
            max_skew=c.max_skew, topology_key=c.topology_key, selector=selector,
            min_domains=c.min_domains if c.min_domains is not None else 1,
            node_affinity_policy=c.node_affinity_policy or HONOR,
            node_taints_policy=c.node_taints_policy or IGNORE,
        ))
    return out


def untolerated_mask(pod: PodSpec, nodes: NodeTable) -> np.ndarray:
    """Nodes with a NoSchedule/NoExecute taint the pod does not tolerate (FindMatchingUntoleratedTaint
    with DoNotScheduleTaintsFilterFunc)."""
    cols = [j for j, taint in enumerate(nodes.taints)
            if taint.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerations_tolerate(pod.tolerations, taint)]
    if not cols:
        return np.zeros(nodes.n, dtype=bool)
    return nodes.taint_matrix[:, cols].any(axis=1)


def _spread_query(selector: Selector, namespace: str):
    """The pod index question countPodsMatchSelector asks: pods in `namespace`, not terminating,
    whose labels the selector matches."""
    return (("spread", namespace, selector.key), frozenset((namespace,)),
            lambda ns, labels, deleting: not deleting and selector.matches(labels))


def matching_pods_per_node(nodes: NodeTable, selector: Selector, namespace: str) -> np.ndarray:
    """As countPodsMatchSelector on every node; an empty selector counts nothing. The vector is the
    index's: do not modify."""
    if selector.empty():
        return np.zeros(nodes.n, dtype=np.int64)
    return nodes.pods.count(*_spread_query(selector, namespace))


def matching_pods_per_domain(nodes: NodeTable, selector: Selector, namespace: str, codes: np.ndarray, size: int,
                             include: np.ndarray, cache_as: object | None) -> tuple[np.ndarray, np.ndarray]:
    """countPodsMatchSelector summed per domain over the included nodes, and which domains have an
    included node. With `cache_as` (naming codes and include, which must then not depend on the pod)
    the index keeps the sums up to date between cycles instead of recounting."""
    if not selector.empty() and cache_as is not None:
        return nodes.pods.count_per_domain(*_spread_query(selector, namespace), cache_as, codes, size, include)
    keep = include & (codes >= 0)
    kept = codes[keep]
    present = np.bincount(kept, minlength=size) > 0
    if selector.empty():
        return np.zeros(size, dtype=np.int64), present
    per_node = matching_pods_per_node(nodes, selector, namespace)
    return np.rint(np.bincount(kept, weights=per_node[keep], minlength=size)).astype(np.int64), present


class _Inclusion:
    """The node inclusion policies' masks for one pod, computed when first needed."""

    def __init__(self, pod: PodSpec, nodes: NodeTable):
        self.pod = pod
        self.nodes = nodes
        self._affinity: np.ndarray | None = None
        self._tolerated: np.ndarray | None = None

    def depends_on_pod(self, c: Constraint) -> bool:
        """Whether the policies narrow the nodes for this pod (else the mask is the base one)."""
        return ((c.node_affinity_policy == HONOR and bool(self.pod.node_selector or self.pod.required_terms is not None))
                or (c.node_taints_policy == HONOR and bool(self.nodes.taints)))

    def mask(self, c: Constraint, base: np.ndarray) -> np.ndarray:
        """As matchNodeInclusionPolicies (NodeInclusionPolicyInPodTopologySpread, GA), over all nodes."""
        out = base
        if c.node_affinity_policy == HONOR and (self.pod.node_selector or self.pod.required_terms is not None):
            if self._affinity is None:
                self._affinity = required_mask(self.pod, self.nodes)
            out = out & self._affinity
        if c.node_taints_policy == HONOR and self.nodes.taints:
            if self._tolerated is None:
                self._tolerated = ~untolerated_mask(self.pod, self.nodes)
            out = out & self._tolerated
        return out


@dataclass
class ConstraintCounts:
    """One DoNotSchedule constraint's domains after PreFilter: TpValueToMatchNum and its minimum."""

    constraint: Constraint
    domains: Domains
    match_num: np.ndarray  # per value code: matching pods in that domain (0 for codes not counted)
    counted: np.ndarray  # per value code: whether the domain is eligible (a key of TpValueToMatchNum)
    min_match: int  # the global minimum over eligible domains (MaxInt32 when there are none)

    @property
    def domains_num(self) -> int:
        return int(np.count_nonzero(self.counted))

    def global_min(self) -> int:
        """As minMatchNum: with fewer eligible domains than minDomains the global minimum is 0."""
        return 0 if self.domains_num < self.constraint.min_domains else self.min_match

    def match_nums(self) -> dict[str, int]:
        """TpValueToMatchNum: eligible domain value -> matching pods (for explanations)."""
        return {self.domains.values[c]: int(self.match_num[c]) for c in np.flatnonzero(self.counted)}

    def _update_min(self) -> None:
        self.min_match = int(self.match_num[self.counted].min()) if self.counted.any() else INT32_MAX


@dataclass
class PreFilterState:
    constraints: list[ConstraintCounts]

    def update_with_pod(self, updated: PodSpec, preemptor: PodSpec, row: int, nodes: NodeTable, delta: int) -> None:
        """As updateWithPod (PreFilterExtensions AddPod / RemovePod, for preemption): count `updated`
        placed on (delta +1) or taken off (-1) node `row`."""
        if updated.namespace != preemptor.namespace:
            return
        if any(cc.domains.codes[row] < 0 for cc in self.constraints):
            return
        inclusion = _Inclusion(preemptor, nodes)
        here = np.zeros(nodes.n, dtype=bool)
        here[row] = True
        for cc in self.constraints:
            if not cc.constraint.selector.matches(updated.labels):
                continue
            if not inclusion.mask(cc.constraint, here)[row]:
                continue
            code = cc.domains.codes[row]
            cc.match_num[code] += delta
            cc.counted[code] = True
            cc._update_min()


@dataclass
class PreScoreState:
    constraints: list[Constraint]
    ignored: np.ndarray  # over the scored rows: nodes missing a required topology key
    weights: list[float]  # TopologyNormalizingWeight per constraint
    # Per constraint: for the hostname key, matching pods per node; otherwise matching pods per
    # value slot (a value code, or the extra slot standing for "" when nodes lack the key).
    counts: list[np.ndarray]
    # Per constraint (None for the hostname key): the value slots of the scored nodes, i.e. the
    # keys of upstream's TopologyValueToPodCounts.
    registered: list[np.ndarray | None]


def topology_normalizing_weight(size: int) -> float:
    """As topologyNormalizingWeight: log(size + 2)."""
    return math.log(float(size + 2))


def go_round(x: np.ndarray) -> np.ndarray:
    """As math.Round for non-negative float64: halves away from zero (numpy's rint rounds them to even)."""
    floor = np.floor(x)
    return floor + ((x - floor) >= 0.5)


class PodTopologySpread:
    name: ClassVar[str] = NAME

    def __init__(self, args: PodTopologySpreadArgs | None = None):
        self.args = args or PodTopologySpreadArgs()
        if self.args.defaulting_type not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            raise ValueError(f"defaultingType: Unsupported value: {self.args.defaulting_type!r}")
        if self.args.defaulting_type == SYSTEM_DEFAULTING and self.args.default_constraints:
            raise ValueError(f'defaultingType: Invalid value: "{SYSTEM_DEFAULTING}": when .defaultConstraints are not empty')
        self.system_defaulted = self.args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints = SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else tuple(self.args.default_constraints)
        # The default constraints of each action, parsed once: they take the pod's labels only
        # through matchLabelKeys (rare in defaults), and most pods have no constraints of their own.
        self._defaults_by_action: dict[str, list[Constraint] | None] = {}
        for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            mine = tuple(c for c in self.default_constraints if c.when_unsatisfiable == action)
            if not mine:
                self._defaults_by_action[action] = []
            elif any(c.match_label_keys for c in mine):
                self._defaults_by_action[action] = None  # depends on the pod: parsed per pod
            else:
                self._defaults_by_action[action] = filter_constraints(mine, {}, action)

    # ---- constraints ---------------------------------------------------------------------
    def constraints(self, pod: PodSpec, nodes: NodeTable, action: str) -> list[Constraint]:
        """The pod's constraints with `action`: its own, else the defaults (buildDefaultConstraints).
        Raises SelectorError."""
        if pod.topology_spread_constraints:
            # Parsed once per pod (and again if its constraints or labels are replaced).
            return derived(pod, (PodTopologySpread, action), (pod.topology_spread_constraints, pod.labels),
                           lambda: filter_constraints(pod.topology_spread_constraints, pod.labels, action))
        constraints = self._defaults_by_action[action]
        if constraints is None:
            constraints = filter_constraints(self.default_constraints, pod.labels, action)
        if not constraints:
            return []
        selector = nodes.objects.default_selector(pod)
        if selector.empty():
            return []
        return [Constraint(c.max_skew, c.topology_key, selector, c.min_domains, c.node_affinity_policy,
                           c.node_taints_policy) for c in constraints]

    # ---- signature (KEP-5598) --------------------------------------------------------------
    usage_dependent: ClassVar[bool] = False  # signed only when both PreFilter and PreScore skip

    def sign(self, pod: PodSpec, nodes: NodeTable):
        """As upstream's SignPod: a pod with constraints, its own or defaulted, is unsignable (its
        verdict on a node reads the pods on the node's whole domain); one without has nothing to add."""
        try:
            if self.constraints(pod, nodes, DO_NOT_SCHEDULE) or self.constraints(pod, nodes, SCHEDULE_ANYWAY):
                return None
        except SelectorError:
            return None
        return ()

    # ---- PreFilter / Filter --------------------------------------------------------------
    def pre_filter(self, pod: PodSpec, nodes: NodeTable):
        constraints = self._hard_constraints(pod, nodes)
        if not constraints:
            return SKIP
        cycle_state().write(PRE_FILTER_STATE_KEY, self._pre_filter_state(pod, nodes, constraints))
        return None

    def _hard_constraints(self, pod: PodSpec, nodes: NodeTable) -> list[Constraint]:
        try:
            return self.constraints(pod, nodes, DO_NOT_SCHEDULE)
        except SelectorError as err:
            raise PluginError(f"get constraints from pod: obtaining pod's hard topology spread constraints: {err}") from err

    def _pre_filter_state(self, pod: PodSpec, nodes: NodeTable, constraints: list[Constraint]) -> PreFilterState:
        """As calPreFilterState."""
        if not constraints:
            return PreFilterState([])
        doms = [domains(nodes, c.topology_key) for c in constraints]
        # As nodeLabelsMatchSpreadConstraints: only nodes with every constraint's key count.
        eligible = doms[0].has_key()
        for d in doms[1:]:
            eligible = eligible & d.has_key()
        all_keys = tuple(sorted({c.topology_key for c in constraints}))
        inclusion = _Inclusion(pod, nodes)
        out = []
        for c, d in zip(constraints, doms):
            pod_specific = inclusion.depends_on_pod(c)
            include = inclusion.mask(c, eligible)
            match_num, counted = matching_pods_per_domain(
                nodes, c.selector, pod.namespace, d.codes, d.size, include,
                None if pod_specific else ("filter", c.topology_key, all_keys))
            # Copies: the index keeps its own sums up to date, the state is this cycle's (and
            # AddPod/RemovePod change it for preemption).
            cc = ConstraintCounts(c, d, match_num.copy(), counted.copy(), INT32_MAX)
            cc._update_min()
            out.append(cc)
        return PreFilterState(out)

    def filter(self, pod: PodSpec, nodes: NodeTable) -> FilterResult:
        state = cycle_state().read(PRE_FILTER_STATE_KEY)
        if state is None:
            state = self._pre_filter_state(pod, nodes, self._hard_constraints(pod, nodes))
        if not state.constraints:
            return FilterResult.all_pass(nodes.n)
        n = nodes.n
        missing = skewed = decided = None
        # As Filter: constraints in order; a node is judged by the first one it fails. The skew test
        # is made once per domain, then read off for each node.
        for cc in state.constraints:
            c = cc.constraint
            self_match = 1 if c.selector.matches(pod.labels) else 0
            fails_in_domain = cc.match_num + self_match - cc.global_min() > c.max_skew
            lacks = ~cc.domains.has_key()
            fails = cc.domains.at_nodes(fails_in_domain, False)
            if decided is None:
                missing, skewed, decided = lacks, fails, lacks | fails
            else:
                lacks = lacks & ~decided
                fails = fails & ~decided
                missing, skewed, decided = missing | lacks, skewed | fails, decided | lacks | fails
        return FilterResult.from_reasons(
            n, [(ERR_REASON_NODE_LABEL_NOT_MATCH, missing), (ERR_REASON_CONSTRAINTS_NOT_MATCH, skewed)],
            unresolvable=frozenset((ERR_REASON_NODE_LABEL_NOT_MATCH,)))

    # ---- PreScore / Score / NormalizeScore -------------------------------------------------
    def _pre_score_state(self, pod: PodSpec, nodes: NodeTable, rows: np.ndarray) -> PreScoreState | None:
        """As PreScore and initPreScoreState; None for Skip."""
        if nodes.n == 0:
            return None
        try:
            constraints = self.constraints(pod, nodes, SCHEDULE_ANYWAY)
        except SelectorError as err:
            raise PluginError(f"calculating preScoreState: obtaining pod's soft topology spread constraints: {err}") from err
        if not constraints:
            return None
        # Only non-system-default constraints need every topology key on a node; so hostname
        # spreading still works on nodes without a zone label.
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        doms = [domains(nodes, c.topology_key) for c in constraints]
        has_all = doms[0].has_key()
        for d in doms[1:]:
            has_all = has_all & d.has_key()
        ignored = ~has_all[rows] if require_all else np.zeros(len(rows), dtype=bool)
        scored_rows = rows[~ignored]
        inclusion = _Inclusion(pod, nodes)
        eligible = has_all if require_all else np.ones(nodes.n, dtype=bool)
        all_keys = tuple(sorted({c.topology_key for c in constraints})) if require_all else None
        weights, counts, registered_slots = [], [], []
        for c, d in zip(constraints, doms):
            if c.topology_key == LABEL_HOSTNAME:
                # As upstream: per-node counts are taken in Score, the size is the scored nodes.
                weights.append(topology_normalizing_weight(len(scored_rows)))
                counts.append(matching_pods_per_node(nodes, c.selector, pod.namespace).copy())
                registered_slots.append(None)
                continue
            slots = d.slots()
            registered = np.zeros(d.size + 1, dtype=bool)
            registered[slots[scored_rows]] = True
            weights.append(topology_normalizing_weight(int(np.count_nonzero(registered))))
            # As processAllNode: every node (not only the scored ones) whose value was registered;
            # summing per slot first and then keeping the registered slots is the same.
            sums, _ = matching_pods_per_domain(
                nodes, c.selector, pod.namespace, slots, d.size + 1, inclusion.mask(c, eligible),
                None if inclusion.depends_on_pod(c) else ("score", c.topology_key, all_keys))
            counts.append(np.where(registered, sums, 0))
            registered_slots.append(registered)
        return PreScoreState(constraints, ignored, weights, counts, registered_slots)

    def score(self, pod: PodSpec, nodes: NodeTable, rows: np.ndarray) -> np.ndarray | None:
        rows = np.asarray(rows, dtype=np.int64)
        state = self._pre_score_state(pod, nodes, rows)
        if state is None:
            return None
        cycle_state().write(PRE_SCORE_STATE_KEY, state)
        total = np.zeros(len(rows), dtype=np.float64)
        for c, w, cnt in zip(state.constraints, state.weights, state.counts):
            d = domains(nodes, c.topology_key)
            has = d.codes[rows] >= 0
            per_row = cnt[rows] if c.topology_key == LABEL_HOSTNAME else cnt[d.slots()[rows]]
            # As scoreForCount, summed in constraint order in float64.
            term = per_row.astype(np.float64) * w + float(c.max_skew - 1)
            total = total + np.where(has, term, 0.0)
        out = go_round(total).astype(np.int64)
        out[state.ignored] = 0
        return out

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        """As NormalizeScore: ignored nodes get 0; the others 100 * (max + min - s) / max."""
        state = cycle_state().read(PRE_SCORE_STATE_KEY)
        ignored = state.ignored if state is not None else np.zeros(len(scores), dtype=bool)
        scores = np.asarray(scores, dtype=np.int64)
        valid = scores[~ignored]
        if len(valid) == 0:
            return np.zeros(len(scores), dtype=np.int64)
        min_score = int(valid.min())
        max_score = max(0, int(valid.max()))
        if max_score == 0:
            out = np.full(len(scores), MAX_NODE_SCORE, dtype=np.int64)
        else:
            out = MAX_NODE_SCORE * (max_score + min_score - scores) // max_score
        out[ignored] = 0
        return out



# ---- QueueingHint ------------------------------------------------------------------------------------

def is_schedulable_after_pod_change(pod: PodSpec, constraints: list[Constraint], old: PodSpec | None,
                                    new: PodSpec | None) -> bool:
    """As isSchedulableAfterPodChange, the hint for an assigned pod added (old None), updated or deleted
    (new None), given `pod`'s DoNotSchedule constraints (PodTopologySpread.constraints): True is Queue,
    False QueueSkip. Only a bound pod of the same namespace counts (involvedInTopologySpreading); an update
    helps when a constraint's selector matches the old labels and not the new ones, or the reverse; an
    add or delete when the pod's labels match any constraint's selector."""
    for changed in (old, new):
        itself = bool(pod.uid) and changed is not None and changed.uid == pod.uid  # (a trace's pods have no uid)
        if changed is not None and not (itself or (changed.node_name and changed.namespace == pod.namespace)):
            return False
    if old is not None and new is not None:
        if not (pod.uid and new.uid == pod.uid) and old.labels == new.labels:
            return False
        return any(c.selector.matches(old.labels) != c.selector.matches(new.labels) for c in constraints)
    changed = new if new is not None else old
    return any(c.selector.matches(changed.labels) for c in constraints)
