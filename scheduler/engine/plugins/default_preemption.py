"""DefaultPreemption (PostFilter): when a pod fits nowhere, nominate the node where evicting the
fewest, least important pods lets it in, and name those victims (upstream's
framework/plugins/defaultpreemption). The evaluator in engine/preemption does the work; this module
holds the plugin's arguments, their validation, and the candidate count with its random offset.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from ..framework import Decision, Handle, PostFilterResult
from ..nodes import NodeTable
from ..pods import PodSpec
from ..preemption.evaluator import Evaluator

NAME = "DefaultPreemption"

# As kubescheduler.config.k8s.io/v1 SetDefaults_DefaultPreemptionArgs.
DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100

PREEMPTION_PREFIX = "preemption: "


@dataclass(frozen=True)
class DefaultPreemptionArgs:
    """DefaultPreemptionArgs, defaulted: dry-run at least this share of the potential nodes, and at
    least this many (when there are that many)."""

    min_candidate_nodes_percentage: int = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
    min_candidate_nodes_absolute: int = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE


def validate_default_preemption_args(args: DefaultPreemptionArgs, path: str = "") -> list[tuple[str, str]]:
    """As ValidateDefaultPreemptionArgs: (field path, detail) pairs, in upstream's order."""
    prefix = f"{path}." if path else ""
    pct_path, abs_path = prefix + "minCandidateNodesPercentage", prefix + "minCandidateNodesAbsolute"
    pct, absolute = args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute
    problems = []
    if pct < 0 or pct > 100:
        problems.append((pct_path, f"Invalid value: {pct}: not in valid range [0, 100]"))
    if absolute < 0:
        problems.append((abs_path, f"Invalid value: {absolute}: not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        problems.append((pct_path, f"Invalid value: {pct}: cannot be zero at the same time as minCandidateNodesAbsolute"))
        problems.append((abs_path, f"Invalid value: {absolute}: cannot be zero at the same time as minCandidateNodesPercentage"))
    return problems


def aggregate_error(problems: list[tuple[str, str]]) -> str:
    """As field.ErrorList.ToAggregate().Error(): "path: detail", several in brackets."""
    texts = [f"{path}: {detail}" for path, detail in problems]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


class DefaultPreemption:
    name: ClassVar[str] = NAME

    def __init__(self, args: DefaultPreemptionArgs | None = None, *, seed: int | None = None,
                 clock: Callable[[], float] = time.time):
        self.args = args or DefaultPreemptionArgs()
        problems = validate_default_preemption_args(self.args)
        if problems:
            raise ValueError(aggregate_error(problems))
        # Upstream's getOffsetRand (rand.Int31n), seedable so a test sees one order.
        self.rng = random.Random(seed)
        self.evaluator = Evaluator(self.get_offset_and_num_candidates, clock)

    def calculate_num_candidates(self, num_nodes: int) -> int:
        """As calculateNumCandidates: the percentage of the potential nodes, at least the absolute
        number, at most all of them."""
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        if n < self.args.min_candidate_nodes_absolute:
            n = self.args.min_candidate_nodes_absolute
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """As GetOffsetAndNumCandidates: a random start among the potential nodes (so preemption does
        not always hit the first ones) and how many candidates to find."""
        return self.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def post_filter(self, pod: PodSpec, nodes: NodeTable, decision: Decision, handle: Handle) -> PostFilterResult:
        result = self.evaluator.preempt(pod, nodes, decision, handle)
        # As DefaultPreemption.PostFilter: a message gets the "preemption: " prefix.
        if result.message:
            result.message = PREEMPTION_PREFIX + result.message
        return result
