"""The scheduling framework: plugin interfaces, a Profile, and the filter/score/select pipeline.

Shaped like kube-scheduler's framework (pkg/scheduler/framework) and schedulePod
(pkg/scheduler/schedule_one.go), but columnar: a filter answers for every node at once with
a boolean mask, a score plugin with an int64 array over the candidate rows.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from .nodes import NodeTable
from .pods import DEFAULT_SCHEDULER_NAME, PodSpec
from .resources import MAX_NODE_SCORE, MIN_NODE_SCORE

# As pkg/scheduler/schedule_one.go.
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0  # 0 means adaptive

# As pkg/scheduler/framework/types.go.
NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"


# Status codes of a rejected node (framework.Code). Only the two a Filter returns are modelled:
# UnschedulableAndUnresolvable tells preemption that evicting pods on the node cannot help.
UNSCHEDULABLE = "Unschedulable"
UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"


class CycleState:
    """What plugins keep for one pod during one scheduling cycle (upstream's CycleState): PreFilter
    and PreScore write it, Filter, Score and NormalizeScore read it, and the Decision keeps it so a
    failure can be explained afterwards (e.g. a spread constraint's per-domain counts).

    The extension point methods keep their (pod, nodes) signatures; the Algorithm makes the cycle's
    state current while it runs, and a plugin reaches it with `cycle_state()`.
    """

    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        """The value written under `key`, or None."""
        return self._data.get(key)

    def keys(self) -> list[str]:
        return list(self._data)

    def active(self) -> _Active:
        """Make this the current cycle's state inside a `with` block (tests calling plugins directly)."""
        return _Active(self)


_CURRENT_CYCLE: ContextVar[CycleState | None] = ContextVar("schedboard_cycle_state", default=None)


class _Active:
    __slots__ = ("state", "_token")

    def __init__(self, state: CycleState):
        self.state = state

    def __enter__(self) -> CycleState:
        self._token = _CURRENT_CYCLE.set(self.state)
        return self.state

    def __exit__(self, *exc) -> None:
        _CURRENT_CYCLE.reset(self._token)


def cycle_state() -> CycleState:
    """The current cycle's state; outside a cycle (a plugin called on its own) a fresh, unshared one,
    so a plugin recomputes what its PreFilter or PreScore would have written."""
    state = _CURRENT_CYCLE.get()
    return state if state is not None else CycleState()


class PluginError(Exception):
    """A plugin's extension point returned an Error status: the cycle fails with an error (not
    "unschedulable"), as upstream's "running <point> plugin <name>: <err>"."""


_ALL_TRUE: dict[int, np.ndarray] = {}


def all_true(n: int) -> np.ndarray:
    """A shared, read-only all-True mask over n nodes (most filters pass every node for most pods)."""
    mask = _ALL_TRUE.get(n)
    if mask is None:
        if len(_ALL_TRUE) > 64:
            _ALL_TRUE.clear()
        mask = np.ones(n, dtype=bool)
        mask.flags.writeable = False
        _ALL_TRUE[n] = mask
    return mask


@dataclass
class FilterResult:
    """One filter plugin's verdict over all nodes.

    `reasons` pairs each reason string with the mask of nodes it applies to; a rejected node
    may carry several (e.g. "Insufficient cpu" and "Insufficient memory"). `all_passed` marks a
    verdict known to pass every node, so the pipeline can skip its mask arithmetic.
    `unresolvable` names the reasons upstream returns as UnschedulableAndUnresolvable.
    """

    passed: np.ndarray
    reasons: list[tuple[str, np.ndarray]] = field(default_factory=list)
    all_passed: bool = field(default=False, compare=False, repr=False)
    unresolvable: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @classmethod
    def all_pass(cls, n: int) -> FilterResult:
        return cls(all_true(n), [], True)

    @classmethod
    def from_reasons(cls, n: int, reasons: list[tuple[str, np.ndarray]],
                     unresolvable: frozenset[str] = frozenset()) -> FilterResult:
        """Nodes fail where any reason applies."""
        failed = None
        kept = []
        for text, mask in reasons:
            if np.count_nonzero(mask):  # as mask.any(), faster on long masks
                failed = np.asarray(mask, dtype=bool) if failed is None else failed | mask
                kept.append((text, mask))
        if failed is None:
            return cls.all_pass(n)
        return cls(~failed, kept, unresolvable=unresolvable)

    def code(self, reason: str) -> str:
        """The status code a node rejected for `reason` gets."""
        return UNSCHEDULABLE_AND_UNRESOLVABLE if reason in self.unresolvable else UNSCHEDULABLE


@runtime_checkable
class FilterPlugin(Protocol):
    name: ClassVar[str]

    def filter(self, pod: PodSpec, nodes: NodeTable) -> FilterResult: ...


@dataclass(frozen=True)
class PreFilterRejected:
    """A PreFilter verdict that rejects the pod on every node (UnschedulableAndUnresolvable)."""

    message: str


class PreFilterSkip:
    """A PreFilter verdict of Skip: the plugin's Filter is not run for this pod (every node passes it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "SKIP"


SKIP = PreFilterSkip()


@runtime_checkable
class PreFilterPlugin(Protocol):
    """A plugin with a PreFilter: it may narrow the nodes to look at (a PreFilterResult, as node
    names), reject the pod outright, return SKIP, or None (all nodes, and run my Filter). It may
    write the cycle's state for its Filter, and raise PluginError for an Error status."""

    name: ClassVar[str]

    def pre_filter(self, pod: PodSpec, nodes: NodeTable) -> set[str] | PreFilterRejected | PreFilterSkip | None: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: ClassVar[str]

    def score(self, pod: PodSpec, nodes: NodeTable, rows: np.ndarray) -> np.ndarray | None:
        """Raw int64 scores for `rows`; None when PreScore would return Skip (no score at all)."""
        ...

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        """NormalizeScore; plugins without ScoreExtensions return `scores` unchanged."""
        ...


@dataclass
class Profile:
    """A scheduler profile: the plugins per extension point and each score plugin's weight."""

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    filters: list = field(default_factory=list)
    scores: list[tuple[object, int]] = field(default_factory=list)  # (ScorePlugin, weight)
    percentage_of_nodes_to_score: int | None = None
    version: int = 0

    @property
    def pre_filters(self) -> list:
        return [p for p in self.filters if hasattr(p, "pre_filter")]


def default_normalize_score(max_priority: int, reverse: bool, scores: np.ndarray) -> np.ndarray:
    """As helper.DefaultNormalizeScore: scale to [0, max_priority] by the maximum, optionally reversed."""
    max_count = max(0, int(scores.max())) if len(scores) else 0  # as upstream, the maximum starts at 0
    if max_count == 0:
        if reverse:
            return np.full(len(scores), max_priority, dtype=np.int64)
        return scores.astype(np.int64, copy=True)
    numer = max_priority * scores.astype(np.int64)
    out = np.sign(numer) * (np.abs(numer) // max_count)  # Go's division truncates toward zero
    if reverse:
        out = max_priority - out
    return out


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """As Scheduler.numFeasibleNodesToFind (adaptive when the percentage is unset or 0)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = 50 - num_all_nodes // 125
        if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    num = num_all_nodes * pct // 100
    if num < MIN_FEASIBLE_NODES_TO_FIND:
        return MIN_FEASIBLE_NODES_TO_FIND
    return num


@dataclass
class PluginScores:
    plugin: str
    weight: int
    raw: np.ndarray  # over Decision.candidates
    normalized: np.ndarray

    @property
    def weighted(self) -> np.ndarray:
        return self.normalized * self.weight


@dataclass
class Decision:
    """The outcome of one scheduling algorithm run for one pod, as data."""

    pod_key: str
    num_all_nodes: int
    candidates: np.ndarray  # rows that passed filtering (within numFeasibleNodesToFind)
    rejected_by: np.ndarray  # per row: index into filter_results of the first filter rejecting it, -1 if none
    filter_names: list[str]
    filter_results: list[FilterResult | None]
    absent_status: tuple[str, str] | None = None  # (plugin, reason) for rows a PreFilterResult left out
    plugin_scores: list[PluginScores] = field(default_factory=list)
    totals: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    selected_row: int | None = None
    evaluated_nodes: int = 0
    error: str | None = None  # an internal error (not "unschedulable")
    pre_filter_msg: str | None = None  # a PreFilter rejected the pod outright
    cycle_state: CycleState | None = field(default=None, repr=False)  # what the plugins kept this cycle
    # Extension point durations (scheduler_framework_extension_point_duration_seconds): PreFilter
    # always runs; Score only when there is more than one candidate, as upstream skips it then.
    pre_filter_seconds: float = 0.0
    score_seconds: float | None = None

    @property
    def scheduled(self) -> bool:
        return self.selected_row is not None

    def reason_histogram(self) -> dict[str, int]:
        """Reason -> number of nodes rejected for it (each node under its first rejecting filter)."""
        hist: dict[str, int] = {}
        for i, res in enumerate(self.filter_results):
            if res is None:
                continue
            mine = self.rejected_by == i
            for text, mask in res.reasons:
                count = int(np.count_nonzero(mask & mine))
                if count:
                    hist[text] = hist.get(text, 0) + count
        if self.absent_status is not None:
            absent = int(np.count_nonzero(self.rejected_by == ABSENT))
            if absent:
                hist[self.absent_status[1]] = hist.get(self.absent_status[1], 0) + absent
        return hist

    def fit_error_message(self) -> str:
        """As FitError.Error(): "0/N nodes are available: <count reason, sorted>."."""
        if self.num_all_nodes == 0:
            return ERR_NO_NODES_AVAILABLE
        msg = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        if self.pre_filter_msg is not None:
            # As FitError.Error: the PreFilter message stands alone; node statuses would repeat it.
            return msg + " " + self.pre_filter_msg + "."
        parts = sorted(f"{count} {reason}" for reason, count in self.reason_histogram().items())
        if parts:
            msg += " " + ", ".join(parts) + "."
        return msg


ABSENT = -2  # rejected_by value for rows a PreFilterResult excluded


def _go_quote(text: str) -> str:
    """Go's %q for the plain ASCII names plugins have."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


if MIN_NODE_SCORE == 0:
    def _out_of_range(scores: np.ndarray) -> bool:
        # One reduction checks both bounds: a negative int64 reads as a huge uint64.
        return bool(np.maximum.reduce(scores.view(np.uint64)) > MAX_NODE_SCORE)
else:  # pragma: no cover - the constant is 0 upstream
    def _out_of_range(scores: np.ndarray) -> bool:
        return bool(scores.max() > MAX_NODE_SCORE or scores.min() < MIN_NODE_SCORE)


class Algorithm:
    """schedulePod over a NodeTable: filter, score, select. Holds the round-robin start index and the RNG."""

    def __init__(self, seed: int | None = None):
        self.next_start_node_index = 0
        self.rng = np.random.default_rng(seed)

    @staticmethod
    def _rejected_at_pre_filter(decision: Decision, plugin: str, message: str) -> Decision:
        """The pod fails PreFilter: every node gets the same status and the message stands alone."""
        decision.pre_filter_msg = message
        decision.rejected_by[:] = ABSENT
        decision.absent_status = (plugin, message)
        return decision

    def schedule(self, profile: Profile, pod: PodSpec, nodes: NodeTable, *, all_nodes: bool = False) -> Decision:
        """Run one scheduling algorithm pass. `all_nodes` disables the numFeasibleNodesToFind cut (explain)."""
        state = CycleState()
        token = _CURRENT_CYCLE.set(state)
        try:
            decision = self._schedule(profile, pod, nodes, all_nodes)
        finally:
            _CURRENT_CYCLE.reset(token)
        decision.cycle_state = state
        return decision

    def _schedule(self, profile: Profile, pod: PodSpec, nodes: NodeTable, all_nodes: bool) -> Decision:
        n = nodes.n
        filters = profile.filters
        rejected_by = np.empty(n, dtype=np.int64)
        rejected_by.fill(-1)
        decision = Decision(
            pod_key=pod.key, num_all_nodes=n, candidates=np.zeros(0, dtype=np.int64),
            rejected_by=rejected_by, filter_names=[p.name for p in filters], filter_results=[None] * len(filters),
        )
        if n == 0:
            return decision

        # PreFilter: a plugin may narrow the nodes (NodeAffinity on metadata.name), reject the pod,
        # return Skip (its Filter is not run), or write the cycle state its Filter reads.
        # `considered` stays None while every node is considered (the common case).
        considered: np.ndarray | None = None
        narrowing: list[str] = []
        allowed_names: set[str] | None = None
        skipped: set[str] | None = None
        started = perf_counter()
        for plugin in profile.pre_filters:
            try:
                allowed = plugin.pre_filter(pod, nodes)
            except PluginError as err:
                decision.pre_filter_seconds = perf_counter() - started
                decision.error = f"running PreFilter plugin {_go_quote(plugin.name)}: {err}"
                return decision
            if allowed is None:
                continue
            if allowed is SKIP:
                # As RunPreFilterPlugins: a plugin returning Skip has its Filter skipped.
                skipped = {plugin.name} if skipped is None else skipped | {plugin.name}
                continue
            if isinstance(allowed, PreFilterRejected):
                decision.pre_filter_seconds = perf_counter() - started
                return self._rejected_at_pre_filter(decision, plugin.name, allowed.message)
            narrowing.append(plugin.name)
            # As RunPreFilterPlugins: results merge by intersecting node names.
            allowed_names = set(allowed) if allowed_names is None else allowed_names & set(allowed)
            if not allowed_names:
                names = sorted(narrowing)
                message = (f"node(s) didn't satisfy plugin {names[0]}" if len(names) == 1 else
                           f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously")
                decision.pre_filter_seconds = perf_counter() - started
                return self._rejected_at_pre_filter(decision, narrowing[0], message)
            mask = np.zeros(n, dtype=bool)
            rows = [nodes.index[name] for name in allowed if name in nodes.index]
            mask[rows] = True
            considered = mask if considered is None else considered & mask
        decision.pre_filter_seconds = perf_counter() - started
        if narrowing:
            rejected_by[~considered] = ABSENT
            decision.absent_status = (narrowing[0], f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(narrowing))}]")

        # Filter: each node is reported under the first plugin that rejects it.
        # `remaining` stays None while no node has been rejected.
        remaining: np.ndarray | None = None if considered is None else considered.copy()
        for i, plugin in enumerate(filters):
            if skipped is not None and plugin.name in skipped:
                decision.filter_results[i] = FilterResult.all_pass(n)
                continue
            result = plugin.filter(pod, nodes)
            decision.filter_results[i] = result
            if result.all_passed:
                continue
            passed = result.passed
            if remaining is None:
                rejected_by[~passed] = i
                remaining = np.array(passed, dtype=bool)
            else:
                rejected_by[remaining & ~passed] = i
                remaining &= passed

        # numFeasibleNodesToFind, starting at the round-robin index over the considered nodes.
        if considered is None:
            processed, candidates = self._take_all_considered(profile, remaining, rejected_by, n, all_nodes)
        else:
            processed, candidates = self._take_narrowed(profile, considered, remaining, rejected_by, all_nodes)
        decision.candidates = candidates
        decision.evaluated_nodes = processed
        self.next_start_node_index = (self.next_start_node_index + processed) % n

        if len(candidates) == 0:
            return decision
        if len(candidates) == 1:
            decision.selected_row = int(candidates[0])
            return decision

        # Score, normalize, weight.
        started = perf_counter()
        totals = np.zeros(len(candidates), dtype=np.int64)
        for plugin, weight in profile.scores:
            try:
                raw = plugin.score(pod, nodes, candidates)
            except PluginError as err:
                decision.error = f"running PreScore plugin {_go_quote(plugin.name)}: {err}"
                decision.candidates = np.zeros(0, dtype=np.int64)
                decision.score_seconds = perf_counter() - started
                return decision
            if raw is None:
                continue
            raw = np.asarray(raw, dtype=np.int64)
            normalized = np.asarray(plugin.normalize(raw), dtype=np.int64)
            if len(normalized) and _out_of_range(normalized):
                decision.error = f"plugin {plugin.name!r} returns an invalid score, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                decision.candidates = np.zeros(0, dtype=np.int64)
                decision.score_seconds = perf_counter() - started
                return decision
            decision.plugin_scores.append(PluginScores(plugin.name, weight, raw, normalized))
            totals += normalized * weight if weight != 1 else normalized
        decision.totals = totals
        decision.score_seconds = perf_counter() - started

        # selectHost: uniformly at random among the top scores.
        best = (totals == totals.max()).nonzero()[0]
        pick = best[0] if len(best) == 1 else best[int(self.rng.integers(len(best)))]
        decision.selected_row = int(candidates[pick])
        return decision

    def _to_find(self, profile: Profile, num_considered: int, all_nodes: bool) -> int:
        if not profile.scores:
            return min(1, num_considered)
        if all_nodes:
            return num_considered
        return num_feasible_nodes_to_find(profile.percentage_of_nodes_to_score, num_considered)

    def _take_all_considered(self, profile: Profile, remaining: np.ndarray | None, rejected_by: np.ndarray,
                             n: int, all_nodes: bool) -> tuple[int, np.ndarray]:
        """The cut when every node is considered: the order is rows start..n-1 then 0..start-1.

        Returns (nodes processed, candidate rows).
        """
        to_find = self._to_find(profile, n, all_nodes)
        start = self.next_start_node_index % n
        if remaining is None:
            # No node was rejected: the feasible nodes are the order itself.
            processed = to_find if n > to_find else n
            if start + processed <= n:
                return processed, np.arange(start, start + processed, dtype=np.int64)
            taken = np.arange(processed, dtype=np.int64)
        else:
            feasible_in_order = remaining[start:].nonzero()[0]
            if len(feasible_in_order) <= to_find:
                head = remaining[:start].nonzero()[0]
                if len(head):
                    feasible_in_order = np.concatenate((feasible_in_order, head + (n - start)))
            if len(feasible_in_order) > to_find:
                taken = feasible_in_order[:to_find]
                processed = int(taken[-1]) + 1
                # Rows past the cut were never examined: they carry no status (as upstream).
                stop = start + processed
                if stop < n:
                    rejected_by[stop:] = -1
                    rejected_by[:start] = -1
                else:
                    rejected_by[stop - n:start] = -1
            else:
                taken = feasible_in_order
                processed = n
        candidates = taken + start
        candidates[candidates >= n] -= n
        return processed, candidates.astype(np.int64, copy=False)

    def _take_narrowed(self, profile: Profile, considered: np.ndarray, remaining: np.ndarray, rejected_by: np.ndarray,
                       all_nodes: bool) -> tuple[int, np.ndarray]:
        """The cut over the nodes a PreFilterResult left (rows past the cut keep ABSENT)."""
        considered_rows = np.flatnonzero(considered)
        num_considered = len(considered_rows)
        to_find = self._to_find(profile, num_considered, all_nodes)
        start = self.next_start_node_index % num_considered if num_considered else 0
        order = np.roll(considered_rows, -start)
        feasible_in_order = np.flatnonzero(remaining[order])
        if len(feasible_in_order) > to_find:
            taken = feasible_in_order[:to_find]
            processed = int(taken[-1]) + 1
            unexamined = order[processed:]
            rejected_by[unexamined[rejected_by[unexamined] >= 0]] = -1
        else:
            taken = feasible_in_order
            processed = num_considered
        return processed, order[taken].astype(np.int64)
