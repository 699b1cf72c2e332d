"""The preemption evaluator (upstream's preemption.Evaluator with DefaultPreemption's
SelectVictimsOnNode): eligibility, the dry run over candidate nodes, and the choice of one.

The dry run answers, for each node whose status was Unschedulable: with every pod of lower priority
gone, does the pod fit (its filters, with the nominated pods counted)? If so, which of those pods can
stay (reprieved one at a time, PDB-violating ones first, the most important first)? Upstream runs it
node by node on copies. Here it is columnar when it can be exact that way:

- the node-local filters (NodeResourcesFit, NodePorts) depend only on the node's own pods, so the dry
  run for a chunk of nodes at once is one "what-if" usage table of just those nodes: all victims'
  requests subtracted per node with one scatter, then each reprieve step k puts back every node's k-th
  victim at once and runs those filters once over the chunk. The steps are as many as the most victims
  on one node, not nodes x pods; the victims of all nodes are found once, from the pod columns.
- the static filters (taints, node affinity, node name, cordon) do not change when pods go: their
  verdicts are the scheduling cycle's own (or run once over all nodes).
- filters that read other nodes' pods (PodTopologySpread, InterPodAffinity), when they are not skipped
  for this pod, would see a victim removed from one node in another node's domain too; for those pods
  the dry run goes node by node, removing and re-adding that node's pods on a copy of the table
  (exact, slower).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..framework import (
    ABSENT,
    ERROR,
    SUCCESS,
    UNSCHEDULABLE,
    UNSCHEDULABLE_AND_UNRESOLVABLE,
    CycleState,
    Decision,
    FilterResult,
    Handle,
    PostFilterResult,
    _CURRENT_CYCLE,
    run_filters_with_nominated_pods,
)
from ..nodes import NodeTable
from ..pods import PREEMPT_NEVER, PodSpec
from .pdb import split_by_pdb_violation, violations
from .pick import MAX_INT32, Candidate, candidate_scores, importance_key, pick_index

# Upstream's messages (default_preemption.go, preemption.go).
MSG_PREEMPTION_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_TERMINATING_ON_NOMINATED = "not eligible due to a terminating pod on the nominated node."
MSG_NO_VICTIMS = "No preemption victims found for incoming pod"
MSG_NOT_HELPFUL = "Preemption is not helpful for scheduling"
MSG_NO_CANDIDATE = "no candidate node for preemption"
NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"

# The filters whose verdict does not depend on the pods on any node.
STATIC_FILTERS = frozenset(("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"))
# The filters whose verdict on a node depends on that node's pods only.
NODE_LOCAL_FILTERS = frozenset(("NodeResourcesFit", "NodePorts"))


@dataclass(frozen=True)
class NodeStatus:
    """A node's status in the dry run (a framework Status: code and reasons)."""

    code: str
    reasons: tuple[str, ...]


@dataclass
class DryRun:
    """What the dry run found: the candidates (non-violating first, as upstream returns them) and the
    status of every node it examined without finding one. A candidate's victims are listed only when
    asked for (the chosen one always; all of them for an explanation)."""

    statuses: dict[str, NodeStatus] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    examined: int = 0  # nodes dry-run (upstream stops once it has enough candidates)
    # The candidates as (chunk, positions in it), in upstream's order: non-violating ones, then the rest.
    _taken: list[tuple[_Chunk, np.ndarray]] = field(default_factory=list, repr=False)
    _candidates: list[Candidate] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return sum(len(positions) for _, positions in self._taken)

    def candidate(self, i: int) -> Candidate:
        for chunk, positions in self._taken:
            if i < len(positions):
                pos = int(positions[i])
                return Candidate(str(chunk.names[pos]), int(chunk.rows[pos]), chunk.victims(pos), int(chunk.n_viol[pos]))
            i -= len(positions)
        raise IndexError(i)

    @property
    def candidates(self) -> list[Candidate]:
        if self._candidates is None:
            self._candidates = [self.candidate(i) for i in range(len(self))]
        return self._candidates

    def column(self, name: str) -> np.ndarray:
        """One of pickOneNodeForPreemption's inputs over all candidates, in order."""
        parts = [getattr(chunk, name)[positions] for chunk, positions in self._taken]
        return np.concatenate(parts) if parts else np.zeros(0)


@dataclass
class _Chunk:
    """The dry run of some nodes, as columns by position in the dry-run order: whether the node is a
    candidate, and for candidates pickOneNodeForPreemption's inputs; the others' statuses by position."""

    rows: np.ndarray
    names: Sequence[str]
    candidate: np.ndarray  # bool
    n_viol: np.ndarray
    top: np.ndarray  # the highest victim priority
    prio_sum: np.ndarray  # sum of (priority + 2^31) over the victims
    n_victims: np.ndarray
    earliest: np.ndarray  # earliest start among the highest-priority victims (float seconds)
    statuses: dict[int, NodeStatus]
    victims: Callable[[int], tuple[PodSpec, ...]]  # position -> victims, most important first


@dataclass
class PreemptionDetail:
    """The account of one preemption attempt, for the Attempt page and explain."""

    potential_nodes: int = 0  # nodes whose status was Unschedulable
    offset: int = 0
    num_candidates: int = 0
    dry_run: DryRun | None = None
    chosen: Candidate | None = None
    # As prepareCandidate's getLowerPriorityNominatedPods: pods of lower priority nominated to the chosen
    # node, whose nomination is to be cleared (they may no longer fit there; cleared, they retry sooner).
    lower_priority_nominated: tuple[PodSpec, ...] = ()
    columnar: bool = True  # False: filters reading other nodes' pods made it go node by node


@dataclass
class _ColumnarRun:
    running: list  # the filter plugins that run for this pod, in the profile's order
    static: dict[int, FilterResult]  # id(plugin) -> its verdict over all nodes
    state: CycleState
    slots: np.ndarray  # the potential victims' slots
    slot_pos: np.ndarray  # the dry-run position of each one's node


def _slice(res: FilterResult, rows: np.ndarray) -> FilterResult:
    """A filter's verdict on some nodes only, in their order."""
    if res.all_passed:
        return FilterResult.all_pass(len(rows))
    return FilterResult(res.passed[rows], [(text, mask[rows]) for text, mask in res.reasons],
                        unresolvable=res.unresolvable,
                        unresolvable_rows=None if res.unresolvable_rows is None else res.unresolvable_rows[rows])


@dataclass
class _NodeResult:
    row: int
    status: NodeStatus | None = None  # None: a candidate
    victims: tuple[PodSpec, ...] = ()
    violations: int = 0


def node_status(decision: Decision, row: int | None) -> str:
    """The status code of `row` in the scheduling cycle (m.Get(node)): a node that is not there, or
    that a PreFilterResult left out, reads as UnschedulableAndUnresolvable."""
    if row is None:
        return UNSCHEDULABLE_AND_UNRESOLVABLE
    i = int(decision.rejected_by[row])
    if i < 0:
        return UNSCHEDULABLE_AND_UNRESOLVABLE if i == ABSENT else SUCCESS
    res = decision.filter_results[i]
    return UNSCHEDULABLE_AND_UNRESOLVABLE if res.unresolvable_mask(decision.num_all_nodes)[row] else UNSCHEDULABLE


def fit_error_message(num_all_nodes: int, statuses: dict[str, NodeStatus]) -> str:
    """As FitError.Error over the dry run's statuses, the nodes it did not examine reading
    "Preemption is not helpful for scheduling"."""
    counts: dict[str, int] = {}
    for status in statuses.values():
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    absent = num_all_nodes - len(statuses)
    if absent > 0:
        counts[MSG_NOT_HELPFUL] = counts.get(MSG_NOT_HELPFUL, 0) + absent
    msg = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    parts = sorted(f"{count} {reason}" for reason, count in counts.items())
    if parts:
        msg += " " + ", ".join(parts) + "."
    return msg


class Evaluator:
    """One preemption attempt at a time. `offset_and_count(potential)` is the plugin's
    GetOffsetAndNumCandidates; `clock` gives "now" for pods that have not started. `node_by_node`
    forces the exact per-node dry run even where the columnar one applies (tests compare the two)."""

    def __init__(self, offset_and_count: Callable[[int], tuple[int, int]], clock: Callable[[], float] = time.time,
                 node_by_node: bool = False):
        self.offset_and_count = offset_and_count
        self.clock = clock
        self.node_by_node = node_by_node

    # ---- Preempt -----------------------------------------------------------------------------
    def preempt(self, pod: PodSpec, nodes: NodeTable, decision: Decision, handle: Handle) -> PostFilterResult:
        now = self.clock()
        # 1) Is the pod eligible to preempt others?
        ok, msg = self.eligible(pod, nodes, decision)
        if not ok:
            return PostFilterResult(UNSCHEDULABLE, msg)
        # 2) Find the candidates.
        detail = PreemptionDetail()
        potential = decision.unschedulable_rows()
        detail.potential_nodes = len(potential)
        if len(potential) == 0:
            dry = DryRun()
        else:
            offset, count = self.offset_and_count(len(potential))
            detail.offset, detail.num_candidates = offset, count
            dry, detail.columnar = self.dry_run(pod, nodes, decision, handle, potential, offset, count, now)
        detail.dry_run = dry
        if not len(dry):
            if dry.errors:
                # As utilerrors.NewAggregate(errs).Error(): one error alone, several in brackets.
                text = dry.errors[0] if len(dry.errors) == 1 else "[" + ", ".join(dry.errors) + "]"
                return PostFilterResult(ERROR, text, detail=detail)
            # Nominated node "": clear a nomination the pod may have.
            return PostFilterResult(UNSCHEDULABLE, fit_error_message(nodes.n, dry.statuses), nominated_node="",
                                    detail=detail)
        # 3) (no extenders) 4) the best candidate.
        best = dry.candidate(self._pick(dry))
        if not best.node:
            return PostFilterResult(UNSCHEDULABLE, MSG_NO_CANDIDATE, detail=detail)
        detail.chosen = best
        if handle.nominator is not None:
            detail.lower_priority_nominated = tuple(
                p for p in handle.nominator.pods_for_node(best.node) if p.priority < pod.priority)
        return PostFilterResult(SUCCESS, nominated_node=best.node, victims=best.victims, detail=detail)

    def eligible(self, pod: PodSpec, nodes: NodeTable, decision: Decision) -> tuple[bool, str]:
        """As PodEligibleToPreemptOthers: not with preemptionPolicy Never; not while a pod of lower
        priority that this pod's earlier preemption is evicting still terminates on its nominated node,
        unless that node is now UnschedulableAndUnresolvable for it."""
        if pod.preemption_policy == PREEMPT_NEVER:
            return False, MSG_PREEMPTION_POLICY_NEVER
        if pod.nominated_node_name:
            row = nodes.index.get(pod.nominated_node_name)
            if node_status(decision, row) == UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            cols = nodes.pods.columns
            used = cols.row[:cols.high]
            on_node = (used == row) & (cols.priority[:cols.high] < pod.priority) & cols.preempting[:cols.high]
            if np.count_nonzero(on_node):
                return False, MSG_TERMINATING_ON_NOMINATED
        return True, ""

    # ---- DryRunPreemption --------------------------------------------------------------------
    def dry_run(self, pod: PodSpec, nodes: NodeTable, decision: Decision, handle: Handle, potential: np.ndarray,
                offset: int, count: int, now: float) -> tuple[DryRun, bool]:
        """As DryRunPreemption, walked in upstream's order (potential[(offset + i) % len]) and stopped
        as upstream stops: once there is a non-violating candidate and `count` candidates in all (each
        list holds at most `count`). The nodes are dry-run in chunks, so a big cluster does not pay for
        nodes past the stop."""
        order = np.roll(potential, -offset) if offset else potential
        columnar = not self.node_by_node and self._columnar(handle, decision)
        nominated = handle.nominated_pods(pod, nodes)
        work = None if columnar else nodes.copy()
        setup = self._columnar_setup(pod, nodes, decision, handle, order) if columnar else None
        out = DryRun()
        non_violating: list[tuple[_Chunk, np.ndarray]] = []
        violating: list[tuple[_Chunk, np.ndarray]] = []
        nv_count = v_count = 0
        size = max(count, 64)
        for begin in range(0, len(order), size):
            rows = order[begin:begin + size]
            if columnar:
                chunk = self._select_victims_columnar(pod, nodes, setup, begin, rows, nominated, now)
            else:
                chunk = self._chunk_of([self._select_victims_on_node(pod, work, decision, handle, int(r), nominated, now)
                                        for r in rows], nodes, now)
            # The stop, at once for the chunk: after each candidate is added (each list keeps at most
            # `count`), stop when there is a non-violating one and `count` in all.
            nv = chunk.candidate & (chunk.n_viol == 0)
            v = chunk.candidate & (chunk.n_viol > 0)
            nv_seen = nv_count + np.cumsum(nv)
            v_seen = v_count + np.cumsum(v)
            stop = chunk.candidate & (nv_seen > 0) & (np.minimum(nv_seen, count) + np.minimum(v_seen, count) >= count)
            last = int(np.argmax(stop)) if np.count_nonzero(stop) else len(rows) - 1
            out.examined += last + 1
            taken_nv = np.flatnonzero(nv[:last + 1] & (nv_seen[:last + 1] <= count))
            taken_v = np.flatnonzero(v[:last + 1] & (v_seen[:last + 1] <= count))
            non_violating.append((chunk, taken_nv))
            violating.append((chunk, taken_v))
            nv_count += len(taken_nv)
            v_count += len(taken_v)
            for pos, status in chunk.statuses.items():
                if pos <= last:
                    if status.code == ERROR:
                        out.errors.append(status.reasons[0])
                    out.statuses[chunk.names[pos]] = status
            if np.count_nonzero(stop):
                break
        out._taken = non_violating + violating
        return out, columnar

    @staticmethod
    def _pick(dry: DryRun) -> int:
        """pickOneNodeForPreemption over the dry run's candidates, from their columns."""
        return pick_index(dry.column("n_viol"), dry.column("top"), dry.column("prio_sum"), dry.column("n_victims"),
                          dry.column("earliest"))

    @staticmethod
    def _chunk_of(results: list[_NodeResult], nodes: NodeTable, now: float) -> _Chunk:
        """The node-by-node results as a chunk."""
        k = len(results)
        chunk = _Chunk(np.asarray([r.row for r in results], dtype=np.int64), [nodes.names[r.row] for r in results],
                       np.zeros(k, dtype=bool), np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64),
                       np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.float64),
                       {}, lambda pos: results[pos].victims)
        for pos, res in enumerate(results):
            if res.status is None and not res.victims:
                res.status = NodeStatus(ERROR, (f'expected at least one victim pod on node "{chunk.names[pos]}"',))
            if res.status is not None:
                chunk.statuses[pos] = res.status
                continue
            chunk.candidate[pos] = True
            chunk.n_viol[pos] = res.violations
            chunk.top[pos], chunk.prio_sum[pos], chunk.n_victims[pos], chunk.earliest[pos] = \
                candidate_scores(res.victims, now)
        return chunk

    @staticmethod
    def _columnar(handle: Handle, decision: Decision) -> bool:
        """Whether every filter that runs for this pod is static or node-local."""
        for plugin in handle.profile.filters:
            if plugin.name in STATIC_FILTERS or plugin.name in decision.skipped_filters:
                continue
            if plugin.name not in NODE_LOCAL_FILTERS:
                return False
        return True

    # ---- SelectVictimsOnNode, columnar over many nodes -----------------------------------------
    def _columnar_setup(self, pod: PodSpec, nodes: NodeTable, decision: Decision, handle: Handle,
                        order: np.ndarray) -> _ColumnarRun:
        """What every chunk of a columnar dry run shares, computed once: the static filters' verdicts
        (removing pods cannot change them) over all nodes, and every potential victim on the potential
        nodes (a pod of lower priority: isPreemptionAllowed, IsEligiblePod being "true" by default)
        with the dry-run position of its node."""
        filters = handle.profile.filters
        running = [p for p in filters if p.name not in decision.skipped_filters]
        state = decision.cycle_state or CycleState()
        if decision.filter_names == [p.name for p in filters] and all(r is not None for r in decision.filter_results):
            # The scheduling cycle ran these very filters on this table: their static verdicts stand.
            static = {id(p): r for p, r in zip(filters, decision.filter_results) if p.name in STATIC_FILTERS}
        else:
            token = _CURRENT_CYCLE.set(state)
            try:
                static = {id(p): p.filter(pod, nodes) for p in running if p.name in STATIC_FILTERS}
            finally:
                _CURRENT_CYCLE.reset(token)
        cols = nodes.pods.columns
        order_pos = np.full(nodes.n, -1, dtype=np.int64)
        order_pos[order] = np.arange(len(order))
        used = np.flatnonzero(cols.row[:cols.high] >= 0)
        slots = used[(order_pos[cols.row[used]] >= 0) & (cols.priority[used] < pod.priority)]
        return _ColumnarRun(running, static, state, slots, order_pos[cols.row[slots]])

    def _select_victims_columnar(self, pod: PodSpec, nodes: NodeTable, setup: _ColumnarRun, begin: int,
                                 rows: np.ndarray, nominated: list[tuple[int, PodSpec]], now: float) -> _Chunk:
        """SelectVictimsOnNode for the nodes `rows` (positions begin.. in the dry-run order) at once,
        on a table of just those nodes."""
        n = nodes.n
        k = len(rows)
        cols = nodes.pods.columns
        position = np.full(n, -1, dtype=np.int64)  # node row -> position in this chunk
        position[rows] = np.arange(k)
        slots = setup.slots[(setup.slot_pos >= begin) & (setup.slot_pos < begin + k)]
        has_victims = np.zeros(k, dtype=bool)
        has_victims[position[cols.row[slots]]] = True

        view = _WhatIf(nodes, rows)
        # Remove every potential victim of every node in the chunk at once.
        view.take(cols, slots, sign=-1)
        # The nominated pods of priority >= the pod's on those nodes count (the first of upstream's two
        # passes; for node-local filters a pod that fits with them fits without them too).
        for row, other in nominated:
            if position[row] >= 0:
                view.add_pod(int(position[row]), other)
        dynamic = [p for p in setup.running if p.name not in STATIC_FILTERS]

        def run(view_table) -> list[FilterResult]:
            token = _CURRENT_CYCLE.set(setup.state)
            try:
                return [p.filter(pod, view_table) for p in dynamic]
            finally:
                _CURRENT_CYCLE.reset(token)

        # Every filter in the profile's order: the static ones' verdicts on these nodes, the others run.
        dyn = iter(run(view.table))
        first_results = [_slice(setup.static[id(p)], rows) if id(p) in setup.static else next(dyn)
                         for p in setup.running]
        fits, first_fail = self._verdicts(first_results, k)
        chunk = _Chunk(rows, nodes.name_array[rows], np.zeros(k, dtype=bool),
                       np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64),
                       np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.float64), {}, lambda pos: ())
        no_victims = NodeStatus(UNSCHEDULABLE_AND_UNRESOLVABLE, (MSG_NO_VICTIMS,))
        for pos in np.flatnonzero(~has_victims).tolist():
            chunk.statuses[pos] = no_victims
        for pos in np.flatnonzero(has_victims & ~fits).tolist():
            chunk.statuses[pos] = self._status_at(first_results[first_fail[pos]], pos, k)

        # Reprieve on the nodes where the pod fits with all victims gone.
        fit_pos = fits & has_victims
        slots = slots[fit_pos[position[cols.row[slots]]]]
        if not len(slots):
            return chunk
        starts = np.where(np.isnan(cols.start[slots]), now, cols.start[slots])
        # Per node (in dry-run order), most important first; equal ones in the node's order.
        by_importance = np.lexsort((cols.seq[slots], starts, -cols.priority[slots], position[cols.row[slots]]))
        slots = slots[by_importance]
        srows = cols.row[slots]
        pdbs = nodes.objects.pdbs
        names = [cols.pods[s].name for s in slots.tolist()] if any(b.disrupted_pods for b in pdbs) else ()
        violating = violations(names, cols.group[slots], cols.group_keys, srows, pdbs)
        # Reprieve order: the violating ones first, then the others, each most important first.
        reprieve = np.lexsort((np.arange(len(slots)), ~violating, position[srows]))
        slots, srows, violating = slots[reprieve], srows[reprieve], violating[reprieve]
        run_starts = np.flatnonzero(np.r_[True, srows[1:] != srows[:-1]])
        run_len = np.diff(np.r_[run_starts, len(slots)])
        run_of = np.repeat(np.arange(len(run_starts)), run_len)
        rank = np.arange(len(slots)) - run_starts[run_of]
        is_victim = np.zeros(len(slots), dtype=bool)
        spos = position[srows]
        for step_rank in range(int(rank.max()) + 1):
            step = np.flatnonzero(rank == step_rank)
            view.take(cols, slots[step], sign=+1, distinct_rows=True)
            step_fit, _ = self._verdicts(run(view.table), k)
            lost = step[~step_fit[spos[step]]]
            if len(lost):
                view.take(cols, slots[lost], sign=-1, distinct_rows=True)
                is_victim[lost] = True

        # pickOneNodeForPreemption's inputs per node, from the columns.
        runs = len(run_starts)
        run_pos = position[srows[run_starts]]
        vic = np.flatnonzero(is_victim)
        vrun = run_of[vic]
        prio = cols.priority[slots[vic]]
        n_victims = np.bincount(vrun, minlength=runs)
        n_viol = np.bincount(vrun[violating[vic]], minlength=runs)
        top = np.full(runs, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(top, vrun, prio)
        prio_sum = np.zeros(runs, dtype=np.int64)
        np.add.at(prio_sum, vrun, prio + (MAX_INT32 + 1))
        vstart = np.where(np.isnan(cols.start[slots[vic]]), now, cols.start[slots[vic]])
        earliest = np.full(runs, np.inf)
        np.minimum.at(earliest, vrun, np.where(prio == top[vrun], vstart, np.inf))
        ok = n_victims > 0
        chunk.candidate[run_pos[ok]] = True
        chunk.n_viol[run_pos] = n_viol
        chunk.top[run_pos] = top
        chunk.prio_sum[run_pos] = prio_sum
        chunk.n_victims[run_pos] = n_victims
        chunk.earliest[run_pos] = earliest
        for pos in run_pos[~ok].tolist():
            # Every pod reprieved: the pod fits as the node is (not expected after a rejection).
            chunk.statuses[pos] = NodeStatus(ERROR, (f'expected at least one victim pod on node "{chunk.names[pos]}"',))
        run_at = np.full(k, -1, dtype=np.int64)
        run_at[run_pos] = np.arange(runs)
        # The victims' pods, frozen now: slots are reused once the table changes.
        found_slots = slots[vic]
        victim_pods = cols.pods[found_slots]
        vic_starts = np.searchsorted(vrun, np.arange(runs))
        mixed_runs = (np.bincount(run_of[violating], minlength=runs) > 0) & \
            (np.bincount(run_of[~violating], minlength=runs) > 0)
        seq = cols.seq[found_slots]

        def victims(pos: int) -> tuple[PodSpec, ...]:
            """The node's victims in the order found (violating ones first), re-sorted by importance
            when both groups had pods, as upstream, so victims[0] is the most important."""
            r = int(run_at[pos])
            b, e = int(vic_starts[r]), int(vic_starts[r]) + int(n_victims[r])
            found = list(range(b, e))
            if mixed_runs[r]:
                # Equally important victims keep the node's order.
                found.sort(key=lambda j: (importance_key(victim_pods[j], now), int(seq[j])))
            return tuple(victim_pods[j] for j in found)

        chunk.victims = victims
        return chunk

    @staticmethod
    def _verdicts(results: list[FilterResult], n: int) -> tuple[np.ndarray, np.ndarray]:
        """(fits, position in `results` of the first filter rejecting it, or -1) per row."""
        first = np.full(n, -1, dtype=np.int64)
        fits = np.ones(n, dtype=bool)
        for k, res in enumerate(results):
            if res.all_passed:
                continue
            first[fits & ~res.passed] = k
            fits &= res.passed
        return fits, first

    @staticmethod
    def _status_at(res: FilterResult, row: int, n: int) -> NodeStatus:
        """The status a filter gave `row`: its reasons there, and its code."""
        reasons = tuple(text for text, mask in res.reasons if mask[row])
        code = UNSCHEDULABLE_AND_UNRESOLVABLE if res.unresolvable_mask(n)[row] else UNSCHEDULABLE
        return NodeStatus(code, reasons)

    # ---- SelectVictimsOnNode, one node (filters reading other nodes' pods) ---------------------
    def _select_victims_on_node(self, pod: PodSpec, work: NodeTable, decision: Decision, handle: Handle,
                                row: int, nominated: list[tuple[int, PodSpec]], now: float) -> _NodeResult:
        cols = work.pods.columns
        used = cols.row[:cols.high]
        slots = np.flatnonzero(used == row)
        slots = slots[np.argsort(cols.seq[slots], kind="stable")]
        potential = [cols.pods[s] for s in slots.tolist() if cols.pods[s].priority < pod.priority]
        if not potential:
            return _NodeResult(row, NodeStatus(UNSCHEDULABLE_AND_UNRESOLVABLE, (MSG_NO_VICTIMS,)))
        mine = [(r, p) for r, p in nominated if r == row]
        removed: list[PodSpec] = []
        try:
            for p in potential:
                work.remove_pod(row, p)
                removed.append(p)
            status = self._filter_on(pod, work, handle, row, mine)
            if status is not None:
                return _NodeResult(row, status)
            node_order = {p.key: i for i, p in enumerate(potential)}
            potential.sort(key=lambda p: importance_key(p, now))
            violating, fine = split_by_pdb_violation(potential, work.objects.pdbs)
            victims: list[PodSpec] = []
            n_viol = 0
            for group, counts in ((violating, True), (fine, False)):
                for p in group:
                    work.add_pod(row, p)
                    removed.remove(p)
                    if self._filter_on(pod, work, handle, row, mine) is not None:
                        work.remove_pod(row, p)
                        removed.append(p)
                        victims.append(p)
                        n_viol += counts
            if violating and fine:
                victims.sort(key=lambda p: (importance_key(p, now), node_order[p.key]))
            return _NodeResult(row, None, tuple(victims), n_viol)
        finally:
            for p in removed:
                work.add_pod(row, p)

    @staticmethod
    def _filter_on(pod: PodSpec, table: NodeTable, handle: Handle, row: int,
                   nominated: list[tuple[int, PodSpec]]) -> NodeStatus | None:
        """RunFilterPluginsWithNominatedPods on one node: None if the pod passes, else its status."""
        state = CycleState()
        token = _CURRENT_CYCLE.set(state)
        try:
            fp = run_filters_with_nominated_pods(handle.profile, pod, table, nominated)
        finally:
            _CURRENT_CYCLE.reset(token)
        if fp.error is not None:
            return NodeStatus(ERROR, (fp.error,))
        if fp.rejected is not None:
            return NodeStatus(UNSCHEDULABLE_AND_UNRESOLVABLE, (fp.rejected[1],))
        i = int(fp.rejected_by[row])
        if i == -1:
            return None
        if i == ABSENT:
            return NodeStatus(UNSCHEDULABLE_AND_UNRESOLVABLE, (fp.absent_status[1],))
        res = fp.filter_results[i]
        reasons = tuple(text for text, mask in res.reasons if mask[row])
        code = UNSCHEDULABLE_AND_UNRESOLVABLE if res.unresolvable_mask(table.n)[row] else UNSCHEDULABLE
        return NodeStatus(code, reasons)


class _WhatIf:
    """A NodeTable of some nodes only (`rows`, in that order) with their own usage columns (requests,
    allocatable, host ports): what the node-local filters read, with some pods taken off or put back.
    Each step then costs the chunk's size, not the cluster's. The other columns still have every node:
    a filter reading them here would be a static or cross-node one, which this table is never given."""

    def __init__(self, nodes: NodeTable, rows: np.ndarray):
        table = object.__new__(NodeTable)
        table.__dict__.update(nodes.__dict__)
        row_map = np.full(nodes.n, -1, dtype=np.int64)
        row_map[rows] = np.arange(len(rows))
        table.n = len(rows)
        table.requested = {r: c[rows] for r, c in nodes.requested.items()}
        table.allocatable = {r: c[rows] for r, c in nodes.allocatable.items()}
        table.ports = {key: {int(row_map[row]): list(ips) for row, ips in by_row.items() if row_map[row] >= 0}
                       for key, by_row in nodes.ports.items()}
        table._min_free = {}
        self.row_map = row_map
        self.table = table

    def take(self, cols, slots: np.ndarray, sign: int, distinct_rows: bool = False) -> None:
        """Add (sign +1) or remove (-1) the requests and host ports of the pods in `slots`;
        `distinct_rows`: no two of them on one node (a plain scatter then does)."""
        if not len(slots):
            return
        t = self.table
        t._min_free.clear()
        rows = self.row_map[cols.row[slots]]
        for r, col in cols.requests.items():
            values = col[slots]
            if not np.count_nonzero(values):
                continue
            target = t.requested.get(r)
            if target is None:
                target = t.requested[r] = np.zeros(t.n, dtype=np.int64)
                t.allocatable.setdefault(r, np.zeros(t.n, dtype=np.int64))
            if distinct_rows:
                target[rows] += values if sign > 0 else -values
            else:
                np.add.at(target, rows, values if sign > 0 else -values)
        for j in np.flatnonzero(cols.has_ports[slots]).tolist():
            pod, row = cols.pods[slots[j]], int(rows[j])
            for p in pod.host_ports:
                by_row = t.ports.setdefault((p.protocol, p.port), {})
                ips = by_row.setdefault(row, [])
                if sign > 0:
                    ips.append(p.ip)
                else:
                    if p.ip in ips:
                        ips.remove(p.ip)
                    if not ips:
                        del by_row[row]

    def add_pod(self, pos: int, pod: PodSpec) -> None:
        """Count a pod that is not in the table (a nominated pod) at position `pos`."""
        t = self.table
        t._min_free.clear()
        for r, v in pod.requests.items():
            target = t.requested.get(r)
            if target is None:
                target = t.requested[r] = np.zeros(t.n, dtype=np.int64)
                t.allocatable.setdefault(r, np.zeros(t.n, dtype=np.int64))
            target[pos] += v
        for p in pod.host_ports:
            t.ports.setdefault((p.protocol, p.port), {}).setdefault(pos, []).append(p.ip)
