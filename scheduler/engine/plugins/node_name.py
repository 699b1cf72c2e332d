"""NodeName: a pod with spec.nodeName set may only go to that node. As kube-scheduler's plugins/nodename."""

from __future__ import annotations

from typing import ClassVar

from ..framework import FilterResult
from ..nodes import NodeTable
from ..pods import PodSpec

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name: ClassVar[str] = "NodeName"

    def pre_filter(self, pod: PodSpec, nodes: NodeTable) -> set[str] | None:
        # As upstream PreFilter: narrow to the named node (a PreFilterResult), else all nodes.
        if pod.node_name:
            return {pod.node_name}
        return None

    def filter(self, pod: PodSpec, nodes: NodeTable) -> FilterResult:
        if not pod.node_name:
            return FilterResult.all_pass(nodes.n)
        return FilterResult.from_reasons(nodes.n, [(ERR_REASON, nodes.name_array != pod.node_name)])
