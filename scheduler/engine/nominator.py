"""The nominator (upstream's backend/queue/nominator.go): which pending pods are nominated to which
node, so that the room preemption freed for them is not taken by a pod of lower priority.

A pod is nominated by its status.nominatedNodeName (ModeNoop) or by a PostFilter's result
(ModeOverride); it leaves the nominator when it is assumed, bound or deleted.
"""

from __future__ import annotations

from .nodes import NodeTable
from .pods import PodSpec


class Nominator:
    def __init__(self) -> None:
        self._node_of: dict[str, str] = {}  # pod key -> node name
        self._pods: dict[str, dict[str, PodSpec]] = {}  # node name -> {pod key: pod}, in nomination order

    def __len__(self) -> int:
        return len(self._node_of)

    def add(self, pod: PodSpec, nominated_node: str | None = None) -> None:
        """As AddNominatedPod: `nominated_node` overrides (ModeOverride; "" clears the nomination),
        None keeps the pod's own status.nominatedNodeName (ModeNoop). A pod already bound is not
        nominated, and a pod is never kept twice."""
        self.delete(pod)
        node = pod.nominated_node_name if nominated_node is None else nominated_node
        if not node or pod.node_name:
            return
        self._node_of[pod.key] = node
        self._pods.setdefault(node, {})[pod.key] = pod

    def update(self, old: PodSpec, new: PodSpec) -> None:
        """As UpdateNominatedPod: an update that carries no nomination on either side (an informer
        event racing the nomination made in memory) keeps the node the pod was nominated to; any
        other update takes the new pod's own nomination. The stored pod is always the new one."""
        keep = None
        if not old.nominated_node_name and not new.nominated_node_name:
            keep = self._node_of.get(old.key)
        self.delete(old)
        self.add(new, keep)

    def delete(self, pod: PodSpec | str) -> None:
        """As DeleteNominatedPodIfExists (the pod was assumed, bound or deleted)."""
        key = pod if isinstance(pod, str) else pod.key
        node = self._node_of.pop(key, None)
        if node is None:
            return
        on_node = self._pods[node]
        del on_node[key]
        if not on_node:
            del self._pods[node]

    def node_of(self, key: str) -> str | None:
        return self._node_of.get(key)

    def pods_for_node(self, node: str) -> list[PodSpec]:
        """As NominatedPodsForNode."""
        return list(self._pods.get(node, {}).values())

    def counted_for(self, pod: PodSpec, nodes: NodeTable) -> list[tuple[int, PodSpec]]:
        """(row, pod) of the nominated pods the filters count for `pod`, as addGeneratedNominatedPods:
        those of priority >= the pod's (it must yield to them; it may take room freed for pods of lower
        priority), not the pod itself, on nodes of the table."""
        if not self._node_of:
            return []
        out = []
        for node, pods in self._pods.items():
            row = nodes.index.get(node)
            if row is None:
                continue
            for key, other in pods.items():
                if other.priority >= pod.priority and key != pod.key:
                    out.append((row, other))
        return out
