"""NodeUnschedulable: cordoned nodes (spec.unschedulable) take no pods, except pods that tolerate
the node.kubernetes.io/unschedulable:NoSchedule taint. As kube-scheduler's plugins/nodeunschedulable."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..framework import FilterResult
from ..nodes import NodeTable
from ..pods import NO_SCHEDULE, PodSpec, Taint
from .taint_toleration import tolerations_tolerate

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"

_UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, value="", effect=NO_SCHEDULE)


def tolerates_unschedulable(pod: PodSpec) -> bool:
    """Whether the pod tolerates the unschedulable taint (and so spec.unschedulable)."""
    return tolerations_tolerate(pod.tolerations, _UNSCHEDULABLE_TAINT)


class NodeUnschedulable:
    name: ClassVar[str] = "NodeUnschedulable"
    usage_dependent: ClassVar[bool] = False  # reads the node's spec only

    def sign(self, pod: PodSpec, nodes: NodeTable):
        """The pod's signature element (KEP-5598): its tolerations."""
        return pod.tolerations

    def filter(self, pod: PodSpec, nodes: NodeTable) -> FilterResult:
        # As upstream: a pod tolerating the unschedulable taint also tolerates spec.unschedulable.
        if not np.count_nonzero(nodes.unschedulable) or tolerates_unschedulable(pod):
            return FilterResult.all_pass(nodes.n)
        # As upstream: UnschedulableAndUnresolvable, evicting pods does not uncordon the node.
        return FilterResult.from_reasons(nodes.n, [(ERR_REASON_UNSCHEDULABLE, nodes.unschedulable.copy())],
                                         unresolvable=frozenset((ERR_REASON_UNSCHEDULABLE,)))
