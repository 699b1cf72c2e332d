"""Why a pod is pending, answered: the nearest nodes (those failing the fewest filters), what each
lacks in concrete terms, and which single change would make the pod fit.

Read off the filters' own per-node columns (every filter answers for every node at once, see
framework.run_filters): the count of failing filters per node is one sum over a boolean matrix.
A change to the pod (a toleration, a smaller request, a relaxed constraint) is checked by running
the filters again with the changed pod; a change to a node (uncordon, label, a bigger node) is
offered only where that node fails that one filter alone. Upstream has no such explainer: the
wording is ours, the reasons it starts from are kube-scheduler's.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np

from .framework import ABSENT, CycleState, FilterPass, Profile, run_filters
from .nodes import NodeSpec, NodeTable
from .plugins import inter_pod_affinity, pod_topology_spread
from .plugins.node_affinity import OBJECT_NAME_FIELD, required_mask, term_mask
from .plugins.node_ports import _conflicts, sanitize
from .plugins.taint_toleration import tolerations_tolerate
from .pods import (DO_NOT_SCHEDULE, NO_EXECUTE, NO_SCHEDULE, PREEMPT_NEVER, SCHEDULE_ANYWAY, PodAffinity,
                   PodSpec, Taint, Toleration)
from .resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, is_scalar_resource

NEAREST_NODES = 5  # nodes described by default
MAX_CHANGES = 6  # single changes offered at most
NODE_CHANGES_KEPT = 2  # of which this many are kept for changes to a node, when there are some

# ---- quantities as a person reads them -----------------------------------------------------------

_BINARY = (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10))


def _num(x: float) -> str:
    text = f"{x:.2f}".rstrip("0").rstrip(".")
    return text or "0"


def quantity(resource: str, amount: int) -> str:
    """1500 (cpu millicores) -> "1.5 CPU"; 2147483648 (memory) -> "2 GiB"; extended resources as counts."""
    if resource == CPU:
        return f"{_num(amount / 1000)} CPU"
    if resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith("hugepages-"):
        for suffix, size in _BINARY:
            if abs(amount) >= size:
                unit = f"{_num(amount / size)} {suffix}B"
                return unit if resource == MEMORY else f"{unit} {resource}"
        return f"{amount} B" if resource == MEMORY else f"{amount} B {resource}"
    return f"{amount} {resource}"


def request_quantity(resource: str, amount: int) -> str:
    """As a pod manifest would write it: 1500 -> "1500m", 2 GiB -> "2Gi"."""
    if resource == CPU:
        return f"{amount}m" if amount % 1000 else str(amount // 1000)
    if resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith("hugepages-"):
        for suffix, size in _BINARY:
            if amount >= size and amount % size == 0:
                return f"{amount // size}{suffix}"
        for suffix, size in reversed(_BINARY):
            if amount >= size:
                return f"{amount // size}{suffix}"  # rounded down: still fits
    return str(amount)


def _and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def taint_text(t: Taint) -> str:
    return f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"


def toleration_for(t: Taint) -> Toleration:
    return Toleration(key=t.key, operator="Equal", value=t.value, effect=t.effect)


def toleration_text(t: Toleration) -> str:
    value = f', value: "{t.value}"' if t.operator == "Equal" else ""
    return f'{{key: "{t.key}", operator: "{t.operator}"{value}, effect: "{t.effect}"}}'


# ---- the filters over every node -----------------------------------------------------------------


class _Run:
    """One filter pass of a pod over the nodes, with the cycle state its plugins kept."""

    def __init__(self, profile: Profile, pod: PodSpec, nodes: NodeTable):
        self.state = CycleState()
        with self.state.active():
            self.fp: FilterPass = run_filters(profile, pod, nodes)
        self.names = [p.name for p in profile.filters]
        n = nodes.n
        cols = []
        for res in self.fp.filter_results:
            cols.append(np.zeros(n, dtype=bool) if res is None or res.all_passed else ~np.asarray(res.passed, dtype=bool))
        # Nodes a PreFilter narrowed away fail that plugin (NodeAffinity's metadata.name terms).
        self.absent = self.fp.rejected_by == ABSENT
        if self.fp.absent_status is not None:
            plugin = self.fp.absent_status[0]
            if plugin in self.names:
                j = self.names.index(plugin)
                cols[j] = cols[j] | self.absent
        self.failing = np.column_stack(cols) if cols else np.zeros((n, 0), dtype=bool)

    @property
    def stopped(self) -> str | None:
        """A PreFilter rejection or an error: no node was looked at."""
        if self.fp.error is not None:
            return self.fp.error
        if self.fp.rejected is not None:
            return f"{self.fp.rejected[0]}: {self.fp.rejected[1]}"
        return None

    def fits(self) -> np.ndarray:
        if self.stopped is not None:
            return np.zeros(self.failing.shape[0], dtype=bool)
        return ~self.failing.any(axis=1)


def _fit_names(profile: Profile, pod: PodSpec, nodes: NodeTable) -> list[str]:
    run = _Run(profile, pod, nodes)
    return [nodes.names[r] for r in np.flatnonzero(run.fits())]


def _plugin(profile: Profile, name: str):
    return next((p for p in profile.filters if p.name == name), None)


# ---- what one node lacks, per failing filter -----------------------------------------------------


def _resource_checks(profile: Profile, pod: PodSpec) -> list[tuple[str, int]]:
    fit = _plugin(profile, "NodeResourcesFit")
    if fit is not None and hasattr(fit, "_checks"):
        return [(resource, want) for _, resource, want in fit._checks(pod)]
    return [(r, int(v)) for r, v in pod.requests.items() if v and r != PODS and (r in (CPU, MEMORY, EPHEMERAL_STORAGE)
                                                                               or is_scalar_resource(r))]


def _lower_priority_hold(pod: PodSpec, nodes: NodeTable, resources: list[str]) -> tuple[np.ndarray, dict[str, np.ndarray], int | None]:
    """Per node: how many pods of lower priority than `pod` sit there, and what they request (one
    bincount per resource over the pod columns); and the highest such priority seen."""
    cols = nodes.pods.columns
    high = cols.high
    rows = cols.row[:high]
    lower = (rows >= 0) & (cols.priority[:high] < pod.priority)
    node_rows = rows[lower]
    count = np.bincount(node_rows, minlength=nodes.n)[:nodes.n] if len(node_rows) else np.zeros(nodes.n, dtype=np.int64)
    hold = {}
    for r in resources:
        col = cols.requests.get(r)
        if col is None or not len(node_rows):
            hold[r] = np.zeros(nodes.n, dtype=np.int64)
        else:
            hold[r] = np.bincount(node_rows, weights=col[:high][lower], minlength=nodes.n)[:nodes.n].astype(np.int64)
    top = int(cols.priority[:high][lower].max()) if len(node_rows) else None
    return count, hold, top


class _Explainer:
    def __init__(self, profile: Profile, pod: PodSpec, nodes: NodeTable, run: _Run):
        self.profile, self.pod, self.nodes, self.run = profile, pod, nodes, run
        self.checks = _resource_checks(profile, pod)
        self.lower_count, self.lower_hold, self.lower_top = _lower_priority_hold(pod, nodes, [r for r, _ in self.checks])

    def shortfall(self, row: int) -> dict[str, int]:
        out = {}
        for resource, want in self.checks:
            free = int(self.nodes.allocatable_of(resource)[row]) - int(self.nodes.requested_of(resource)[row])
            if want > free:
                out[resource] = want - free
        return out

    def lacks(self, row: int, plugin: str) -> dict:
        handler = getattr(self, "_" + plugin, None)
        detail, fix = handler(row) if handler else (None, None)
        j = self.run.names.index(plugin)
        res = self.run.fp.filter_results[j]
        reasons = [text for text, mask in (res.reasons if res is not None else []) if mask[row]]
        if self.run.absent[row] and self.run.fp.absent_status and self.run.fp.absent_status[0] == plugin:
            reasons.append(self.run.fp.absent_status[1])
        return {"plugin": plugin, "reasons": reasons, "detail": detail or "; ".join(reasons), "fix": fix}

    # One method per filter plugin, named as the plugin: (what the node lacks, what would fix it there).
    def _NodeResourcesFit(self, row: int):
        nodes, pod = self.nodes, self.pod
        parts, fix = [], None
        if nodes.pod_count[row] >= nodes.allocatable_of(PODS)[row]:
            parts.append(f"the node already runs {int(nodes.pod_count[row])} of its {int(nodes.allocatable_of(PODS)[row])} pods")
        short = self.shortfall(row)
        if short:
            need = _and([quantity(r, v) if r != CPU else f"{_num(v / 1000)} more CPU" for r, v in short.items()])
            text = f"needs {need}" if CPU in short else f"needs {need} more"
            whole = [r for r, _ in self.checks if r in short and dict(self.checks)[r] > int(nodes.allocatable_of(r)[row])]
            if whole:
                text += (f": the pod asks more than the node's whole allocatable "
                         f"({_and([quantity(r, int(nodes.allocatable_of(r)[row])) for r in whole])}); no eviction can make room")
            else:
                count = int(self.lower_count[row])
                held = {r: int(self.lower_hold[r][row]) for r in short}
                held_text = _and([quantity(r, held[r]) for r in short])
                if count and all(held[r] >= short[r] for r in short):
                    text += f": evicting pods would do; {count} pod(s) of lower priority hold {held_text}"
                    if pod.preemption_policy == PREEMPT_NEVER:
                        text += " (but the pod's preemptionPolicy is Never)"
                elif count:
                    text += f": evicting nothing would do; the {count} pod(s) of lower priority hold only {held_text}"
                else:
                    text += f": evicting nothing would do; no pod of lower priority than {pod.priority} runs here"
            parts.append(text)
            fix = (f"requests of at most {_and([f'{request_quantity(r, dict(self.checks)[r] - v)} {r}' for r, v in short.items()])}"
                   if all(dict(self.checks)[r] - v > 0 for r, v in short.items()) else None)
        return "; ".join(parts) or None, fix

    def _TaintToleration(self, row: int):
        taints = [t for j, t in enumerate(self.nodes.taints) if self.nodes.taint_matrix[row, j]
                  and t.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerations_tolerate(self.pod.tolerations, t)]
        detail = _and([f"taint {taint_text(t)} not tolerated" for t in taints])
        return detail, "tolerations " + ", ".join(toleration_text(toleration_for(t)) for t in taints)

    def _NodeUnschedulable(self, row: int):
        name = self.nodes.names[row]
        return "the node is cordoned (spec.unschedulable)", f"uncordon it (kubectl uncordon {name})"

    def _NodeName(self, row: int):
        return f"the pod names node {self.pod.node_name!r} in spec.nodeName", None

    def _NodePorts(self, row: int):
        used = []
        for want in self.pod.host_ports:
            ip, protocol = sanitize(want.ip, want.protocol)
            for (used_protocol, port), by_row in self.nodes.ports.items():
                if port == want.port and sanitize("", used_protocol)[1] == protocol and _conflicts(ip, by_row.get(row, [])):
                    used.append(f"{protocol}/{want.port}")
        return f"host port(s) {', '.join(sorted(set(used)))} already in use", "another hostPort, or none"

    def _NodeAffinity(self, row: int):
        spec = self.nodes.specs[row]
        parts, fixes = [], []
        plugin = _plugin(self.profile, "NodeAffinity")
        added = getattr(plugin, "_added_required", None)
        if added is not None and not any(term_mask(t, self.nodes)[row] for t in added):
            parts.append("the profile's addedAffinity (scheduler-enforced node affinity) does not match the node")
        for key, value in self.pod.node_selector.items():
            have = spec.labels.get(key)
            if have != value:
                parts.append(f"nodeSelector {key}={value}: the node has "
                             + (f"{key}={have}" if have is not None else f"no {key} label"))
                fixes.append(f"{key}={value}")
        if self.pod.required_terms is not None and not self.run.absent[row]:
            for i, term in enumerate(self.pod.required_terms):
                if term_mask(term, self.nodes)[row]:
                    break
            else:
                for i, term in enumerate(self.pod.required_terms):
                    missed = [r for r in term.match_expressions if not _requirement_matches(r, spec)]
                    parts.append(f"required node affinity term {i + 1} unmatched"
                                 + (": " + "; ".join(_requirement_text(r, spec) for r in missed) if missed else ""))
                    # One term is enough (terms are ORed): the first whose misses labels alone can mend.
                    if i == 0 and missed and all(r.operator == "In" and r.values for r in missed) and not term.match_fields:
                        fixes.append(", ".join(f"{r.key}={r.values[0]}" for r in missed))
                if fixes and len(parts) > len(self.pod.required_terms):
                    fixes = []
        if self.run.absent[row]:
            parts.append(f"the pod's node affinity names other nodes ({OBJECT_NAME_FIELD})")
        fix = f"label the node {', '.join(fixes)}" if fixes and not (added is not None and "addedAffinity" in parts[0]) else None
        return "; ".join(parts) or None, fix

    def _PodTopologySpread(self, row: int):
        state = self.run.state.read(pod_topology_spread.PRE_FILTER_STATE_KEY)
        if state is None:
            return None, None
        for cc in state.constraints:
            c, d = cc.constraint, cc.domains
            if not d.has_key()[row]:
                return (f"{_label_word(c.topology_key)} label missing for the spread constraint "
                        f"(topologyKey {c.topology_key})", f"label the node {c.topology_key}=<value>")
            code = int(d.codes[row])
            self_match = 1 if c.selector.matches(self.pod.labels) else 0
            skew = int(cc.match_num[code]) + self_match - cc.global_min()
            if skew > c.max_skew:
                return (f"placing it here makes skew {skew} > maxSkew {c.max_skew} in {c.topology_key}={d.values[code]} "
                        f"({int(cc.match_num[code])} matching pods; the emptiest domain has {cc.global_min()})",
                        f"maxSkew {skew}")
        return None, None

    def _InterPodAffinity(self, row: int):
        state = self.run.state.read(inter_pod_affinity.PRE_FILTER_STATE_KEY)
        res = self.run.fp.filter_results[self.run.names.index("InterPodAffinity")]
        hit = {text for text, mask in res.reasons if mask[row]}
        spec = self.nodes.specs[row]
        parts = []
        if inter_pod_affinity.ERR_REASON_AFFINITY_RULES_NOT_MATCH in hit and state is not None:
            keys = sorted({t.topology_key for t in state.required_affinity})
            missing = [k for k in keys if k not in spec.labels]
            parts.append(f"node has no {_and(missing)} label for the pod affinity" if missing else
                         "no pod matching the required pod affinity runs in "
                         + _and([f"{k}={spec.labels[k]}" for k in keys]))
        if inter_pod_affinity.ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH in hit and state is not None:
            keys = sorted({t.topology_key for t in state.required_anti_affinity})
            parts.append("pods matching the pod's required anti-affinity run in "
                         + _and([f"{k}={spec.labels.get(k, '')}" for k in keys if k in spec.labels]))
        if inter_pod_affinity.ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH in hit:
            parts.append("an existing pod's required anti-affinity refuses this pod here")
        return "; ".join(parts) or None, None


def _label_word(key: str) -> str:
    return {"topology.kubernetes.io/zone": "zone", "topology.kubernetes.io/region": "region",
            "kubernetes.io/hostname": "hostname"}.get(key, key)


def _requirement_text(req, spec: NodeSpec) -> str:
    have = spec.labels.get(req.key)
    node = f"the node has {req.key}={have}" if have is not None else f"the node has no {req.key} label"
    values = f" ({', '.join(req.values)})" if req.values else ""
    return f"{req.key} {req.operator}{values}, {node}"


def _requirement_matches(req, spec: NodeSpec) -> bool:
    table = NodeTable([spec])
    from .pods import NodeSelectorTerm

    return bool(term_mask(NodeSelectorTerm(match_expressions=(req,)), table)[0])


# ---- single changes ------------------------------------------------------------------------------


def _pod_copy(pod: PodSpec, **fields) -> PodSpec:
    """The pod with some fields replaced; computed fields (requests, host_ports) may be given too."""
    computed = {k: fields.pop(k) for k in ("requests", "host_ports") if k in fields}
    out = replace(pod, **fields) if fields else copy.copy(pod)
    out.__dict__.pop("_derived", None)
    for k, v in computed.items():
        setattr(out, k, v)
    return out


def _pod_changes(ex: _Explainer, order: np.ndarray) -> list[tuple[str, str, PodSpec]]:
    """(kind, text, changed pod) for the changes to the pod the nearest nodes suggest."""
    pod, nodes, run = ex.pod, ex.nodes, ex.run
    names = run.names
    out: list[tuple[str, str, PodSpec]] = []
    seen: set[str] = set()

    def offer(kind, text, changed):
        if text not in seen:
            seen.add(text)
            out.append((kind, text, changed))

    for row in order:
        failing = [names[j] for j in np.flatnonzero(run.failing[row])]
        if failing == ["TaintToleration"]:
            taints = [t for j, t in enumerate(nodes.taints) if nodes.taint_matrix[row, j]
                      and t.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerations_tolerate(pod.tolerations, t)]
            tols = tuple(toleration_for(t) for t in taints)
            offer("toleration", "add the toleration(s) " + ", ".join(toleration_text(t) for t in tols),
                  _pod_copy(pod, tolerations=pod.tolerations + tols))
        elif failing == ["NodeUnschedulable"]:
            tol = Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect=NO_SCHEDULE)
            offer("toleration", "add the toleration " + toleration_text(tol),
                  _pod_copy(pod, tolerations=pod.tolerations + (tol,)))
        elif failing == ["NodeResourcesFit"] and nodes.pod_count[row] < nodes.allocatable_of(PODS)[row]:
            short = ex.shortfall(row)
            wanted = dict(ex.checks)
            if short and all(wanted[r] - v > 0 for r, v in short.items()):
                requests = dict(pod.requests)
                for r, v in short.items():
                    requests[r] = wanted[r] - v
                offer("request", "request at most " + _and([f"{request_quantity(r, requests[r])} {r}" for r in short])
                      + f" (now {_and([request_quantity(r, wanted[r]) for r in short])})",
                      _pod_copy(pod, requests=requests))
        elif failing == ["NodePorts"]:
            offer("ports", "drop the hostPort(s) " + ", ".join(str(p.port) for p in pod.host_ports),
                  _pod_copy(pod, host_ports=()))
        elif failing == ["PodTopologySpread"] and pod.topology_spread_constraints:
            offer("spread", "set whenUnsatisfiable: ScheduleAnyway on the spread constraint(s)",
                  _pod_copy(pod, topology_spread_constraints=tuple(
                      replace(c, when_unsatisfiable=SCHEDULE_ANYWAY) if c.when_unsatisfiable == DO_NOT_SCHEDULE else c
                      for c in pod.topology_spread_constraints)))
        elif failing == ["InterPodAffinity"]:
            res = run.fp.filter_results[names.index("InterPodAffinity")]
            hit = {text for text, mask in res.reasons if mask[row]}
            if inter_pod_affinity.ERR_REASON_AFFINITY_RULES_NOT_MATCH in hit and pod.pod_affinity is not None:
                offer("affinity", "drop the required pod affinity",
                      _pod_copy(pod, pod_affinity=PodAffinity((), pod.pod_affinity.preferred)))
            if inter_pod_affinity.ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH in hit and pod.pod_anti_affinity is not None:
                offer("affinity", "drop the required pod anti-affinity",
                      _pod_copy(pod, pod_anti_affinity=PodAffinity((), pod.pod_anti_affinity.preferred)))
        elif failing == ["NodeAffinity"] and pod.node_selector and pod.required_terms is None:
            spec = nodes.specs[row]
            wrong = [k for k, v in pod.node_selector.items() if spec.labels.get(k) != v]
            if wrong:
                offer("selector", "drop nodeSelector " + ", ".join(f"{k}={pod.node_selector[k]}" for k in wrong),
                      _pod_copy(pod, node_selector={k: v for k, v in pod.node_selector.items() if k not in wrong}))
    return out


def _node_changes(ex: _Explainer, order: np.ndarray) -> list[dict]:
    """Changes to one node that fails exactly one filter, which that change alone would clear there."""
    nodes, run = ex.nodes, ex.run
    out = []
    for row in order:
        failing = [run.names[j] for j in np.flatnonzero(run.failing[row])]
        if len(failing) != 1:
            continue
        name = nodes.names[row]
        plugin = failing[0]
        if plugin == "NodeUnschedulable":
            out.append({"kind": "node", "change": f"uncordon node {name}", "fits": [name]})
        elif plugin == "NodeAffinity":
            _, fix = ex._NodeAffinity(row)
            if fix:
                out.append({"kind": "node", "change": f"{fix.replace('the node', 'node ' + name)}", "fits": [name]})
        elif plugin == "NodeResourcesFit" and ex.checks:
            spec = nodes.specs[row]
            size = {r: max(int(nodes.allocatable_of(r)[row]), want) for r, want in ex.checks}
            out.append({"kind": "node", "fits": [f"a new node like {name}"],
                        "change": f"a node like {name} (same labels and taints) with at least "
                                  + _and([quantity(r, v) for r, v in size.items()]) + " allocatable"
                                  + (" (and fewer pods)" if not spec.allocatable.get(PODS, 1) else "")})
    return out


# ---- the answer ---------------------------------------------------------------------------------


def why_pending(profile: Profile, pod: PodSpec, nodes: NodeTable, *, nearest: int = NEAREST_NODES,
                max_changes: int = MAX_CHANGES) -> dict:
    """{"pod", "nodes": N, "fits": [nodes the pod fits now], "stopped": a PreFilter rejection or error,
    "nearest": [{"node", "failing": k, "lacks": [{"plugin", "reasons", "detail", "fix"}]}],
    "failing_per_plugin": {plugin: nodes it rejects}, "changes": [{"kind", "change", "fits": [...]}]}"""
    run = _Run(profile, pod, nodes)
    out: dict = {"pod": pod.key, "nodes": nodes.n, "fits": [], "stopped": run.stopped, "nearest": [],
                 "failing_per_plugin": {}, "changes": []}
    if nodes.n == 0 or run.stopped is not None:
        return out
    fits = run.fits()
    out["fits"] = [nodes.names[r] for r in np.flatnonzero(fits)][:nearest]
    per_plugin = run.failing.sum(axis=0)
    out["failing_per_plugin"] = {name: int(k) for name, k in zip(run.names, per_plugin) if k}
    ex = _Explainer(profile, pod, nodes, run)
    failing = run.failing.sum(axis=1)
    # Among nodes failing as many filters, the one short of the least (relative to its size) first.
    gap = np.zeros(nodes.n, dtype=np.float64)
    for resource, want in ex.checks:
        alloc = nodes.allocatable_of(resource)
        free = alloc - nodes.requested_of(resource)
        gap += np.maximum(want - free, 0) / np.maximum(alloc, 1)
    order = np.lexsort((np.asarray(nodes.names, dtype=object).astype(str), gap, failing))
    order = order[~fits[order]]
    for row in order[:nearest]:
        row = int(row)
        out["nearest"].append({"node": nodes.names[row], "failing": int(failing[row]),
                               "lacks": [ex.lacks(row, run.names[j]) for j in np.flatnonzero(run.failing[row])]})
    # Single changes: those to the pod are checked by filtering again; those to a node hold where it
    # fails that one filter alone.
    candidates = order[failing[order] == failing[order[0]]][:max(nearest, 20)] if len(order) else order
    # Room is kept for up to NODE_CHANGES_KEPT node changes (a node of size X, an uncordon), so a list of
    # smaller requests never hides them.
    node_changes = [{**entry, "fits_count": len(entry["fits"])} for entry in _node_changes(ex, candidates)]
    kept = node_changes[:min(NODE_CHANGES_KEPT, max_changes)]
    changes = []
    for kind, text, changed in _pod_changes(ex, candidates):
        if len(changes) >= max_changes - len(kept):
            break
        fit = _fit_names(profile, changed, nodes)
        if fit:
            changes.append({"kind": kind, "change": text, "fits": fit[:nearest], "fits_count": len(fit)})
    for entry in node_changes:
        if len(changes) >= max_changes:
            break
        changes.append(entry)
    out["changes"] = changes
    return out


def why_text(answer: dict) -> str:
    """The answer as lines for a terminal (`manage.py why`)."""
    lines = [f"Pod {answer['pod']}: {answer['nodes']} node(s) in the cluster."]
    if answer.get("gates"):  # SchedulingGates: it is not attempted at all; the rest says what would follow
        lines.append(f"Scheduling gates: {', '.join(answer['gates'])}: it is not attempted until the last is removed.")
    if answer["stopped"]:
        lines.append(f"Rejected before any node was looked at: {answer['stopped']}")
        return "\n".join(lines)
    if answer["fits"]:
        lines.append(f"It fits now on {', '.join(answer['fits'])}: it waits for its next attempt.")
    if answer["nearest"]:
        lines.append("Nearest nodes (fewest failing filters):")
        for entry in answer["nearest"]:
            lines.append(f"  {entry['node']} ({entry['failing']} failing):")
            for lack in entry["lacks"]:
                fix = f" -> {lack['fix']}" if lack["fix"] else ""
                lines.append(f"    {lack['plugin']}: {lack['detail']}{fix}")
    if answer["changes"]:
        lines.append("Single changes that would make it fit:")
        for c in answer["changes"]:
            where = ", ".join(c["fits"]) + (f" (+{c['fits_count'] - len(c['fits'])} more)" if c["fits_count"] > len(c["fits"]) else "")
            lines.append(f"  {c['change']}  (fits {where})")
    elif answer["nearest"]:
        lines.append("No single change found among those tried (a toleration, a smaller request, a relaxed constraint, a node change).")
    return "\n".join(lines)
