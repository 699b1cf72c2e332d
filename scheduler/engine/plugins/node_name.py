"""NodeName: a pod with spec.nodeName set may only go to that node. As kube-scheduler's plugins/nodename.

Upstream's NodeName has a Filter and no PreFilter (a PreFilter narrowing to the named node was added
and taken out again): every other node is rejected by the Filter with ERR_REASON, so the
FailedScheduling message counts them under that reason.
"""

from __future__ import annotations

from typing import ClassVar

from ..framework import FilterResult
from ..nodes import NodeTable
from ..pods import PodSpec

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name: ClassVar[str] = "NodeName"
    usage_dependent: ClassVar[bool] = False

    def sign(self, pod: PodSpec, nodes: NodeTable):
        """The pod's signature element (KEP-5598): spec.nodeName."""
        return pod.node_name

    def filter(self, pod: PodSpec, nodes: NodeTable) -> FilterResult:
        if not pod.node_name:
            return FilterResult.all_pass(nodes.n)
        # As upstream: UnschedulableAndUnresolvable.
        return FilterResult.from_reasons(nodes.n, [(ERR_REASON, nodes.name_array != pod.node_name)],
                                         unresolvable=frozenset((ERR_REASON,)))
