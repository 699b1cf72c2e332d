"""The nominator (upstream's backend/queue/nominator.go): which pending pods are nominated to which
node, so that the room preemption freed for them is not taken by a pod of lower priority.

A pod is nominated by its status.nominatedNodeName (ModeNoop) or by a PostFilter's result
(ModeOverride); it leaves the nominator when it is assumed, bound or deleted.
"""

from __future__ import annotations

import numpy as np

from .nodes import NodeTable
from .pods import PodSpec
from .resources import CPU, MEMORY


class Counted(list):
    """counted_for's (row, pod) pairs, with their usage as columns (`usage`: rows, {resource: requests},
    {cpu, memory: non-zero requests}) so the filters can count them on their nodes without a loop over them."""

    usage: tuple | None = None


class Nominator:
    def __init__(self) -> None:
        self._node_of: dict[str, str] = {}  # pod key -> node name
        self._pods: dict[str, dict[str, PodSpec]] = {}  # node name -> {pod key: pod}, in nomination order
        self._cols = None  # the nominated pods as columns, built when asked after a change

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
        self._cols = None

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
        self._cols = None
        on_node = self._pods[node]
        del on_node[key]
        if not on_node:
            del self._pods[node]

    def node_of(self, key: str) -> str | None:
        return self._node_of.get(key)

    def pods_for_node(self, node: str) -> list[PodSpec]:
        """As NominatedPodsForNode."""
        return list(self._pods.get(node, {}).values())

    def _columns(self):
        """The nominated pods in counted_for's order, with their node names, priorities and requests as arrays:
        built once per change of the nominator, not once per pod scheduled."""
        if self._cols is None:
            pods = [p for on_node in self._pods.values() for p in on_node.values()]
            n = len(pods)
            names = [self._node_of[p.key] for p in pods]
            priority = np.fromiter((p.priority for p in pods), np.int64, n)
            resources = sorted({r for p in pods for r in p.requests})
            requests = {r: np.fromiter((p.requests.get(r, 0) for p in pods), np.int64, n) for r in resources}
            nonzero = {r: np.fromiter((p.nonzero_requests[r] for p in pods), np.int64, n) for r in (CPU, MEMORY)}
            position = {p.key: i for i, p in enumerate(pods)}
            self._cols = (pods, names, priority, requests, nonzero, position)
        return self._cols

    def counted_for(self, pod: PodSpec, nodes: NodeTable) -> Counted:
        """(row, pod) of the nominated pods the filters count for `pod`, as addGeneratedNominatedPods:
        those of priority >= the pod's (it must yield to them; it may take room freed for pods of lower
        priority), not the pod itself, on nodes of the table."""
        out = Counted()
        if not self._node_of:
            return out
        pods, names, priority, requests, nonzero, position = self._columns()
        index = nodes.index
        rows = np.fromiter((index.get(name, -1) for name in names), np.int64, len(names))
        keep = (priority >= pod.priority) & (rows >= 0)
        own = position.get(pod.key)
        if own is not None:
            keep[own] = False
        chosen = np.flatnonzero(keep)
        out.extend((int(rows[i]), pods[i]) for i in chosen)
        out.usage = (rows[chosen], {r: v[chosen] for r, v in requests.items()}, {r: v[chosen] for r, v in nonzero.items()})
        return out
