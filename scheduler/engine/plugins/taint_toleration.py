"""TaintToleration: reject nodes with NoSchedule/NoExecute taints the pod does not tolerate, and
score nodes by how many PreferNoSchedule taints it does not tolerate (fewer is better).

As kube-scheduler's plugins/tainttoleration, over the NodeTable's distinct-taint matrix: each
distinct taint in the cluster is matched against the pod's tolerations once, then nodes are
judged by which of those taints they carry.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..framework import FilterResult, default_normalize_score
from ..nodes import NodeTable
from ..pods import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE, PodSpec, Taint, Toleration
from ..resources import MAX_NODE_SCORE

ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

TOLERATION_OP_EQUAL = "Equal"
TOLERATION_OP_EXISTS = "Exists"


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """As v1.Toleration.ToleratesTaint with the TaintTolerationComparisonOperators gate off (its default).

    Empty effect matches every effect; empty key matches every key; operator "" means Equal.
    Gt/Lt (alpha, gated) and unknown operators tolerate nothing.
    """
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", TOLERATION_OP_EQUAL):
        return toleration.value == taint.value
    return toleration.operator == TOLERATION_OP_EXISTS


def tolerations_tolerate(tolerations, taint: Taint) -> bool:
    """As TolerationsTolerateTaint: any toleration will do."""
    return any(tolerates(t, taint) for t in tolerations)


class TaintToleration:
    name: ClassVar[str] = "TaintToleration"
    usage_dependent: ClassVar[bool] = False  # the node's taints only

    def sign(self, pod: PodSpec, nodes: NodeTable):
        """The pod's signature element (KEP-5598): its tolerations."""
        return pod.tolerations

    def _untolerated_columns(self, tolerations, effects: tuple[str, ...], nodes: NodeTable) -> np.ndarray:
        """Indices of the cluster's distinct taints with one of `effects` that no toleration covers."""
        cols = [j for j, taint in enumerate(nodes.taints)
                if taint.effect in effects and not tolerations_tolerate(tolerations, taint)]
        return np.asarray(cols, dtype=np.int64)

    def filter(self, pod: PodSpec, nodes: NodeTable) -> FilterResult:
        # As upstream: only NoSchedule and NoExecute taints filter (DoNotScheduleTaintsFilterFunc).
        cols = self._untolerated_columns(pod.tolerations, (NO_SCHEDULE, NO_EXECUTE), nodes)
        if len(cols) == 0:
            return FilterResult.all_pass(nodes.n)
        failed = nodes.taint_matrix[:, cols].any(axis=1)
        # As upstream: UnschedulableAndUnresolvable, evicting pods removes no taint.
        return FilterResult.from_reasons(nodes.n, [(ERR_REASON_UNTOLERATED, failed)],
                                         unresolvable=frozenset((ERR_REASON_UNTOLERATED,)))

    def score(self, pod: PodSpec, nodes: NodeTable, rows: np.ndarray) -> np.ndarray:
        # As upstream PreScore (which never returns Skip): only tolerations whose effect is empty or
        # PreferNoSchedule can tolerate a PreferNoSchedule taint.
        rows = np.asarray(rows, dtype=np.int64)
        if not nodes.taints:
            return np.zeros(len(rows), dtype=np.int64)
        prefer = tuple(t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE))
        cols = self._untolerated_columns(prefer, (PREFER_NO_SCHEDULE,), nodes)
        if len(cols) == 0:
            return np.zeros(len(rows), dtype=np.int64)
        return nodes.taint_matrix[np.ix_(rows, cols)].sum(axis=1, dtype=np.int64)

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        # As upstream: fewer intolerable taints is better, so the scale is reversed.
        return default_normalize_score(MAX_NODE_SCORE, True, scores)
