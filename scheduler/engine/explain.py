"""A decision as data: the feasible set, each rejected node's plugin and reasons, the score
matrix and the FailedScheduling message. The CLI (`explain`), the audit rows and the
dashboard all read decisions through here."""

from __future__ import annotations

import functools
import json
from json.encoder import encode_basestring_ascii as _json_str  # json.dumps's own string encoder (C)

import numpy as np

from .framework import ABSENT, Decision
from .nodes import NodeTable

TOP_CANDIDATES = 10


def filtered_nodes(decision: Decision, nodes: NodeTable) -> dict[str, list[dict]]:
    """node -> [{"plugin", "reasons"}] for every rejected node, under its first rejecting plugin."""
    out: dict[str, list[dict]] = {}
    for row in np.flatnonzero(decision.rejected_by != -1):
        i = int(decision.rejected_by[row])
        if i == ABSENT:
            plugin, reason = decision.absent_status
            out[nodes.names[row]] = [{"plugin": plugin, "reasons": [reason]}]
            continue
        result = decision.filter_results[i]
        reasons = [text for text, mask in result.reasons if mask[row]]
        out[nodes.names[row]] = [{"plugin": decision.filter_names[i], "reasons": reasons}]
    return out


def score_matrix(decision: Decision, nodes: NodeTable, rows: np.ndarray | None = None) -> dict[str, dict]:
    """node -> {"plugins": {name: {raw, normalized, weight, weighted}}, "total"} over the scored candidates."""
    if not decision.plugin_scores and len(decision.totals) == 0:
        return {}
    positions = np.arange(len(decision.candidates)) if rows is None else np.asarray(rows, dtype=np.int64)
    # Column by column into Python ints first (one tolist per array, not one int() per cell).
    names = nodes.names
    candidates = decision.candidates[positions].tolist()
    totals = decision.totals[positions].tolist()
    columns = [(ps.plugin, ps.weight, *(a.tolist() for a in ps.at(positions))) for ps in decision.plugin_scores]
    out: dict[str, dict] = {}
    for j, row in enumerate(candidates):
        plugins = {name: {"raw": raw[j], "normalized": normalized[j], "weight": weight, "weighted": normalized[j] * weight}
                   for name, weight, raw, normalized in columns}
        out[names[row]] = {"plugins": plugins, "total": totals[j]}
    return out


def top_candidates(decision: Decision, nodes: NodeTable, k: int = TOP_CANDIDATES) -> list[dict]:
    """The k best-scored candidates (winner first) as compact rows for the audit."""
    if len(decision.totals) == 0:
        if decision.selected_row is None:
            return []
        return [{"node": nodes.names[decision.selected_row], "total": None, "plugins": {}}]
    order = _top_order(decision, k)
    # score_matrix's entries, each with its node first (built here directly: one row per candidate kept).
    names = nodes.names
    columns = [(ps.plugin, ps.weight, *(a.tolist() for a in ps.at(order))) for ps in decision.plugin_scores]
    return [{"node": names[row],
             "plugins": {name: {"raw": raw[j], "normalized": normalized[j], "weight": weight,
                                "weighted": normalized[j] * weight} for name, weight, raw, normalized in columns},
             "total": total}
            for j, (row, total) in enumerate(zip(decision.candidates[order].tolist(), decision.totals[order].tolist()))]


def top_candidates_json(decision: Decision, nodes: NodeTable, k: int = TOP_CANDIDATES) -> str:
    """top_candidates as JSON text, exactly json.dumps(top_candidates(...), separators=(",", ":")).

    Every scheduled attempt stores its top candidates: building their dicts and encoding them cost about as
    much as the rest of the attempt's row. With integer scores (kube-scheduler's int64) each candidate is one
    %-format of a template made once per profile, its numbers read from arrays."""
    scores = decision.plugin_scores
    if len(decision.totals) == 0 or not all(type(ps.weight) is int for ps in scores):
        return json.dumps(top_candidates(decision, nodes, k), separators=(",", ":"))
    order = _top_order(decision, k)
    gathered = []  # per plugin: raw, normalized; then the totals
    for ps in scores:
        gathered += ps.at(order)
    gathered.append(np.asarray(decision.totals)[order])
    got = np.array(gathered)  # one array, so the numbers are read out in one call
    if got.dtype.kind not in "iu":  # a float score: json's own number format
        return json.dumps(top_candidates(decision, nodes, k), separators=(",", ":"))
    n = len(scores)
    cells = np.empty((3 * n + 1, len(order)), dtype=np.int64)  # per plugin: raw, normalized, weighted; the total
    cells[0:3 * n:3] = got[0:2 * n:2]
    cells[1:3 * n:3] = got[1:2 * n:2]
    cells[2:3 * n:3] = got[1:2 * n:2] * np.array([ps.weight for ps in scores], dtype=np.int64)[:, None]
    cells[3 * n] = got[2 * n]
    template = _candidate_template(tuple((ps.plugin, ps.weight) for ps in scores))
    names = nodes.names
    return "[" + ",".join([template % (_json_str(names[row]), *v) for row, v in
                           zip(decision.candidates[order].tolist(), cells.T.tolist())]) + "]"


@functools.lru_cache(maxsize=64)
def _candidate_template(plugins: tuple[tuple[str, int], ...]) -> str:
    """One candidate's JSON with its node name and numbers left as %s and %d (the weights written in)."""
    cells = ",".join(f'{_json_str(name).replace("%", "%%")}:{{"raw":%d,"normalized":%d,"weight":{weight},"weighted":%d}}'
                     for name, weight in plugins)
    return '{"node":%s,"plugins":{' + cells + '},"total":%d}'


def _top_order(decision: Decision, k: int) -> np.ndarray:
    """The positions (among the candidates) of the k best totals, best first, the chosen node first of all.
    Small lists in Python: numpy's cost per call is most of the work on ten positions."""
    totals = decision.totals
    chosen = -1
    if decision.selected_row is not None:
        found = np.flatnonzero(decision.candidates == decision.selected_row)
        chosen = int(found[0]) if len(found) else -1
    if len(totals) > k:
        # The k best, ties in candidate order. Not argpartition: on totals with a few distinct values (most nodes
        # tie) its selection took 40-70 µs a pod at 500-2,500 candidates, a stable sort of them all 5-20 µs.
        part = np.argsort(-totals, kind="stable")[:k].tolist()
        if chosen >= 0 and chosen not in part:
            # Among more than k tied top scores the partition keeps any k: make sure the winner is one.
            kept = totals[part].tolist()
            part[kept.index(min(kept))] = chosen
    else:
        part = list(range(len(totals)))
    kept = totals[part].tolist()
    order = [part[i] for i in sorted(range(len(part)), key=lambda i: -kept[i])]  # stable, as argsort(kind="stable")
    if chosen in order and order[0] != chosen:
        # The winner first, the others as they were (as a stable sort on "is not the chosen node").
        order.remove(chosen)
        order.insert(0, chosen)
    return np.array(order, dtype=np.intp)


def explain(decision: Decision, nodes: NodeTable) -> dict:
    """The `explain` command's JSON object."""
    selected = nodes.names[decision.selected_row] if decision.selected_row is not None else None
    if decision.error:
        message = decision.error
    elif selected is None:
        message = decision.fit_error_message()
    else:
        message = None
    return {
        "pod": decision.pod_key,
        "feasible": [nodes.names[r] for r in decision.candidates],
        "filtered": filtered_nodes(decision, nodes),
        "scores": score_matrix(decision, nodes),
        "selected": selected,
        "message": message,
    }


# ---- the trace an attempt keeps ---------------------------------------------------------
#
# What an Attempt row stores (Attempt.trace) so the dashboard can show the decision later
# without re-running it. Compact on purpose: it is written inside the scheduling loop.
#
#   {"v": 2,
#    "filtered": [{"plugin": P, "reasons": [R, ...], "nodes": [N, ...], "omitted": K}, ...],
#        every rejected node counted once, grouped by its first rejecting plugin and that plugin's
#        reasons; at most TRACE_MAX_NODES names in all, the rest of a group counted in "omitted"
#        (absent when the group is whole; version 1 traces never omit)
#    "scores": {"plugins": [P, ...], "weights": [W, ...], "nodes": [N, ...],
#               "raw": [[per plugin] per node], "normalized": [[...]], "totals": [...]}}
#        every scored candidate (only when scores are traced; absent when nothing was scored;
#        bounded by numFeasibleNodesToFind)
#
# trace_filtered() and trace_scores() read it back into exactly the shapes of filtered_nodes()
# and score_matrix() above, i.e. the `explain` command's "filtered" and "scores", for the nodes
# named; trace_omitted() says what was left out.

TRACE_VERSION = 2
# Node names a trace keeps at most. A failed attempt rejects every node, so without a cap its trace
# grows with the cluster (about 600 KB of names at 50,000 nodes, per attempt, every retry); grouped
# by (plugin, reasons) with counts, the names beyond this add nothing the page can show at once.
TRACE_MAX_NODES = 1000
_MAX_REASON_BITS = 62  # reasons per plugin that fit one int64 code; past that, group row by row


def _reason_groups(rows: np.ndarray, reasons: list[tuple[str, np.ndarray]]) -> list[tuple[list[str], np.ndarray]]:
    """Split rows by which of the reasons apply to each, vectorized: one bit per reason."""
    if len(reasons) > _MAX_REASON_BITS:
        by_texts: dict[tuple[str, ...], list[int]] = {}
        for row in rows:
            by_texts.setdefault(tuple(t for t, m in reasons if m[row]), []).append(int(row))
        return [(list(texts), np.asarray(members)) for texts, members in by_texts.items()]
    code = np.zeros(len(rows), dtype=np.int64)
    for bit, (_, mask) in enumerate(reasons):
        code |= mask[rows].astype(np.int64) << bit
    uniq, inverse = np.unique(code, return_inverse=True)
    return [([t for bit, (t, _) in enumerate(reasons) if (int(u) >> bit) & 1], rows[inverse == k])
            for k, u in enumerate(uniq)]


def _shares(sizes: list[int], budget: int | None) -> list[int]:
    """How many names each group keeps: all when they fit the budget, else small groups whole (a lone
    tainted node says more than the 1,000th of 50,000 short on cpu) and the rest split evenly."""
    if budget is None or sum(sizes) <= budget:
        return list(sizes)
    shares = [0] * len(sizes)
    left = budget
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for done, i in enumerate(order):
        shares[i] = min(sizes[i], left // (len(order) - done))
        left -= shares[i]
    return shares


def filter_verdict_groups(decision: Decision, nodes: NodeTable, max_nodes: int | None = TRACE_MAX_NODES) -> list[dict]:
    """Every rejected node under its first rejecting plugin and reasons, grouped (the trace's "filtered"),
    naming at most `max_nodes` nodes in all (None: every one) and counting the rest of each group."""
    names = nodes.names
    members_of: list[tuple[str, list[str], np.ndarray]] = []
    rejected_by = decision.rejected_by
    for i, result in enumerate(decision.filter_results):
        if result is None:
            continue
        rows = np.flatnonzero(rejected_by == i)
        if len(rows) == 0:
            continue
        for reasons, members in _reason_groups(rows, result.reasons):
            members_of.append((decision.filter_names[i], reasons, members))
    if decision.absent_status is not None:
        rows = np.flatnonzero(rejected_by == ABSENT)
        if len(rows):
            plugin, reason = decision.absent_status
            members_of.append((plugin, [reason], rows))
    groups: list[dict] = []
    for (plugin, reasons, members), keep in zip(members_of, _shares([len(m) for _, _, m in members_of], max_nodes)):
        group = {"plugin": plugin, "reasons": reasons, "nodes": [names[r] for r in members[:keep]]}
        if keep < len(members):
            group["omitted"] = int(len(members) - keep)
        groups.append(group)
    return groups


def score_columns(decision: Decision, nodes: NodeTable) -> dict | None:
    """Every scored candidate's per-plugin raw and normalized scores, column by column (the trace's "scores")."""
    if not decision.plugin_scores and len(decision.totals) == 0:
        return None
    names = nodes.names
    return {
        "plugins": [ps.plugin for ps in decision.plugin_scores],
        "weights": [ps.weight for ps in decision.plugin_scores],
        "nodes": [names[r] for r in decision.candidates],
        "raw": np.column_stack([ps.raw for ps in decision.plugin_scores]).tolist() if decision.plugin_scores
        else [[] for _ in decision.candidates],
        "normalized": np.column_stack([ps.normalized for ps in decision.plugin_scores]).tolist()
        if decision.plugin_scores else [[] for _ in decision.candidates],
        "totals": decision.totals.tolist(),
    }


def trace(decision: Decision, nodes: NodeTable, *, scores: bool, max_nodes: int | None = TRACE_MAX_NODES) -> dict:
    """What an Attempt keeps of a decision: the filter verdicts (at most `max_nodes` names), and with
    `scores` every candidate's scores."""
    out: dict = {"v": TRACE_VERSION, "filtered": filter_verdict_groups(decision, nodes, max_nodes)}
    topology = topology_detail(decision, nodes)
    if topology is not None:
        out["topology"] = topology
    if scores:
        columns = score_columns(decision, nodes)
        if columns is not None:
            out["scores"] = columns
    return out


def trace_filtered(stored: dict) -> dict[str, list[dict]]:
    """A trace's filter verdicts in filtered_nodes()'s shape: node -> [{"plugin", "reasons"}]."""
    out: dict[str, list[dict]] = {}
    for group in stored.get("filtered") or []:
        for name in group["nodes"]:
            out[name] = [{"plugin": group["plugin"], "reasons": list(group["reasons"])}]
    return out


def trace_omitted(stored: dict) -> list[dict]:
    """The groups a capped trace names only in part: [{"plugin", "reasons", "named", "omitted"}], largest first."""
    out = [{"plugin": g["plugin"], "reasons": list(g["reasons"]), "named": len(g["nodes"]), "omitted": g["omitted"]}
           for g in stored.get("filtered") or [] if g.get("omitted")]
    return sorted(out, key=lambda g: -g["omitted"])


def trace_scores(stored: dict) -> dict[str, dict]:
    """A trace's scores in score_matrix()'s shape: node -> {"plugins": {name: {raw, normalized, weight, weighted}}, "total"}."""
    columns = stored.get("scores")
    if not columns:
        return {}
    plugins, weights = columns["plugins"], columns["weights"]
    out: dict[str, dict] = {}
    for name, raw, normalized, total in zip(columns["nodes"], columns["raw"], columns["normalized"], columns["totals"]):
        out[name] = {
            "plugins": {p: {"raw": r, "normalized": n, "weight": w, "weighted": n * w}
                        for p, w, r, n in zip(plugins, weights, raw, normalized)},
            "total": total,
        }
    return out


# ---- the PostFilter (preemption) outcome ----------------------------------------------------------

# Candidates listed at most: upstream dry-runs up to max(10% of the nodes, 100) of them.
PREEMPTION_MAX_CANDIDATES = 100


def preemption(decision: Decision, *, max_candidates: int = PREEMPTION_MAX_CANDIDATES,
               max_nodes: int = TRACE_MAX_NODES) -> dict | None:
    """What PostFilter (DefaultPreemption) made of a pod that fit nowhere, for `explain --preempt`
    and the Attempt page; None when PostFilter did not run.

    {"nominated": node or None, "victims": ["ns/name", ...], "message": the "preemption: ..." part,
     "code": status code, "plugin": name,
     and, when the plugin gave its account:
     "potential_nodes": nodes whose status was Unschedulable, "offset", "num_candidates", "examined",
     "candidates": [{"node", "victims", "pdb_violations"}, ...] (chosen one included, at most
        `max_candidates`; "candidates_omitted" counts the rest),
     "rejected": [{"reasons": [...], "nodes": [...], "omitted": K}, ...] the examined nodes that were
        not candidates, grouped by their reasons (at most `max_nodes` names in all),
     "cleared_nominations": ["ns/name", ...] lower-priority pods nominated to the chosen node}"""
    result = decision.post_filter
    if result is None:
        return None
    out: dict = {
        "nominated": result.nominated_node or None,
        "victims": [v.key for v in result.victims],
        "message": result.message,
        "code": result.code,
        "plugin": result.plugin,
    }
    detail = result.detail
    dry = getattr(detail, "dry_run", None)
    if detail is None or not hasattr(detail, "potential_nodes"):
        return out
    out.update(potential_nodes=detail.potential_nodes, offset=detail.offset, num_candidates=detail.num_candidates,
               examined=dry.examined if dry is not None else 0)
    if dry is not None:
        count = len(dry)
        shown = [dry.candidate(i) for i in range(min(count, max_candidates))]
        chosen = detail.chosen
        if chosen is not None and all(c.node != chosen.node for c in shown):
            shown.append(chosen)
        out["candidates"] = [{"node": c.node, "victims": [v.key for v in c.victims],
                              "pdb_violations": c.num_pdb_violations} for c in shown]
        if count > len(shown):
            out["candidates_omitted"] = count - len(shown)
        groups: dict[tuple[str, ...], list[str]] = {}
        for node, status in dry.statuses.items():
            groups.setdefault(status.reasons, []).append(node)
        rejected, budget = [], max_nodes
        for reasons, names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            kept = names[:max(budget, 0)]
            budget -= len(kept)
            entry = {"reasons": list(reasons), "nodes": kept}
            if len(kept) < len(names):
                entry["omitted"] = len(names) - len(kept)
            rejected.append(entry)
        out["rejected"] = rejected
    out["cleared_nominations"] = [p.key for p in getattr(detail, "lower_priority_nominated", ())]
    return out


# ---- the topology behind a PodTopologySpread or InterPodAffinity verdict -----------------------
#
# What those two plugins counted in PreFilter (the Decision keeps the cycle's state), so a failure can
# be read: a spread constraint's matching pods per domain, the global minimum and the skew a node
# would get; a required (anti-)affinity's matching pods per (key, value).

TOPOLOGY_MAX_DOMAINS = 200  # domains listed per constraint or term (hostname domains grow with the cluster)


def selector_text(selector) -> str:
    """As labels.Selector's String(): "app=web,tier in (a,b)"; Nothing as "<none>", Everything as ""."""
    if selector.nothing:
        return "<none>"
    words = {"=": "=", "In": " in ", "NotIn": " notin "}
    parts = []
    for r in selector.requirements:
        if r.operator == "=":
            parts.append(f"{r.key}={r.values[0] if r.values else ''}")
        elif r.operator in words:
            parts.append(f"{r.key}{words[r.operator]}({','.join(r.values)})")
        elif r.operator == "Exists":
            parts.append(r.key)
        else:
            parts.append(f"!{r.key}")
    return ",".join(parts)


def _capped(counts: dict[str, int]) -> tuple[dict[str, int], int]:
    if len(counts) <= TOPOLOGY_MAX_DOMAINS:
        return counts, 0
    kept = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOPOLOGY_MAX_DOMAINS]
    return dict(kept), len(counts) - len(kept)


def topology_detail(decision: Decision, nodes: NodeTable) -> dict | None:
    """{"PodTopologySpread": [per DoNotSchedule constraint], "InterPodAffinity": {...}} from the cycle's
    PreFilter state; None when neither plugin counted anything for this pod."""
    from .plugins import inter_pod_affinity, pod_topology_spread

    state = decision.cycle_state
    if state is None:
        return None
    out: dict = {}
    spread = state.read(pod_topology_spread.PRE_FILTER_STATE_KEY)
    if spread is not None and spread.constraints:
        rows = []
        for cc in spread.constraints:
            counts, omitted = _capped(cc.match_nums())
            c = cc.constraint
            row = {"topologyKey": c.topology_key, "maxSkew": c.max_skew, "minDomains": c.min_domains,
                   "selector": selector_text(c.selector), "globalMin": cc.global_min() if cc.counted.any() else None,
                   "domains": counts}
            if omitted:
                row["omitted"] = omitted
            rows.append(row)
        out["PodTopologySpread"] = rows
    affinity = state.read(inter_pod_affinity.PRE_FILTER_STATE_KEY)
    if affinity is not None:
        part = {}
        for name, counts in (("affinity", affinity.affinity), ("antiAffinity", affinity.anti_affinity),
                             ("existingAntiAffinity", affinity.existing_anti_affinity)):
            table = state_counts(counts, nodes)
            if table:
                part[name] = table
        part["requiredAffinityKeys"] = sorted({t.topology_key for t in affinity.required_affinity})
        part["requiredAntiAffinityKeys"] = sorted({t.topology_key for t in affinity.required_anti_affinity})
        out["InterPodAffinity"] = part
    return out or None


def state_counts(counts, nodes: NodeTable) -> dict[str, dict[str, int]]:
    """A TopologyCounts as {topology key: {value: count}} (the entries present, capped per key)."""
    out: dict[str, dict[str, int]] = {}
    for (key, value), count in counts.as_dict(nodes).items():
        out.setdefault(key, {})[value] = count
    return {key: _capped(table)[0] for key, table in out.items()}
