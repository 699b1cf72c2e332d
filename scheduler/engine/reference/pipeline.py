"""A plain, per-node reference of kube-scheduler's schedulePod for one pod (schedule_one.go and
framework/runtime/framework.go), built only on the per-node reference plugins and plain lists.

It evaluates every node (as `Algorithm.schedule(..., all_nodes=True)`): the tests check the
columnar engine against it, and the benchmark times it on the same work.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..config import ProfileConfig
from ..framework import PreFilterRejected
from ..nodes import NodeSpec, NodeUsage
from ..pods import PodSpec
from ..resources import MAX_NODE_SCORE, MIN_NODE_SCORE
from ..cluster_objects import ClusterObjects
from . import filters as f
from . import resources as r
from . import topology as t


# As framework/types.go.
NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"

# The plugins with a PreFilter that can return a PreFilterResult (narrow the nodes). Upstream's
# NodeName has none: its Filter alone rejects the other nodes.
_NARROWING = ("NodeAffinity",)


@dataclass
class ReferenceResult:
    pod_key: str
    num_all_nodes: int
    # node -> [{"plugin", "reasons"}] (explain's shape): each rejected node under its first rejecting plugin.
    filtered: dict[str, list[dict]] = field(default_factory=dict)
    feasible: list[str] = field(default_factory=list)  # in node order
    # node -> {"plugins": {name: {raw, normalized, weight, weighted}}, "total"}; empty when < 2 feasible.
    scores: dict[str, dict] = field(default_factory=dict)
    top: set[str] = field(default_factory=set)  # the nodes selectHost may pick
    message: str | None = None  # the FitError message when nothing is feasible
    reason_counts: dict[str, int] = field(default_factory=dict)


# ---- per-plugin dispatch ---------------------------------------------------------------------


def _filter(name: str, pod: PodSpec, node: NodeSpec, usage: NodeUsage, args) -> list[str]:
    if name == "NodeUnschedulable":
        return f.node_unschedulable(pod, node)
    if name == "NodeName":
        return f.node_name(pod, node)
    if name == "TaintToleration":
        return f.taint_toleration_filter(pod, node)
    if name == "NodeAffinity":
        return f.node_affinity_filter(pod, node, args)
    if name == "NodePorts":
        return f.node_ports(pod, usage)
    if name == "NodeResourcesFit":
        return r.fit_filter(pod, node, usage, args)
    raise KeyError(f"no reference filter for plugin {name!r}")


def _image_scores(pod: PodSpec, nodes: Sequence[NodeSpec], feasible: Sequence[int]) -> list[int]:
    """ImageLocality over the feasible nodes: reference/resources.image_locality_score, with the
    cluster's image states built once per pod instead of once per node."""
    states = r._image_states(nodes)
    total = len(nodes)
    containers = tuple(pod.init_containers) + tuple(pod.containers)
    max_threshold = r.MAX_CONTAINER_THRESHOLD * len(containers)
    out = []
    for i in feasible:
        on_node = {name for image in nodes[i].images for name in image.names}
        s = 0
        for c in containers:
            name = r.normalized_image_name(c.image)
            if name in on_node:
                size, holders = states[name]
                s += int(float(size) * (float(len(holders)) / float(total)))
        if s < r.MIN_THRESHOLD:
            s = r.MIN_THRESHOLD
        elif s > max_threshold:
            s = max_threshold
        out.append(r.go_div(MAX_NODE_SCORE * (s - r.MIN_THRESHOLD), max_threshold - r.MIN_THRESHOLD))
    return out


def _raw_scores(name, pod, nodes, usages, feasible, args) -> list[int] | None:
    """One score plugin's raw scores over the feasible nodes; None when its PreScore returns Skip."""
    if name == "TaintToleration":
        return [f.taint_toleration_score(pod, nodes[i]) for i in feasible]
    if name == "NodeAffinity":
        if f.node_affinity_pre_score_skip(pod, args):
            return None
        return [f.node_affinity_score(pod, nodes[i], args) for i in feasible]
    if name == "NodeResourcesFit":
        return [r.fit_score(pod, nodes[i], usages[i], args) for i in feasible]
    if name == "NodeResourcesBalancedAllocation":
        out = [r.balanced_allocation_score(pod, nodes[i], usages[i], args) for i in feasible]
        return None if out and out[0] is None else out
    if name == "ImageLocality":
        return _image_scores(pod, nodes, feasible)
    raise KeyError(f"no reference score for plugin {name!r}")


def _normalize(name: str, raw: list[int]) -> list[int]:
    # As upstream: only TaintToleration (reversed) and NodeAffinity have ScoreExtensions here.
    if name == "TaintToleration":
        return f.taint_toleration_normalize(raw)
    if name == "NodeAffinity":
        return f.node_affinity_normalize(raw)
    return list(raw)


def _pre_filter(name: str, pod: PodSpec):
    return f.node_affinity_pre_filter(pod)


def _fit_error(n: int, pre_filter_msg: str | None, counts: dict[str, int]) -> str:
    """As FitError.Error()."""
    if n == 0:
        return ERR_NO_NODES_AVAILABLE
    msg = NO_NODE_AVAILABLE_MSG.format(n) + ":"
    if pre_filter_msg:
        return msg + f" {pre_filter_msg}."
    parts = sorted(f"{count} {reason}" for reason, count in counts.items())
    if parts:
        msg += " " + ", ".join(parts) + "."
    return msg


# ---- schedulePod -------------------------------------------------------------------------------


def reference_pipeline(nodes: Sequence[NodeSpec], usages: Sequence[NodeUsage], pod: PodSpec,
                       profile: ProfileConfig, pods_by_node: Sequence[Sequence[PodSpec]] | None = None,
                       objects: ClusterObjects | None = None) -> ReferenceResult:
    """schedulePod over every node, one node at a time. `pods_by_node` are the pods on each node
    (PodTopologySpread and InterPodAffinity read them), `objects` the other cluster objects."""
    n = len(nodes)
    pods_by_node = pods_by_node if pods_by_node is not None else [[] for _ in nodes]
    objects = objects if objects is not None else ClusterObjects()
    res = ReferenceResult(pod_key=pod.key, num_all_nodes=n)
    if n == 0:
        res.message = ERR_NO_NODES_AVAILABLE
        return res
    args = {name: profile.args_for(name) for name in set(profile.filters) | {s for s, _ in profile.scores}}

    def reject_all(plugin: str, reason: str) -> None:
        for node in nodes:
            res.filtered[node.name] = [{"plugin": plugin, "reasons": [reason]}]

    # RunPreFilterPlugins: in PreFilter order; results merged by intersection.
    allowed: set[str] | None = None
    narrowing: list[str] = []
    states: dict[str, object] = {}
    for name in profile.filters:
        if name == "PodTopologySpread":
            states[name] = t.spread_pre_filter(pod, nodes, pods_by_node, args.get(name), objects)
            continue
        if name == "InterPodAffinity":
            out = t.affinity_pre_filter(pod, nodes, pods_by_node, objects)
            if not isinstance(out, PreFilterRejected):
                states[name] = out
                continue
        elif name not in _NARROWING:
            continue
        else:
            out = _pre_filter(name, pod)
        if isinstance(out, PreFilterRejected):
            # As upstream: UnschedulableAndUnresolvable at PreFilter, the message stands alone.
            reject_all(name, out.message)
            res.reason_counts = {out.message: n}
            res.message = _fit_error(n, out.message, {})
            return res
        if out is None:
            continue
        narrowing.append(name)
        allowed = set(out) if allowed is None else allowed & out
        if not allowed:
            # As RunPreFilterPlugins: an empty intersection rejects the pod at PreFilter.
            plugins = sorted(narrowing)
            msg = (f"node(s) didn't satisfy plugin {plugins[0]}" if len(plugins) == 1
                   else f"node(s) didn't satisfy plugin(s) [{' '.join(plugins)}] simultaneously")
            reject_all(narrowing[0], msg)
            res.reason_counts = {msg: n}
            res.message = _fit_error(n, msg, {})
            return res

    absent_reason = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(narrowing))}]" if narrowing else None
    counts: dict[str, int] = {}
    feasible: list[int] = []
    for i, node in enumerate(nodes):
        if allowed is not None and node.name not in allowed:
            # As findNodesThatFitPod: nodes the PreFilterResult leaves out get the absent status.
            res.filtered[node.name] = [{"plugin": narrowing[0], "reasons": [absent_reason]}]
            counts[absent_reason] = counts.get(absent_reason, 0) + 1
            continue
        for name in profile.filters:
            if name in states:
                state = states[name]
                if state == "skip":
                    continue
                reasons = (t.spread_filter(pod, node, state) if name == "PodTopologySpread"
                           else t.affinity_filter(node, state))
            else:
                reasons = _filter(name, pod, node, usages[i], args.get(name))
            if reasons:
                res.filtered[node.name] = [{"plugin": name, "reasons": list(reasons)}]
                for reason in reasons:
                    counts[reason] = counts.get(reason, 0) + 1
                break
        else:
            feasible.append(i)
    res.reason_counts = counts
    res.feasible = [nodes[i].name for i in feasible]
    if not feasible:
        res.message = _fit_error(n, None, counts)
        return res
    if len(feasible) == 1:
        # As schedulePod: one feasible node is used without scoring.
        res.top = {res.feasible[0]}
        return res

    totals = [0] * len(feasible)
    per_node: list[dict] = [{} for _ in feasible]
    for name, weight in profile.scores:
        if name == "PodTopologySpread":
            state = t.spread_pre_score(pod, nodes, pods_by_node, feasible, args.get(name), objects)
            if state is None:
                continue
            raw = [t.spread_score(pod, nodes[i], pods_by_node[i], state) for i in feasible]
            normalized = t.spread_normalize([nodes[i].name for i in feasible], raw, state)
        elif name == "InterPodAffinity":
            state = t.affinity_pre_score(pod, nodes, pods_by_node, args.get(name), objects)
            if state is None:
                continue
            raw = [t.affinity_score(nodes[i], state) for i in feasible]
            normalized = t.affinity_normalize(raw)
        else:
            raw = _raw_scores(name, pod, nodes, usages, feasible, args.get(name))
            if raw is None:
                continue
            normalized = _normalize(name, raw)
        for k in range(len(feasible)):
            assert MIN_NODE_SCORE <= normalized[k] <= MAX_NODE_SCORE, (name, normalized[k])
            weighted = normalized[k] * weight
            per_node[k][name] = {"raw": raw[k], "normalized": normalized[k], "weight": weight, "weighted": weighted}
            totals[k] += weighted
    for k, i in enumerate(feasible):
        res.scores[nodes[i].name] = {"plugins": per_node[k], "total": totals[k]}
    best = max(totals)
    res.top = {nodes[i].name for k, i in enumerate(feasible) if totals[k] == best}
    return res


def reference_schedule(nodes: Sequence[NodeSpec], usages: Sequence[NodeUsage], pod: PodSpec,
                       profile: ProfileConfig, rng: random.Random | None = None) -> str | None:
    """The node the reference would bind the pod to (uniform among the top scores), or None."""
    res = reference_pipeline(nodes, usages, pod, profile)
    if not res.top:
        return None
    top = sorted(res.top)
    return top[0] if len(top) == 1 else (rng or random).choice(top)
