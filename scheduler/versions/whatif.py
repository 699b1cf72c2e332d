"""What-if: past decisions re-ranked under other score weights, from what the attempts stored.

Per-plugin normalized scores do not depend on the weights, so re-weighting the stored scores of
the same candidates is exact: new total = Σ normalized × new weight, then the best total wins (a
tie that still includes the original node counts as "same", as kube-scheduler would pick among
the tied nodes at random). What the stored data cannot answer is said, never guessed:

- an attempt that kept only its top candidates (Attempt.candidates) is re-ranked among those;
  a node outside them might have won. With SCHEDBOARD_TRACE=all (Attempt.trace["scores"]) every
  feasible node's scores are kept and the answer is exact;
- a plugin the target scores with but the attempt's profile did not has no stored score: that
  attempt is not answered (a plugin the profile had but that skipped the pod at PreScore scores
  0 under any weight, and is answered);
- changed plugin args (a scoring strategy, resources, addedAffinity) or filters change raw scores
  or feasibility, which re-weighting cannot know: such attempts are answered on the stored scores
  and flagged.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Iterable

from ..engine.config import ProfileConfig, SchedulerConfig
from ..engine.explain import trace_scores

DEFAULT_WINDOW = 1000
SAME, CHANGED, UNKNOWN = "same", "changed", "unknown"


@dataclass(frozen=True)
class StoredAttempt:
    """The parts of an Attempt row the what-if reads (no Django here, so it is tested on plain data)."""

    id: int
    pod: str  # namespace/name
    node_name: str
    profile_name: str
    profile_version: int
    candidates: list
    trace: dict
    feasible_nodes: int

    # What a what-if reads of a row, for .values_list(*VALUES): of the trace only its scores (the
    # rest of a full trace, filter verdicts and all, is never fetched).
    VALUES = ("id", "namespace", "pod_name", "node_name", "profile_name", "profile_version", "candidates",
              "trace__scores", "feasible_nodes")

    @classmethod
    def from_values(cls, values: tuple) -> StoredAttempt:
        id_, namespace, pod_name, node_name, profile_name, profile_version, candidates, scores, feasible = values
        return cls(id=id_, pod=f"{namespace}/{pod_name}", node_name=node_name, profile_name=profile_name,
                   profile_version=profile_version, candidates=candidates or [],
                   trace={"scores": scores} if scores else {}, feasible_nodes=feasible)

    def without_scores(self) -> StoredAttempt:
        """The same attempt without its stored candidates and trace (what a what-if summary keeps)."""
        return replace(self, candidates=[], trace={})

    @classmethod
    def from_row(cls, row) -> StoredAttempt:
        return cls(id=row.id, pod=f"{row.namespace}/{row.pod_name}", node_name=row.node_name,
                   profile_name=row.profile_name, profile_version=row.profile_version,
                   candidates=row.candidates or [], trace=row.trace or {}, feasible_nodes=row.feasible_nodes)


@dataclass(frozen=True)
class Target:
    """What to re-score with: a saved version's configuration, or draft weights for one profile on top of one."""

    label: str
    config: SchedulerConfig
    draft_weights: dict[str, dict[str, int]] = field(default_factory=dict)  # profile -> plugin -> weight

    def weights(self, profile_name: str) -> dict[str, int] | None:
        if profile_name in self.draft_weights:
            return dict(self.draft_weights[profile_name])
        profile = self.config.profile(profile_name)
        return None if profile is None else dict(profile.scores)

    def profile(self, profile_name: str) -> ProfileConfig | None:
        return self.config.profile(profile_name)


@dataclass
class CandidateScore:
    node: str
    old_total: int | None
    new_total: int | None
    plugins: dict[str, dict]  # plugin -> {normalized, old_weight, new_weight, old_weighted, new_weighted}

    @property
    def delta(self) -> int | None:
        if self.old_total is None or self.new_total is None:
            return None
        return self.new_total - self.old_total


@dataclass
class Rescore:
    """One attempt re-scored: every stored candidate's old and new totals, and the verdict."""

    attempt: StoredAttempt
    verdict: str  # same | changed | unknown
    candidates: list[CandidateScore] = field(default_factory=list)
    new_nodes: list[str] = field(default_factory=list)  # the best under the target (several when tied)
    exact: bool = False  # every feasible node's scores were stored
    single: bool = False  # one feasible node: not scored, and no weight can move the pod
    notes: list[str] = field(default_factory=list)  # what limits the answer

    @property
    def new_node(self) -> str | None:
        return self.new_nodes[0] if self.new_nodes else None


def stored_scores(attempt: StoredAttempt) -> tuple[dict[str, dict], bool]:
    """(node -> {"plugins", "total"}, exact): the full trace when kept, else the top candidates."""
    traced = trace_scores(attempt.trace or {})
    if traced:
        return traced, True
    rows = {c["node"]: {"plugins": c.get("plugins") or {}, "total": c.get("total")} for c in attempt.candidates}
    return rows, len(rows) >= attempt.feasible_nodes


def _args_differ(old: ProfileConfig | None, new: ProfileConfig | None, plugins: Iterable[str]) -> list[str]:
    if old is None or new is None:
        return []
    return [p for p in plugins if old.args_for(p) != new.args_for(p)]


def rescore(attempt: StoredAttempt, target: Target, *, ran_with: ProfileConfig | None = None) -> Rescore:
    """Re-weight one attempt's stored candidates with the target's weights for its profile.

    `ran_with`: the profile the attempt actually ran (from its version), to flag changed args and filters.
    """
    weights = target.weights(attempt.profile_name)
    if weights is None:
        return Rescore(attempt, UNKNOWN, notes=[f"{target.label} has no profile {attempt.profile_name!r}"])
    scores, exact = stored_scores(attempt)
    if not scores:
        return Rescore(attempt, UNKNOWN, notes=["no candidate was stored (the pod did not fit any node)"])
    result = Rescore(attempt, UNKNOWN, exact=exact)
    if len(scores) == 1 and not next(iter(scores.values()))["plugins"]:
        # One feasible node: kube-scheduler does not score, and no weight can move the pod.
        node = next(iter(scores))
        result.candidates = [CandidateScore(node, None, None, {})]
        result.new_nodes, result.verdict, result.exact, result.single = [node], SAME, True, True
        return result
    stored_plugins = set().union(*(set(s["plugins"]) for s in scores.values()))
    # A plugin the pod's profile scored with but that stored nothing skipped this pod at PreScore
    # (as upstream: e.g. NodeAffinity without preferred terms), and skips it under any weight.
    skipped = set(dict(ran_with.scores)) if ran_with is not None else set()
    missing = sorted(p for p in weights if p not in stored_plugins and p not in skipped)
    if missing:
        result.notes.append(f"no stored scores for {', '.join(missing)} (not scored when the pod was scheduled): "
                            "cannot re-rank")
        return result
    for node, s in scores.items():
        plugins = {}
        for p, entry in s["plugins"].items():
            new_w = weights.get(p)
            plugins[p] = {"normalized": entry["normalized"], "old_weight": entry["weight"], "new_weight": new_w,
                          "old_weighted": entry["normalized"] * entry["weight"],
                          "new_weighted": None if new_w is None else entry["normalized"] * new_w}
        new_total = sum(v["new_weighted"] for v in plugins.values() if v["new_weighted"] is not None)
        result.candidates.append(CandidateScore(node, s["total"], new_total, plugins))
    best = max(c.new_total for c in result.candidates)
    result.new_nodes = sorted(c.node for c in result.candidates if c.new_total == best)
    result.candidates.sort(key=lambda c: (-c.new_total, c.node))
    result.verdict = SAME if attempt.node_name in result.new_nodes else CHANGED
    if attempt.node_name in result.new_nodes and len(result.new_nodes) > 1:
        result.new_nodes = [attempt.node_name] + [n for n in result.new_nodes if n != attempt.node_name]
    dropped = sorted(p for p in stored_plugins if p not in weights)
    if dropped:
        result.notes.append(f"{', '.join(dropped)} not scored by the target: left out of the new totals")
    if not exact:
        result.notes.append(f"only the top {len(scores)} of {attempt.feasible_nodes} feasible nodes were stored: "
                            "a node outside them might win")
    target_profile = target.profile(attempt.profile_name)
    changed_args = _args_differ(ran_with, target_profile, sorted(stored_plugins & set(weights)))
    if changed_args:
        result.notes.append(f"args of {', '.join(changed_args)} differ from the ones the pod was scored with: "
                            "raw scores would differ, these totals use the stored ones")
    if ran_with is not None and target_profile is not None and ran_with.filters != target_profile.filters:
        result.notes.append("the target's filters differ: the feasible nodes might differ")
    return result


@dataclass
class WhatIf:
    """A window of attempts re-scored under one target."""

    target: Target
    results: list[Rescore]

    @property
    def answered(self) -> list[Rescore]:
        return [r for r in self.results if r.verdict != UNKNOWN]

    @property
    def changed(self) -> list[Rescore]:
        return [r for r in self.results if r.verdict == CHANGED]

    @property
    def unknown(self) -> list[Rescore]:
        return [r for r in self.results if r.verdict == UNKNOWN]

    @property
    def share_changed(self) -> float | None:
        answered = len(self.answered)
        return None if answered == 0 else len(self.changed) / answered

    @property
    def exact_count(self) -> int:
        return sum(r.exact for r in self.answered)

    def node_moves(self) -> list[dict]:
        """Per node: pods it would gain and lose, largest net change first.

        A pod whose best nodes tie (without the one it was placed on) moves to one of them, and
        kube-scheduler picks among tied nodes at random: each of the N gains 1/N of it (a Fraction),
        and `tied` counts the pods a node shares that way. No node is credited with the whole pod.
        """
        gain: Counter = Counter()
        tied: Counter = Counter()
        lose = Counter(r.attempt.node_name for r in self.changed)
        for r in self.changed:
            share = Fraction(1, len(r.new_nodes))
            for n in r.new_nodes:
                gain[n] += share
                if len(r.new_nodes) > 1:
                    tied[n] += 1
        nodes = set(gain) | set(lose)
        rows = [{"node": n, "gain": gain[n], "lose": lose[n], "net": gain[n] - lose[n], "tied": tied[n]} for n in nodes]
        return sorted(rows, key=lambda r: (-abs(r["net"]), r["node"]))

    @property
    def changed_to_a_tie(self) -> int:
        """Changed decisions whose new best is a tie of several nodes (none of them the original)."""
        return sum(len(r.new_nodes) > 1 for r in self.changed)

    def unknown_reasons(self) -> list[tuple[str, int]]:
        return Counter(r.notes[0] if r.notes else "unknown" for r in self.unknown).most_common()

    def caveats(self) -> list[tuple[str, int]]:
        """Notes on answered attempts (top-k only, changed args...), with how many attempts each concerns."""
        counts: Counter = Counter()
        for r in self.answered:
            for note in r.notes:
                counts[_note_kind(note)] += 1
        return counts.most_common()


def _note_kind(note: str) -> str:
    # The per-attempt numbers ("top 10 of 37") vary; the page lists the kind of caveat once.
    if note.startswith("only the top "):
        return "only the top candidates were stored: a node outside them might win"
    return note


def what_if(attempts: Iterable[StoredAttempt], target: Target, *, ran_with=None, keep_scores: bool = True) -> WhatIf:
    """Re-score every attempt; `ran_with(version, profile_name)` gives the profile each attempt ran.

    `attempts` is consumed one at a time, so it can stream from the database. With keep_scores
    False each result drops the attempt's stored scores and the per-candidate table once it is
    re-scored (the summary and the changed list need neither), so memory does not grow with
    how much each attempt stored (SCHEDBOARD_TRACE=all keeps every feasible node's scores).
    """
    results = []
    for a in attempts:
        profile = ran_with(a.profile_version, a.profile_name) if ran_with else None
        r = rescore(a, target, ran_with=profile)
        if not keep_scores:
            r.attempt, r.candidates = a.without_scores(), []
        results.append(r)
    return WhatIf(target, results)
