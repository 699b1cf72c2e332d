"""Choosing among preemption candidates (upstream's pickOneNodeForPreemption) and the ordering of
pods by importance (util.MoreImportantPod), shared by the columnar evaluator and the reference."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..pods import PodSpec

MAX_INT32 = 2**31 - 1


def start_time(pod: PodSpec, now: float) -> float:
    """As util.GetPodStartTime: status.startTime, or now for a pod that has not started (assumed,
    or bound and not yet running). One `now` per preemption cycle keeps the order stable."""
    return now if pod.start_time is None else pod.start_time


def importance_key(pod: PodSpec, now: float) -> tuple[int, float]:
    """Sorting by this key puts the more important pod first, as MoreImportantPod: higher priority,
    then the one that started earlier (it has run longer). Python's sort is stable, so equally
    important pods keep the node's order (upstream's sort.Slice leaves that order unspecified)."""
    return -pod.priority, start_time(pod, now)


def more_important_pod(a: PodSpec, b: PodSpec, now: float) -> bool:
    """As util.MoreImportantPod."""
    if a.priority != b.priority:
        return a.priority > b.priority
    return start_time(a, now) < start_time(b, now)


def earliest_start_of_highest_priority(victims: Sequence[PodSpec], now: float) -> float | None:
    """As util.GetEarliestPodStartTime: among the victims of the highest priority, the earliest start."""
    if not victims:
        return None
    top = max(v.priority for v in victims)
    return min(start_time(v, now) for v in victims if v.priority == top)


@dataclass
class Candidate:
    """A node where evicting `victims` (most important first) lets the pod in, and how many of them
    an eviction would take past their PodDisruptionBudget."""

    node: str
    row: int
    victims: tuple[PodSpec, ...]
    num_pdb_violations: int

    def score(self, now: float) -> tuple:
        """pickOneNodeForPreemption's scores in its order, each the higher the better: fewest PDB
        violations, lowest highest-victim priority (victims[0]: they are sorted), smallest sum of
        victim priorities (each shifted by 2^31 so negative priorities still add up), fewest victims,
        latest earliest start among the highest-priority victims."""
        victims = self.victims
        return (-self.num_pdb_violations, -victims[0].priority,
                -sum(v.priority + MAX_INT32 + 1 for v in victims), -len(victims),
                earliest_start_of_highest_priority(victims, now))


def pick_one_node_for_preemption(candidates: Sequence[Candidate], now: float) -> Candidate | None:
    """As pickOneNodeForPreemption: each rule keeps the candidates with the best score and the next
    breaks a tie, which is comparing the scores as tuples; then the first one left. Upstream walks a
    Go map there (an arbitrary order); ours is the order the dry run found them in."""
    best, best_score = None, None
    for c in candidates:
        s = c.score(now)
        if best_score is None or s > best_score:
            best, best_score = c, s
    return best
