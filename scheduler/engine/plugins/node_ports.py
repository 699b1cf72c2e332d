"""NodePorts: a pod's host ports must be free on the node. As kube-scheduler's plugins/nodeports,
with HostPortInfo.CheckConflict's rules over the NodeTable's sparse port index."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..framework import FilterResult
from ..nodes import NodeTable
from ..pods import PodSpec

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"
PROTOCOL_TCP = "TCP"


def sanitize(ip: str, protocol: str) -> tuple[str, str]:
    """As HostPortInfo.sanitize: empty IP binds all addresses, empty protocol is TCP."""
    return ip or DEFAULT_BIND_ALL_HOST_IP, protocol or PROTOCOL_TCP


class NodePorts:
    name: ClassVar[str] = "NodePorts"
    usage_dependent: ClassVar[bool] = True  # the host ports in use on the node

    def sign(self, pod: PodSpec, nodes: NodeTable):
        """The pod's signature element (KEP-5598): its host ports (schedutil.GetHostPorts)."""
        return pod.host_ports

    def filter(self, pod: PodSpec, nodes: NodeTable) -> FilterResult:
        # As upstream PreFilter: no host ports means Skip (every node passes).
        wanted = [p for p in pod.host_ports if p.port > 0]
        if not wanted:
            return FilterResult.all_pass(nodes.n)
        return FilterResult.from_reasons(nodes.n, [(ERR_REASON, self._conflicts(wanted, nodes))])

    def passes_everywhere(self, pod: PodSpec, nodes: NodeTable) -> bool:
        """Whether Filter passes on every node without looking at any: a pod asking for no host port."""
        return not any(p.port > 0 for p in pod.host_ports)

    def filter_rows(self, pod: PodSpec, nodes: NodeTable, rows: np.ndarray) -> FilterResult:
        """Filter's verdict on `rows` only, every reason kept (for the signature batches)."""
        wanted = [p for p in pod.host_ports if p.port > 0]
        conflict = self._conflicts(wanted, nodes)[rows] if wanted else np.zeros(len(rows), dtype=bool)
        return FilterResult(~conflict, [(ERR_REASON, conflict)])

    def _conflicts(self, wanted, nodes: NodeTable) -> np.ndarray:
        conflict = np.zeros(nodes.n, dtype=bool)
        for want in wanted:
            ip, protocol = sanitize(want.ip, want.protocol)
            # The index is sparse (few nodes use any given host port), so walk the rows using it.
            for (used_protocol, used_port), by_row in nodes.ports.items():
                if used_port != want.port or sanitize("", used_protocol)[1] != protocol:
                    continue
                hit = [row for row, ips in by_row.items() if ips and _conflicts(ip, ips)]
                conflict[hit] = True
        return conflict


def _conflicts(ip: str, used_ips: list[str]) -> bool:
    """As HostPortInfo.CheckConflict for one (protocol, port) on one node."""
    used = {u or DEFAULT_BIND_ALL_HOST_IP for u in used_ips}
    if ip == DEFAULT_BIND_ALL_HOST_IP:
        return True  # 0.0.0.0 conflicts with the pair on any address
    return DEFAULT_BIND_ALL_HOST_IP in used or ip in used
