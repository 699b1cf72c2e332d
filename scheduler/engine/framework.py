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
from .resources import CPU, MAX_NODE_SCORE, MEMORY, MIN_NODE_SCORE
from .tiebreak import TieBreak

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
    `unresolvable` names the reasons upstream returns as UnschedulableAndUnresolvable, and
    `unresolvable_rows` marks the nodes whose status is UnschedulableAndUnresolvable whatever the
    reason (NodeResourcesFit: a request above the node's whole allocatable). Preemption looks only
    at the nodes whose status is plain Unschedulable.
    """

    passed: np.ndarray
    reasons: list[tuple[str, np.ndarray]] = field(default_factory=list)
    all_passed: bool = field(default=False, compare=False, repr=False)
    unresolvable: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    unresolvable_rows: np.ndarray | None = field(default=None, compare=False, repr=False)

    @classmethod
    def all_pass(cls, n: int) -> FilterResult:
        return cls(all_true(n), [], True)

    @classmethod
    def from_reasons(cls, n: int, reasons: list[tuple[str, np.ndarray]],
                     unresolvable: frozenset[str] = frozenset(),
                     unresolvable_rows: np.ndarray | None = None) -> FilterResult:
        """Nodes fail where any reason applies."""
        failed = None
        kept = []
        for text, mask in reasons:
            if np.count_nonzero(mask):  # as mask.any(), faster on long masks
                failed = np.asarray(mask, dtype=bool) if failed is None else failed | mask
                kept.append((text, mask))
        if failed is None:
            return cls.all_pass(n)
        return cls(~failed, kept, unresolvable=unresolvable, unresolvable_rows=unresolvable_rows)

    def code(self, reason: str) -> str:
        """The status code a node rejected for `reason` gets."""
        return UNSCHEDULABLE_AND_UNRESOLVABLE if reason in self.unresolvable else UNSCHEDULABLE

    def unresolvable_mask(self, n: int) -> np.ndarray:
        """Per node, whether this plugin's status there is UnschedulableAndUnresolvable (meaningful
        only where the plugin rejects the node)."""
        out = (np.zeros(n, dtype=bool) if self.unresolvable_rows is None
               else np.array(self.unresolvable_rows, dtype=bool))
        for text, mask in self.reasons:
            if text in self.unresolvable:
                out |= mask
        return out


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
    post_filters: list = field(default_factory=list)  # PostFilterPlugin (DefaultPreemption)

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

    def at(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(raw, normalized) at these positions of the candidates."""
        return np.asarray(self.raw)[positions], np.asarray(self.normalized)[positions]


# An empty int64 array shared by every decision without candidates or totals (read-only: never written in place).
_NO_ROWS = np.zeros(0, dtype=np.int64)
_NO_ROWS.flags.writeable = False


def _filter_names(profile: Profile) -> list[str]:
    """The profile's filter names, kept while its filter list is the same object (a decision reads, never writes them)."""
    memo = profile.__dict__.get("_filter_names")
    filters = profile.filters
    if memo is None or memo[0] is not filters or len(memo[1]) != len(filters):
        memo = profile.__dict__["_filter_names"] = (filters, [p.name for p in filters])
    return memo[1]


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
    totals: np.ndarray = field(default_factory=lambda: _NO_ROWS)
    selected_row: int | None = None
    evaluated_nodes: int = 0
    error: str | None = None  # an internal error (not "unschedulable")
    pre_filter_msg: str | None = None  # a PreFilter rejected the pod outright
    cycle_state: CycleState | None = field(default=None, repr=False)  # what the plugins kept this cycle
    # Extension point durations (scheduler_framework_extension_point_duration_seconds): PreFilter
    # always runs; Score only when there is more than one candidate, as upstream skips it then.
    pre_filter_seconds: float = 0.0
    score_seconds: float | None = None
    # The pod's status.nominatedNodeName passed the filters and was taken without looking further
    # (as upstream's evaluateNominatedNode).
    nominated_node_taken: bool = False
    # How many nominated pods (of priority >= the pod's) were counted on their nodes while filtering.
    nominated_pods_counted: int = 0
    skipped_filters: frozenset[str] = frozenset()  # filters a PreFilter returned Skip for
    post_filter: PostFilterResult | None = None  # set when the pod fit nowhere and PostFilter ran
    # Where the worker's random choices stood when this cycle began: (tie-break seed, position, round-robin start
    # index). The attempt records it; a replay seeks there (tiebreak.py).
    tiebreak: tuple[int, int, int] | None = None

    @property
    def scheduled(self) -> bool:
        return self.selected_row is not None

    def unschedulable_rows(self) -> np.ndarray:
        """The rows whose status is Unschedulable, not UnschedulableAndUnresolvable: the nodes where
        removing pods may help (NodeToStatus.NodesForStatusCode(Unschedulable)), in row order. Rows a
        PreFilterResult left out, or a PreFilter rejection, count as unresolvable, as upstream."""
        n = self.num_all_nodes
        out = np.zeros(n, dtype=bool)
        for i, res in enumerate(self.filter_results):
            if res is None:
                continue
            mine = self.rejected_by == i
            if not np.count_nonzero(mine):
                continue
            out |= mine & ~res.unresolvable_mask(n)
        return np.flatnonzero(out)

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
            msg += " " + self.pre_filter_msg + "."
            if self.post_filter is not None and self.post_filter.message:
                msg += " " + self.post_filter.message
            return msg
        parts = sorted(f"{count} {reason}" for reason, count in self.reason_histogram().items())
        if parts:
            msg += " " + ", ".join(parts) + "."
        # As FitError.Error: the PostFilter's message follows ("preemption: ...").
        if self.post_filter is not None and self.post_filter.message:
            msg += " " + self.post_filter.message
        return msg


ABSENT = -2  # rejected_by value for rows a PreFilterResult excluded


def rejected_by_dtype(filters: int) -> type:
    """rejected_by's element type: the smallest that holds every filter's index (a batch keeps one
    decision per pod until its attempts are written: int64 there was 400 KB a pod at 50,000 nodes)."""
    return np.int8 if filters < 127 else np.int16


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


# Filters whose verdict on one node reads the pods on other nodes (a topology domain): a nominated
# pod added on one node must then not be seen while another node is filtered.
CROSS_NODE_FILTERS = frozenset(("PodTopologySpread", "InterPodAffinity"))


@dataclass
class FilterPass:
    """PreFilter and Filter over every node (RunPreFilterPlugins, then RunFilterPlugins per node).

    `rejected_by` per row: the index of the first filter rejecting it, -1 if none, ABSENT if a
    PreFilterResult left it out. `remaining` is None while no row was rejected (the common case)."""

    rejected_by: np.ndarray
    filter_results: list[FilterResult | None]
    considered: np.ndarray | None = None
    remaining: np.ndarray | None = None
    absent_status: tuple[str, str] | None = None
    rejected: tuple[str, str] | None = None  # (plugin, message): a PreFilter rejected the pod outright
    error: str | None = None
    skipped: frozenset[str] = frozenset()
    pre_filter_seconds: float = 0.0

    def passed(self) -> np.ndarray:
        return self.rejected_by == -1


def run_filters(profile: Profile, pod: PodSpec, nodes: NodeTable) -> FilterPass:
    """PreFilter then Filter over all nodes, in the current cycle state (no cut, no score)."""
    n = nodes.n
    filters = profile.filters
    rejected_by = np.empty(n, dtype=rejected_by_dtype(len(filters)))
    rejected_by.fill(-1)
    out = FilterPass(rejected_by, [None] * len(filters))

    # PreFilter: a plugin may narrow the nodes (NodeAffinity on metadata.name), reject the pod,
    # return Skip (its Filter is not run), or write the cycle state its Filter reads.
    # `considered` stays None while every node is considered (the common case).
    considered: np.ndarray | None = None
    narrowing: list[str] = []
    allowed_names: set[str] | None = None
    skipped: set[str] = set()
    started = perf_counter()
    for plugin in profile.pre_filters:
        try:
            allowed = plugin.pre_filter(pod, nodes)
        except PluginError as err:
            out.pre_filter_seconds = perf_counter() - started
            out.error = f"running PreFilter plugin {_go_quote(plugin.name)}: {err}"
            return out
        if allowed is None:
            continue
        if allowed is SKIP:
            # As RunPreFilterPlugins: a plugin returning Skip has its Filter skipped.
            skipped.add(plugin.name)
            continue
        if isinstance(allowed, PreFilterRejected):
            out.pre_filter_seconds = perf_counter() - started
            out.rejected = (plugin.name, allowed.message)
            return out
        narrowing.append(plugin.name)
        # As RunPreFilterPlugins: results merge by intersecting node names.
        allowed_names = set(allowed) if allowed_names is None else allowed_names & set(allowed)
        if not allowed_names:
            names = sorted(narrowing)
            message = (f"node(s) didn't satisfy plugin {names[0]}" if len(names) == 1 else
                       f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously")
            out.pre_filter_seconds = perf_counter() - started
            out.rejected = (narrowing[0], message)
            return out
        mask = np.zeros(n, dtype=bool)
        rows = [nodes.index[name] for name in allowed if name in nodes.index]
        mask[rows] = True
        considered = mask if considered is None else considered & mask
    out.pre_filter_seconds = perf_counter() - started
    out.skipped = frozenset(skipped)
    out.considered = considered
    if narrowing:
        rejected_by[~considered] = ABSENT
        out.absent_status = (narrowing[0], f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(narrowing))}]")

    # Filter: each node is reported under the first plugin that rejects it.
    remaining: np.ndarray | None = None if considered is None else considered.copy()
    for i, plugin in enumerate(filters):
        if plugin.name in skipped:
            out.filter_results[i] = FilterResult.all_pass(n)
            continue
        result = plugin.filter(pod, nodes)
        out.filter_results[i] = result
        if result.all_passed:
            continue
        passed = result.passed
        if remaining is None:
            rejected_by[~passed] = i
            remaining = np.array(passed, dtype=bool)
        else:
            rejected_by[remaining & ~passed] = i
            remaining &= passed
    out.remaining = remaining
    return out


def overlay_pass(base: FilterPass, top: FilterPass, rows: np.ndarray) -> FilterPass:
    """`base`, with `top`'s statuses on the rows of mask `rows` that `top` rejects: upstream's
    first pass (nominated pods added) decides a node it rejects, the second pass (without them)
    the nodes the first lets through."""
    take = rows & (top.rejected_by >= 0)
    if not np.count_nonzero(take):
        return base
    n = len(base.rejected_by)
    rejected_by = np.where(take, top.rejected_by, base.rejected_by)
    results: list[FilterResult | None] = []
    for b, t in zip(base.filter_results, top.filter_results):
        if b is None and t is None:
            results.append(None)
            continue
        b = b if b is not None else FilterResult.all_pass(n)
        t = t if t is not None else FilterResult.all_pass(n)
        unresolvable_rows = None
        if b.unresolvable_rows is not None or t.unresolvable_rows is not None:
            unresolvable_rows = np.where(take, t.unresolvable_mask(n), b.unresolvable_mask(n))
        results.append(FilterResult(
            np.where(take, t.passed, b.passed),
            [(text, mask & ~take) for text, mask in b.reasons] + [(text, mask & take) for text, mask in t.reasons],
            unresolvable=b.unresolvable | t.unresolvable, unresolvable_rows=unresolvable_rows))
    remaining = rejected_by == -1
    return FilterPass(rejected_by, results, base.considered, remaining, base.absent_status,
                      skipped=base.skipped, pre_filter_seconds=base.pre_filter_seconds)


def run_filters_with_nominated_pods(profile: Profile, pod: PodSpec, nodes: NodeTable,
                                    nominated: list[tuple[int, PodSpec]], plain: FilterPass | None = None
                                    ) -> FilterPass:
    """As RunFilterPluginsWithNominatedPods, over all nodes at once: on the nodes with nominated
    pods of priority >= the pod's (`nominated`: (row, pod)), the pod must pass with those pods
    counted (they must not lose the room they were promised) and, when it does, without them
    (pod affinity to a nominated pod must not count on a pod that is not there yet). Every other
    node is filtered as it is. `plain` is the pass without nominated pods, if already run."""
    if plain is None:
        plain = run_filters(profile, pod, nodes)
    if not nominated or plain.error is not None or plain.rejected is not None:
        return plain
    rows = sorted({row for row, _ in nominated})
    # Node-local filters see only their own node's nominated pods, so one pass with all of them
    # added is exact. A filter reading other nodes' pods (topology domains) would see them all:
    # then each node gets its own pass, as upstream adds the pods to that node's copy only.
    cross = [p.name for p in profile.filters if p.name in CROSS_NODE_FILTERS]
    per_node = len(rows) > 1 and any(
        name not in plain.skipped or any(np_.pod_affinity or np_.pod_anti_affinity for _, np_ in nominated)
        for name in cross)
    if not per_node and _node_local(profile, plain, nominated):
        # Only node-local filters read other pods here (the cross-node ones are skipped for this pod and no
        # nominated pod has affinity terms): what they read of a node is its usage columns, so the nominated
        # pods' requests are added to those columns for the pass, all at once, and taken out after. The same
        # verdicts as adding each pod to the table, without indexing (and un-indexing) every nominated pod for
        # every pod scheduled: a cost that grew with the nominated pods and fed on itself.
        first = _filters_with_nominated_usage(profile, pod, nodes, nominated)
        if first.error is not None:
            plain.error = first.error
            return plain
        if first.rejected is not None:
            return plain
        mask = np.zeros(nodes.n, dtype=bool)
        mask[rows] = True
        return overlay_pass(plain, first, mask)
    groups = [[(r, p) for r, p in nominated if r == row] for row in rows] if per_node else [nominated]
    out = plain
    for group in groups:
        added: list[tuple[int, PodSpec]] = []
        state = CycleState()
        token = _CURRENT_CYCLE.set(state)
        try:
            for row, other in group:
                nodes.add_pod(row, other)
                added.append((row, other))
            first = run_filters(profile, pod, nodes)
        finally:
            _CURRENT_CYCLE.reset(token)
            for row, other in reversed(added):
                nodes.remove_pod(row, other)
        if first.error is not None:
            out.error = first.error
            return out
        if first.rejected is not None:
            continue  # not expected: PreFilter verdicts do not depend on other pods
        mask = np.zeros(nodes.n, dtype=bool)
        mask[[row for row, _ in group]] = True
        out = overlay_pass(out, first, mask)
    return out


def _node_local(profile: Profile, plain: FilterPass, nominated: list[tuple[int, PodSpec]]) -> bool:
    """Whether the pass reads other pods only through the nodes' usage columns (resources, host ports)."""
    if any(np_.pod_affinity or np_.pod_anti_affinity for _, np_ in nominated):
        return False
    return all(p.name in plain.skipped for p in profile.filters if p.name in CROSS_NODE_FILTERS)


def _filters_with_nominated_usage(profile: Profile, pod: PodSpec, nodes: NodeTable,
                                  nominated: list[tuple[int, PodSpec]]) -> FilterPass:
    """run_filters with the nominated pods' requests, non-zero requests and host ports counted on their nodes'
    columns for the pass only (restored exactly after, the least-free cache with them)."""
    usage = getattr(nominated, "usage", None)  # the nominator's columns (Nominator.counted_for), else built here
    if usage is not None:
        rows, requests, nonzero = usage
        resources = {r for r, v in requests.items() if v.any()}
    else:
        rows = np.fromiter((r for r, _ in nominated), dtype=np.int64, count=len(nominated))
        resources = {r for _, p in nominated for r in p.requests}
        requests = {r: np.fromiter((p.requests.get(r, 0) for _, p in nominated), np.int64, len(nominated))
                    for r in resources}
        nonzero = {r: np.fromiter((p.nonzero_requests[r] for _, p in nominated), np.int64, len(nominated))
                   for r in (CPU, MEMORY)}
    if any(r not in nodes.requested for r in resources):
        # A resource no node declares yet: the table's own path creates its column.
        added = []
        try:
            for row, other in nominated:
                nodes.add_pod(row, other)
                added.append((row, other))
            return run_filters(profile, pod, nodes)
        finally:
            for row, other in reversed(added):
                nodes.remove_pod(row, other)
    columns = [(nodes.requested[r], requests[r]) for r in resources]
    columns += [(nodes.nonzero_requested[r], nonzero[r]) for r in (CPU, MEMORY)]
    with_ports = [(row, p) for row, p in nominated if p.host_ports]
    port_keys = {(hp.protocol, hp.port) for _, p in with_ports for hp in p.host_ports}
    had_keys = {k for k in port_keys if k in nodes.ports}
    min_free = nodes._min_free
    nodes._min_free = {}  # computed afresh from the columns as they are during the pass
    token = _CURRENT_CYCLE.set(CycleState())
    try:
        for col, values in columns:
            np.add.at(col, rows, values)
        for row, other in with_ports:
            for hp in other.host_ports:
                nodes.ports.setdefault((hp.protocol, hp.port), {}).setdefault(row, []).append(hp.ip)
        return run_filters(profile, pod, nodes)
    finally:
        _CURRENT_CYCLE.reset(token)
        for col, values in columns:
            np.subtract.at(col, rows, values)
        for row, other in with_ports:
            for hp in other.host_ports:
                by_row = nodes.ports[(hp.protocol, hp.port)]
                by_row[row].remove(hp.ip)
                if not by_row[row]:
                    del by_row[row]
                if not by_row and (hp.protocol, hp.port) not in had_keys:
                    del nodes.ports[(hp.protocol, hp.port)]
        nodes._min_free = min_free


@dataclass
class PostFilterResult:
    """A PostFilter verdict (upstream's PostFilterResult with its Status).

    `code` is SUCCESS, UNSCHEDULABLE, UNSCHEDULABLE_AND_UNRESOLVABLE or ERROR; `nominated_node` is
    None to leave the pod's nomination as it is (ModeNoop), "" to clear it, or the node to nominate
    (ModeOverride); `victims` are the pods to evict for it; `detail` is the plugin's own account
    (DefaultPreemption: the candidates it weighed and why the others were rejected)."""

    code: str
    message: str = ""
    nominated_node: str | None = None
    victims: tuple[PodSpec, ...] = ()
    plugin: str = ""
    detail: Any = None

    @property
    def success(self) -> bool:
        return self.code == SUCCESS


SUCCESS, ERROR = "Success", "Error"


@dataclass
class Handle:
    """What a PostFilter plugin may use of the running scheduler (upstream's framework.Handle):
    the profile (to run its filters in a dry run) and the nominator (pods nominated to nodes)."""

    profile: Profile
    nominator: Any = None  # engine.nominator.Nominator

    def nominated_pods(self, pod: PodSpec, nodes: NodeTable) -> list[tuple[int, PodSpec]]:
        if self.nominator is None:
            return []
        return self.nominator.counted_for(pod, nodes)


@runtime_checkable
class PostFilterPlugin(Protocol):
    name: ClassVar[str]

    def post_filter(self, pod: PodSpec, nodes: NodeTable, decision: Decision, handle: Handle) -> PostFilterResult: ...


def run_post_filter_plugins(handle: Handle, pod: PodSpec, nodes: NodeTable, decision: Decision) -> PostFilterResult:
    """As RunPostFilterPlugins: the first plugin to succeed (or to say UnschedulableAndUnresolvable)
    decides; an Error stops; otherwise the reasons add up and the last nomination that is not a
    no-op stands."""
    nominated: str | None = None
    reasons: list[str] = []
    rejector = ""
    detail = None
    for plugin in handle.profile.post_filters:
        result = plugin.post_filter(pod, nodes, decision, handle)
        result.plugin = plugin.name
        if result.code in (SUCCESS, UNSCHEDULABLE_AND_UNRESOLVABLE):
            return result
        if result.code == ERROR:
            return PostFilterResult(ERROR, result.message, plugin=plugin.name)
        if result.nominated_node is not None:
            nominated = result.nominated_node
        if result.message:
            reasons.append(result.message)
        rejector = rejector or plugin.name
        detail = result.detail
    return PostFilterResult(UNSCHEDULABLE, ", ".join(reasons), nominated_node=nominated, plugin=rejector,
                            detail=detail if len(handle.profile.post_filters) == 1 else None)


class Algorithm:
    """schedulePod over a NodeTable: filter, score, select. Holds the round-robin start index, the
    random choices (tiebreak.py: its seed is drawn when none is given), the nominator (pods nominated to
    nodes by preemption, counted while filtering) and, with `batching` (upstream's OpportunisticBatching
    gate, on by default), the work pods of one scheduling signature share (batching.py): the same
    decisions, computed once per signature and kept up to date."""

    def __init__(self, seed: int | None = None, nominator=None, *, batching: bool = True):
        self.next_start_node_index = 0
        self.tiebreak = TieBreak(seed)
        self.nominator = nominator
        if batching:
            from .batching import OpportunisticBatch

            self.batch = OpportunisticBatch()
        else:
            self.batch = None

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
        at = (*self.tiebreak.state(), self.next_start_node_index)
        try:
            decision = self._schedule(profile, pod, nodes, all_nodes)
        finally:
            _CURRENT_CYCLE.reset(token)
        decision.cycle_state = state
        decision.tiebreak = at
        return decision

    def _schedule(self, profile: Profile, pod: PodSpec, nodes: NodeTable, all_nodes: bool) -> Decision:
        n = nodes.n
        filters = profile.filters
        if n == 0:
            rejected_by = np.empty(0, dtype=rejected_by_dtype(len(filters)))
            return Decision(pod_key=pod.key, num_all_nodes=0, candidates=np.zeros(0, dtype=np.int64),
                            rejected_by=rejected_by, filter_names=[p.name for p in filters],
                            filter_results=[None] * len(filters))

        # PreFilter and Filter: run, or read from the pod's signature batch (the same verdicts).
        started = perf_counter()
        batch = self.batch.lookup(profile, pod, nodes) if self.batch is not None and not all_nodes else None
        fp = batch.filter_pass() if batch is not None else run_filters(profile, pod, nodes)
        decision = Decision(
            pod_key=pod.key, num_all_nodes=n, candidates=_NO_ROWS,
            rejected_by=fp.rejected_by, filter_names=_filter_names(profile), filter_results=[None] * len(filters),
        )
        decision.pre_filter_seconds = fp.pre_filter_seconds if batch is None else perf_counter() - started
        if fp.error is not None or fp.rejected is not None:
            decision.rejected_by = np.full(n, -1, dtype=rejected_by_dtype(len(filters)))  # no node was filtered
            if fp.error is not None:
                decision.error = fp.error
                return decision
            return self._rejected_at_pre_filter(decision, *fp.rejected)
        # The nominator: pods nominated to a node with priority >= this pod's are counted there.
        nominated = self.nominator.counted_for(pod, nodes) if self.nominator is not None else []
        if nominated:
            if batch is not None:
                batch, fp = self._fresh(batch, pod, profile, nodes)
            fp = run_filters_with_nominated_pods(profile, pod, nodes, nominated, plain=fp)
            if fp.error is not None:
                decision.rejected_by = np.full(n, -1, dtype=rejected_by_dtype(len(filters)))
                decision.error = fp.error
                return decision
            decision.nominated_pods_counted = len(nominated)

        # As evaluateNominatedNode: a node the pod was nominated to (by its preemption) is tried
        # first, and taken when it passes; the round-robin index does not move. (Such a pod has no
        # signature: its cycle is its own.)
        if pod.nominated_node_name:
            row = nodes.index.get(pod.nominated_node_name)
            if row is not None and fp.rejected_by[row] == -1:
                self._take_filter_pass(decision, fp)
                decision.candidates = np.asarray([row], dtype=np.int64)
                decision.evaluated_nodes = 1
                decision.selected_row = int(row)
                decision.nominated_node_taken = True
                return decision

        # numFeasibleNodesToFind, starting at the round-robin index over the considered nodes.
        processed, candidates = self._cut(profile, fp, n, all_nodes)
        if batch is not None and batch.cut_reads_stale(*self._examined(fp, processed, n), fp.remaining,
                                                       len(candidates)):
            # The cut read nodes whose pods changed since the batch read them: read them again, cut again.
            batch, fp = self._fresh(batch, pod, profile, nodes)
            processed, candidates = self._cut(profile, fp, n, all_nodes)
        self._take_filter_pass(decision, fp)
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
        shared = batch.scores(candidates) if batch is not None else None
        if shared is not None:
            decision.plugin_scores, totals = shared
            self.batch.batched_pods += 1
        else:
            totals = self._score(profile, pod, nodes, candidates, decision)
            if totals is None:
                decision.score_seconds = perf_counter() - started
                return decision
        decision.totals = totals
        decision.score_seconds = perf_counter() - started

        # selectHost: uniformly at random among the top scores.
        best = (totals == totals.max()).nonzero()[0]
        pick = best[0] if len(best) == 1 else best[self.tiebreak.randrange(len(best))]
        decision.selected_row = int(candidates[pick])
        return decision

    @staticmethod
    def _take_filter_pass(decision: Decision, fp: FilterPass) -> None:
        decision.rejected_by = fp.rejected_by
        decision.filter_results = fp.filter_results
        decision.absent_status = fp.absent_status
        decision.skipped_filters = fp.skipped

    def _fresh(self, batch, pod: PodSpec, profile: Profile, nodes: NodeTable):
        """The batch with its stale rows read again and its filter pass; without a batch (a plugin's answer
        no longer fits it) the pod's own filter pass."""
        if batch.refresh(pod):
            return batch, batch.filter_pass()
        self.batch.drop(batch)
        return None, run_filters(profile, pod, nodes)

    def _cut(self, profile: Profile, fp: FilterPass, n: int, all_nodes: bool) -> tuple[int, np.ndarray]:
        if fp.considered is None:
            return self._take_all_considered(profile, fp.remaining, fp.rejected_by, n, all_nodes)
        return self._take_narrowed(profile, fp.considered, fp.remaining, fp.rejected_by, all_nodes)

    def _examined(self, fp: FilterPass, processed: int, n: int) -> tuple[int, int, int, np.ndarray | None]:
        """(start, processed, n, considered rows): where the cut just looked, for Batch.cut_reads_stale."""
        if fp.considered is None:
            return self.next_start_node_index % n, processed, n, None
        rows = np.flatnonzero(fp.considered)
        return (self.next_start_node_index % len(rows) if len(rows) else 0), processed, n, rows

    def _score(self, profile: Profile, pod: PodSpec, nodes: NodeTable, candidates: np.ndarray,
               decision: Decision) -> np.ndarray | None:
        """Each score plugin on the candidates, normalized and weighted; None (the decision's error set)
        when a plugin fails or returns an invalid score."""
        totals = np.zeros(len(candidates), dtype=np.int64)
        for plugin, weight in profile.scores:
            try:
                raw = plugin.score(pod, nodes, candidates)
            except PluginError as err:
                decision.error = f"running PreScore plugin {_go_quote(plugin.name)}: {err}"
                decision.candidates = np.zeros(0, dtype=np.int64)
                return None
            if raw is None:
                continue
            raw = np.asarray(raw, dtype=np.int64)
            normalized = np.asarray(plugin.normalize(raw), dtype=np.int64)
            if len(normalized) and _out_of_range(normalized):
                decision.error = f"plugin {plugin.name!r} returns an invalid score, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                decision.candidates = np.zeros(0, dtype=np.int64)
                return None
            decision.plugin_scores.append(PluginScores(plugin.name, weight, raw, normalized))
            totals += normalized * weight if weight != 1 else normalized
        return totals

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
