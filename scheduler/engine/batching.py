"""Opportunistic batching (upstream's KEP-5598, OpportunisticBatching, on by default), made exact: pods
with the same scheduling signature share the work of filtering and scoring, and each still gets the
decision scheduling it from scratch would give.

A plugin signs a pod (`sign(pod, nodes)`, upstream's SignPod) with what of the pod its Filter and Score
read, or None when its verdict on a node depends on more than that node (PodTopologySpread and
InterPodAffinity with terms anywhere: the Borg equivalence class of a pod that reads other nodes is the
pod alone). A profile signs a pod only if every filter and score plugin does. For a signature seen
twice, a batch keeps, over every node of the table, what a cycle would compute before its cut: each
filter's verdict (reasons included), the first filter rejecting each node, and each score plugin's raw
score. A later pod with the signature reads them instead of running the plugins, and the framework then
makes every decision of its own as the per-pod cycle does (framework.Algorithm): numFeasibleNodesToFind
from the rotating start index, NormalizeScore over the nodes scored for this pod, the weights, the
random pick among the top scores, with the same random numbers drawn.

Kept exact by the table's change list (NodeTable.changed_rows): a node whose pods changed (an assume, a
forget, a row reloaded) is stale in every batch, and before a pod's cut reads a stale node (examines it,
or stops short of it while it is among the only feasible nodes left past the cut: were they all rejected
now, the cut would not stop), the batch asks the plugins whose verdict or score reads usage
(`usage_dependent`) again for those nodes only (`filter_rows`, `score` on those rows). A reload of all
usage (a worker's snapshot) starts every batch again. What a batch keeps is never changed in place once a
decision holds it (copy on write), so a decision's scores stay as they were when it was made.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from .framework import (
    ABSENT,
    CycleState,
    FilterPass,
    FilterResult,
    PluginError,
    PluginScores,
    _CURRENT_CYCLE,
    run_filters,
)
from .resources import MAX_NODE_SCORE, MIN_NODE_SCORE

# Batches kept per Algorithm (each holds a few int64 columns over the nodes): the signatures a worker
# sees at once are few; beyond that the least recently used goes.
MAX_BATCHES = 8
# Signatures remembered as seen once (a batch is made for the second pod, not for a pod alone).
MAX_SEEN = 256


def profile_signers(profile) -> list | None:
    """The profile's filter and score plugins, each once, if every one can sign (else None: as upstream,
    a plugin that cannot sign turns signatures off for the profile)."""
    memo = profile.__dict__.get("_signers", False)
    if memo is not False:
        return memo
    plugins: list = []
    for p in [*profile.filters, *(p for p, _ in profile.scores)]:
        if not any(p is q for q in plugins):
            plugins.append(p)
    ok = all(hasattr(p, "sign") for p in plugins) and all(
        hasattr(p, "filter_rows") or not getattr(p, "usage_dependent", True) for p in profile.filters)
    signers = plugins if ok else None
    profile.__dict__["_signers"] = signers
    return signers


def pod_signature(profile, pod, nodes) -> tuple | None:
    """The pod's scheduling signature under `profile` (None: unsignable)."""
    if pod.nominated_node_name:
        return None  # evaluateNominatedNode tries its node first: a cycle of its own
    signs = _sign_methods(profile)
    if signs is None:
        return None
    parts = []
    for sign in signs:
        part = sign(pod, nodes)
        if part is None:
            return None
        parts.append(part)
    return tuple(parts)


def _sign_methods(profile) -> tuple | None:
    """The signers' bound `sign` methods, looked up once per profile (every pod is signed)."""
    memo = profile.__dict__.get("_sign_methods", False)
    if memo is False:
        signers = profile_signers(profile)
        memo = profile.__dict__["_sign_methods"] = None if signers is None else tuple(p.sign for p in signers)
    return memo


def _out_of_range(scores: np.ndarray) -> bool:
    return bool(len(scores)) and bool(scores.max() > MAX_NODE_SCORE or scores.min() < MIN_NODE_SCORE)


class GatheredScores(PluginScores):
    """A plugin's scores over a decision's candidates, read from a batch's column when first asked."""

    __slots__ = ("plugin", "weight", "_column", "_candidates", "_raw", "_normalized")

    def __init__(self, plugin: str, weight: int, column: np.ndarray, candidates: np.ndarray,
                 normalized: np.ndarray | None = None):
        self.plugin, self.weight = plugin, weight
        self._column, self._candidates = column, candidates
        self._raw: np.ndarray | None = None
        self._normalized = normalized  # None: NormalizeScore is the identity (no ScoreExtensions)

    @property
    def raw(self) -> np.ndarray:
        if self._raw is None:
            self._raw = self._column[self._candidates]
        return self._raw

    @property
    def normalized(self) -> np.ndarray:
        return self.raw if self._normalized is None else self._normalized

    def at(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # The few positions the audit keeps (top candidates), without gathering every candidate's score.
        raw = self._raw[positions] if self._raw is not None else self._column[self._candidates[positions]]
        return raw, (raw if self._normalized is None else self._normalized[positions])


class _Column:
    """One score plugin's raw scores over every node (None: its PreScore skips for the signature)."""

    __slots__ = ("plugin", "weight", "values", "const", "dynamic", "extensions")

    def __init__(self, plugin, weight: int, values: np.ndarray | None):
        self.plugin, self.weight, self.values = plugin, weight, values
        self.dynamic = getattr(plugin, "usage_dependent", True)
        self.extensions = getattr(plugin, "score_extensions", True)  # has a NormalizeScore
        self.const = self._const()

    def _const(self) -> int | None:
        v = self.values
        if v is None or not len(v):
            return None
        low, high = int(v.min()), int(v.max())
        return low if low == high else None


class Batch:
    """What the pods of one signature share over one NodeTable (see the module docstring)."""

    def __init__(self, key: tuple, profile, nodes, fp: FilterPass, columns: list[_Column]):
        self.key, self.profile, self.nodes = key, profile, nodes
        self.epoch, self.seen = nodes.usage_epoch, len(nodes.changed_rows)
        self.stale: set[int] = set()
        self.rejected_by = fp.rejected_by
        self.results = list(fp.filter_results)
        self.considered, self.remaining = fp.considered, fp.remaining
        self.absent_status, self.skipped = fp.absent_status, fp.skipped
        self.columns = columns
        self.memo: dict[tuple[int, int], tuple[np.ndarray, int | None]] = {}
        # The filters whose verdict on a node moves with that node's pods (the others read its spec).
        self.dynamic_filters = [i for i, p in enumerate(profile.filters)
                                if p.name not in self.skipped and getattr(p, "usage_dependent", True)]
        self._recount()

    @classmethod
    def make(cls, profile, pod, nodes, key: tuple) -> Batch | None:
        """A cycle's filters over every node and every score plugin's raw scores over every node; None
        when the cycle cannot be shared (a PreFilter rejects the pod, a plugin errs)."""
        state = CycleState()
        token = _CURRENT_CYCLE.set(state)
        try:
            fp = run_filters(profile, pod, nodes)
            if fp.error is not None or fp.rejected is not None:
                return None
            rows = np.arange(nodes.n, dtype=np.int64)
            columns = []
            for plugin, weight in profile.scores:
                raw = plugin.score(pod, nodes, rows)
                columns.append(_Column(plugin, weight, None if raw is None else np.asarray(raw, dtype=np.int64)))
        except PluginError:
            return None
        finally:
            _CURRENT_CYCLE.reset(token)
        fp.rejected_by.flags.writeable = False
        return cls(key, profile, nodes, fp, columns)

    def _recount(self) -> None:
        """The sum of the weighted raw scores of the plugins without NormalizeScore (their normalized
        score is the raw one), and whether any of those is out of range anywhere."""
        fixed = None
        self.out_of_range = False
        for c in self.columns:
            if c.values is None or c.extensions:
                continue
            if _out_of_range(c.values):
                self.out_of_range = True  # such a pod's cycle reports the error: it runs on its own
            part = c.values * c.weight if c.weight != 1 else c.values
            fixed = part.copy() if fixed is None else fixed + part
        self.fixed = fixed

    # ---- keeping up with the table -----------------------------------------------------------------
    def current(self, nodes) -> bool:
        """Whether the batch still describes `nodes` (the rows changed since are noted as stale)."""
        if nodes is not self.nodes or nodes.usage_epoch != self.epoch:
            return False
        changed = nodes.changed_rows
        if len(changed) > self.seen:
            self.stale.update(changed[self.seen:])
            self.seen = len(changed)
        return True

    def refresh(self, pod) -> bool:
        """Ask the usage-dependent plugins again for the stale rows; False if a plugin's answer no
        longer fits the batch (then it is dropped)."""
        if not self.stale:
            return True
        nodes = self.nodes
        n = nodes.n
        rows = np.fromiter(sorted(self.stale), dtype=np.int64, count=len(self.stale))
        self.stale.clear()
        state = CycleState()
        token = _CURRENT_CYCLE.set(state)
        changed = False  # whether a filter's verdict may have changed on those rows
        try:
            results = self.results
            for i in self.dynamic_filters:
                plugin = self.profile.filters[i]
                old = results[i]
                if old is not None and old.all_passed:
                    everywhere = getattr(plugin, "passes_everywhere", None)
                    if everywhere is not None and everywhere(pod, nodes):
                        continue  # passes on every node, so on those rows still (known without reading them)
                part = plugin.filter_rows(pod, nodes, rows)
                if old is not None and old.all_passed and np.count_nonzero(part.passed) == len(rows):
                    continue  # passes there still (the usual case)
                results[i] = _patched(old, part, rows, n)
                changed = True
            fixed = self.fixed
            if fixed is not None:
                fixed[rows] = 0  # (no decision holds `fixed`: it is changed in place)
            for c in self.columns:
                if c.values is None:
                    continue
                if c.dynamic:
                    raw = c.plugin.score(pod, nodes, rows)
                    if raw is None:
                        return False
                    raw = np.asarray(raw, dtype=np.int64)
                    values = c.values.copy()  # decisions made before keep the old column
                    values[rows] = raw
                    c.values = values
                    if c.const is not None and np.count_nonzero(raw != c.const):
                        c.const = None  # (a column that becomes constant again is only not known as such)
                        self.memo.clear()
                if fixed is not None and not c.extensions:
                    part = c.values[rows]
                    if c.dynamic and _out_of_range(part):
                        # (a column read once, not again here, was checked over every node by _recount)
                        self.out_of_range = True
                    fixed[rows] += part * c.weight if c.weight != 1 else part
        except PluginError:
            return False
        finally:
            _CURRENT_CYCLE.reset(token)
        if not changed and self.remaining is None:
            return True  # every node still passes every filter
        # The first filter rejecting each of those rows, in the profile's order.
        first = np.full(len(rows), -1, dtype=np.int64)
        for i in range(len(results) - 1, -1, -1):
            res = results[i]
            if res is None or res.all_passed:
                continue
            first = np.where(res.passed[rows], first, i)
        if self.considered is not None:
            first = np.where(self.considered[rows], first, ABSENT)
        if self.remaining is None and not np.count_nonzero(first != -1):
            return True
        rejected_by = self.rejected_by.copy()
        rejected_by[rows] = first
        rejected_by.flags.writeable = False
        self.rejected_by = rejected_by
        self.remaining = rejected_by == -1
        return True

    # ---- a pod's cycle -----------------------------------------------------------------------------
    def filter_pass(self) -> FilterPass:
        """The pod's PreFilter and Filter as run_filters would return them (the cut may write rejected_by)."""
        rejected_by = self.rejected_by if self.remaining is None else self.rejected_by.copy()
        return FilterPass(rejected_by, list(self.results), self.considered, self.remaining, self.absent_status,
                          skipped=self.skipped)

    def cut_reads_stale(self, start: int, processed: int, n: int, considered_rows: np.ndarray | None,
                        remaining: np.ndarray | None, found: int) -> bool:
        """Whether the cut just made from `start` read a stale row: one among the `processed` nodes it
        examined, or, when it stopped before the last node, the feasible nodes past it when every one of
        them is stale. The cut stops after its `found`-th feasible node only if another feasible node is
        left past it (else every node is examined and carries its status): were those stale nodes all
        rejected now, the pod's own cycle would examine every node, and the round-robin index would move
        by all of them."""
        if not self.stale:
            return False
        m = n if considered_rows is None else len(considered_rows)
        past = 0  # stale rows past the examined ones that the batch holds feasible
        for r in self.stale:
            if considered_rows is None:
                at = (r - start) % n
            else:
                i = int(np.searchsorted(considered_rows, r))
                if i >= m or considered_rows[i] != r:
                    continue  # left out by a PreFilterResult: never examined, its status is ABSENT
                at = (i - start) % m
            if at < processed:
                return True
            if remaining is None or remaining[r]:
                past += 1
        if not past or processed >= m:
            return False
        feasible = m if remaining is None else int(np.count_nonzero(remaining))
        return past == feasible - found

    def scores(self, candidates: np.ndarray) -> tuple[list[PluginScores], np.ndarray] | None:
        """The plugin scores and weighted totals over `candidates`, as the per-pod Score, NormalizeScore
        and weighting give them; None when a score is out of range (the pod's own cycle reports it)."""
        if self.out_of_range:
            return None
        k = len(candidates)
        totals = self.fixed[candidates] if self.fixed is not None else np.zeros(k, dtype=np.int64)
        out: list[PluginScores] = []
        uniform_total = 0  # the weighted scores that are the same on every candidate, added once at the end
        for i, c in enumerate(self.columns):
            if c.values is None:
                continue
            if not c.extensions:
                out.append(GatheredScores(c.plugin.name, c.weight, c.values, candidates))
                continue
            if c.const is not None:
                # Every node has the same raw score: NormalizeScore of that over k nodes, worked out once.
                hit = self.memo.get((i, k))
                if hit is None:
                    normalized = np.asarray(c.plugin.normalize(np.full(k, c.const, dtype=np.int64)), dtype=np.int64)
                    if _out_of_range(normalized):
                        return None
                    low = int(normalized.min()) if k else 0
                    uniform = low if k and low == int(normalized.max()) else None
                    hit = self.memo[(i, k)] = (normalized, uniform)
                normalized, uniform = hit
                if uniform is not None:
                    uniform_total += uniform * c.weight
                else:
                    totals += normalized * c.weight
            else:
                normalized = np.asarray(c.plugin.normalize(c.values[candidates]), dtype=np.int64)
                if _out_of_range(normalized):
                    return None
                totals += normalized * c.weight if c.weight != 1 else normalized
            out.append(GatheredScores(c.plugin.name, c.weight, c.values, candidates, normalized))
        if uniform_total:
            totals += uniform_total  # (integer sums: the order of the additions does not change them)
        return out, totals


def _patched(old: FilterResult | None, part: FilterResult, rows: np.ndarray, n: int) -> FilterResult:
    """`old` (over every node) with `part`'s verdict (over `rows`) written in: new arrays, never in place."""
    passed = np.ones(n, dtype=bool) if old is None else np.array(old.passed, dtype=bool)
    passed[rows] = part.passed
    before = dict(old.reasons) if old is not None else {}
    reasons = []
    for text, mask in part.reasons:
        base = before.pop(text, None)
        full = np.zeros(n, dtype=bool) if base is None else np.array(base, dtype=bool)
        full[rows] = mask
        reasons.append((text, full))
    reasons.extend(before.items())
    unresolvable_rows = None
    old_rows = old.unresolvable_rows if old is not None else None
    if old_rows is not None or part.unresolvable_rows is not None:
        unresolvable_rows = np.zeros(n, dtype=bool) if old_rows is None else np.array(old_rows, dtype=bool)
        unresolvable_rows[rows] = False if part.unresolvable_rows is None else part.unresolvable_rows
    unresolvable = (old.unresolvable if old is not None else frozenset()) | part.unresolvable
    return FilterResult(passed, reasons, unresolvable=unresolvable, unresolvable_rows=unresolvable_rows)


class _Unbatchable:
    """A signature whose cycle cannot be shared on this table (a PreFilter rejection, a plugin error)."""

    __slots__ = ("nodes", "epoch")

    def __init__(self, nodes):
        self.nodes, self.epoch = nodes, nodes.usage_epoch

    def current(self, nodes) -> bool:
        return nodes is self.nodes and nodes.usage_epoch == self.epoch


class OpportunisticBatch:
    """An Algorithm's batches, by (profile, signature), and how many pods they served."""

    def __init__(self) -> None:
        self.batches: OrderedDict[tuple, Batch | _Unbatchable] = OrderedDict()
        self.seen: OrderedDict[tuple, None] = OrderedDict()
        self.batched_pods = 0
        self._last: Batch | _Unbatchable | None = None  # the entry last put at the end of `batches`

    def lookup(self, profile, pod, nodes) -> Batch | None:
        """The batch for this pod's signature, made on the signature's second pod; None: a cycle of its own."""
        signature = pod_signature(profile, pod, nodes)
        if signature is None:
            return None
        key = (id(profile), signature)
        batch = self.batches.get(key)
        if batch is not None:
            if isinstance(batch, _Unbatchable):
                if batch.current(nodes):
                    return None
            elif batch.profile is profile and batch.current(nodes):
                if batch is not self._last:  # (already last: the usual case, one signature at a time)
                    self.batches.move_to_end(key)
                    self._last = batch
                return batch
            del self.batches[key]
        elif key not in self.seen:
            self.seen[key] = None
            if len(self.seen) > MAX_SEEN:
                self.seen.popitem(last=False)
            return None
        made = Batch.make(profile, pod, nodes, key)
        self.batches[key] = self._last = made if made is not None else _Unbatchable(nodes)
        if len(self.batches) > MAX_BATCHES:
            self.batches.popitem(last=False)
        return made

    def drop(self, batch: Batch) -> None:
        """Forget a batch a plugin's answer no longer fits (its pods run on their own until it is made again)."""
        if self.batches.get(batch.key) is batch:
            del self.batches[batch.key]
