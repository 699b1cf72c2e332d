"""Choosing among preemption candidates (upstream's pickOneNodeForPreemption) and the ordering of
pods by importance (util.MoreImportantPod), shared by the columnar evaluator and the reference."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

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


def pick_index(num_pdb_violations: np.ndarray, top_priority: np.ndarray, priority_sum: np.ndarray,
               num_victims: np.ndarray, earliest_top_start: np.ndarray) -> int:
    """As pickOneNodeForPreemption over candidates given as columns (in the order the dry run found
    them): each rule keeps the candidates with the best score and the next breaks a tie: fewest PDB
    violations, lowest highest-victim priority, smallest sum of victim priorities (each shifted by 2^31
    so negative priorities still add up: `priority_sum` is that sum), fewest victims, latest earliest
    start among the highest-priority victims; then the first one left. Upstream walks a Go map there
    (an arbitrary order); ours is the dry run's order. Returns the index of the chosen candidate."""
    position = np.arange(len(num_pdb_violations))
    # np.lexsort sorts by the last key first, ascending: the best candidate comes first.
    order = np.lexsort((position, -earliest_top_start, num_victims, priority_sum, top_priority, num_pdb_violations))
    return int(order[0])


def candidate_scores(victims: Sequence[PodSpec], now: float) -> tuple[int, int, int, float]:
    """(highest priority, shifted priority sum, count, earliest start of the highest-priority ones)."""
    top = max(v.priority for v in victims)
    return (top, sum(v.priority + MAX_INT32 + 1 for v in victims), len(victims),
            min(start_time(v, now) for v in victims if v.priority == top))


def pick_one_node_for_preemption(candidates: Sequence[Candidate], now: float) -> Candidate | None:
    """pick_index over Candidate objects (the node-by-node dry run, tests)."""
    if not candidates:
        return None
    scores = [candidate_scores(c.victims, now) for c in candidates]
    return candidates[pick_index(
        np.asarray([c.num_pdb_violations for c in candidates], dtype=np.int64),
        np.asarray([s[0] for s in scores], dtype=np.int64),
        np.asarray([s[1] for s in scores], dtype=np.int64),
        np.asarray([s[2] for s in scores], dtype=np.int64),
        np.asarray([s[3] for s in scores], dtype=np.float64))]
