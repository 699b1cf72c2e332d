"""A plain, per-node reference of DefaultPreemption (default_preemption.go, preemption.go): the
scheduling cycle's node statuses, then the dry run node by node in upstream's order, with plain
lists of pods and the per-node reference filters (node-local and static plugins), the nominated pods
counted as RunFilterPluginsWithNominatedPods counts them, and its own pickOneNodeForPreemption.

The property test checks the columnar evaluator against it; it shares no preemption code with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..cluster_objects import PodDisruptionBudget
from ..framework import PreFilterRejected
from ..labels import SelectorError, as_selector
from ..nodes import NodeSpec, NodeUsage
from ..pods import PodSpec
from . import filters as f
from . import resources as r

# The plugins whose every rejection is UnschedulableAndUnresolvable upstream.
_UNRESOLVABLE_PLUGINS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity")
_SUPPORTED = _UNRESOLVABLE_PLUGINS + ("NodePorts", "NodeResourcesFit")


@dataclass
class ReferencePreemption:
    potential: list[str] = field(default_factory=list)  # nodes whose status was Unschedulable, in node order
    # (node, victim names most important first, PDB violations), non-violating first, in dry-run order
    candidates: list[tuple[str, list[str], int]] = field(default_factory=list)
    statuses: dict[str, tuple[str, ...]] = field(default_factory=dict)  # reasons of examined non-candidates
    chosen: str | None = None
    victims: list[str] = field(default_factory=list)


def _filter_node(filters: Sequence[str], pod: PodSpec, node: NodeSpec, pods: Sequence[PodSpec]
                 ) -> tuple[str, list[str], bool] | None:
    """RunFilterPlugins on one node: None if the pod passes, else (plugin, reasons, unresolvable)."""
    usage = NodeUsage.of_pods(pods)
    for name in filters:
        if name == "NodeUnschedulable":
            reasons = f.node_unschedulable(pod, node)
        elif name == "NodeName":
            reasons = f.node_name(pod, node)
        elif name == "TaintToleration":
            reasons = f.taint_toleration_filter(pod, node)
        elif name == "NodeAffinity":
            reasons = f.node_affinity_filter(pod, node, None)
        elif name == "NodePorts":
            reasons = f.node_ports(pod, usage)
        elif name == "NodeResourcesFit":
            reasons = r.fit_filter(pod, node, usage, None)
        else:
            raise KeyError(f"no reference filter for plugin {name!r}")
        if reasons:
            if name in _UNRESOLVABLE_PLUGINS:
                unresolvable = True
            elif name == "NodeResourcesFit":
                # InsufficientResource.Unresolvable: the request is above the node's whole allocatable.
                unresolvable = any(
                    pod.requests.get(text[len("Insufficient "):], 0) > node.allocatable.get(text[len("Insufficient "):], 0)
                    for text in reasons if text.startswith("Insufficient "))
            else:
                unresolvable = False
            return name, reasons, unresolvable
    return None


def _filter_with_nominated(filters, pod: PodSpec, node: NodeSpec, pods: Sequence[PodSpec],
                           nominated: Sequence[PodSpec]):
    """RunFilterPluginsWithNominatedPods on one node: first with the nominated pods of priority >=
    the pod's added; if that passes and some were added, again without them."""
    counted = [p for p in nominated if p.priority >= pod.priority and p.key != pod.key]
    first = _filter_node(filters, pod, node, list(pods) + counted)
    if first is not None or not counted:
        return first
    return _filter_node(filters, pod, node, pods)


def _pdb_violating(sorted_pods: Sequence[PodSpec], pdbs: Sequence[PodDisruptionBudget]) -> list[bool]:
    allowed = {id(b): b.disruptions_allowed for b in pdbs}
    out = []
    for p in sorted_pods:
        violated = False
        if p.labels:
            for b in pdbs:
                if b.namespace != p.namespace:
                    continue
                try:
                    sel = as_selector(b.selector)
                except SelectorError:
                    continue
                if sel.empty() or not sel.matches(p.labels) or p.name in b.disrupted_pods:
                    continue
                allowed[id(b)] -= 1
                if allowed[id(b)] < 0:
                    violated = True
        out.append(violated)
    return out


def reference_preempt(nodes: Sequence[NodeSpec], pods_by_node: Sequence[Sequence[PodSpec]], pod: PodSpec,
                      filters: Sequence[str], pdbs: Sequence[PodDisruptionBudget],
                      nominated: Sequence[tuple[int, PodSpec]], offset_of, count_of, now: float) -> ReferencePreemption:
    """`offset_of(P)` and `count_of(P)` give the offset and candidate count for P potential nodes."""
    assert all(name in _SUPPORTED for name in filters)
    out = ReferencePreemption()
    nominated_on = [[p for i, p in nominated if i == k] for k in range(len(nodes))]
    # The scheduling cycle's statuses (the pod fits nowhere): PreFilter narrowing first.
    allowed = f.node_affinity_pre_filter(pod) if "NodeAffinity" in filters else None
    if isinstance(allowed, PreFilterRejected):
        allowed = set()
    potential = []
    for k, node in enumerate(nodes):
        if allowed is not None and node.name not in allowed:
            continue
        status = _filter_with_nominated(filters, pod, node, pods_by_node[k], nominated_on[k])
        assert status is not None, "the reference is for pods that fit nowhere"
        if not status[2]:
            potential.append(k)
    out.potential = [nodes[k].name for k in potential]
    if not potential:
        return out
    offset, count = offset_of(len(potential)), count_of(len(potential))

    def start(p: PodSpec) -> float:
        return now if p.start_time is None else p.start_time

    non_violating, violating = [], []
    for i in range(len(potential)):
        k = potential[(offset + i) % len(potential)]
        node, pods = nodes[k], list(pods_by_node[k])
        lower = [p for p in pods if p.priority < pod.priority]
        if not lower:
            out.statuses[node.name] = ("No preemption victims found for incoming pod",)
            continue
        staying = [p for p in pods if p.priority >= pod.priority]
        status = _filter_with_nominated(filters, pod, node, staying, nominated_on[k])
        if status is not None:
            out.statuses[node.name] = tuple(status[1])
            continue
        position = {p.key: j for j, p in enumerate(pods)}
        lower.sort(key=lambda p: (-p.priority, start(p), position[p.key]))
        flags = _pdb_violating(lower, pdbs)
        order = [p for p, v in zip(lower, flags) if v] + [p for p, v in zip(lower, flags) if not v]
        flag_of = {p.key: v for p, v in zip(lower, flags)}
        victims = []
        for p in order:
            if _filter_with_nominated(filters, pod, node, staying + [p], nominated_on[k]) is None:
                staying.append(p)
            else:
                victims.append(p)
        if not victims:
            out.statuses[node.name] = (f'expected at least one victim pod on node "{node.name}"',)
            continue
        if any(flags) and not all(flags):
            victims.sort(key=lambda p: (-p.priority, start(p), position[p.key]))
        n_viol = sum(1 for v in victims if flag_of[v.key])
        entry = (node.name, victims, n_viol)
        target = non_violating if n_viol == 0 else violating
        if len(target) < count:
            target.append(entry)
        if non_violating and len(non_violating) + len(violating) >= count:
            break
    found = non_violating + violating
    out.candidates = [(name, [v.name for v in vs], n) for name, vs, n in found]
    if not found:
        return out

    def key(entry):
        name, vs, n = entry
        top = max(v.priority for v in vs)
        return (-n, -vs[0].priority, -sum(v.priority + 2**31 for v in vs), -len(vs),
                min(start(v) for v in vs if v.priority == top))

    best = found[0]
    for entry in found[1:]:
        if key(entry) > key(best):
            best = entry
    out.chosen = best[0]
    out.victims = [v.name for v in best[1]]
    return out
