"""A decision as data: the feasible set, each rejected node's plugin and reasons, the score
matrix and the FailedScheduling message. The CLI (`explain`), the audit rows and the
dashboard all read decisions through here."""

from __future__ import annotations

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
    positions = np.arange(len(decision.candidates)) if rows is None else rows
    out: dict[str, dict] = {}
    for pos in positions:
        plugins = {
            ps.plugin: {
                "raw": int(ps.raw[pos]),
                "normalized": int(ps.normalized[pos]),
                "weight": ps.weight,
                "weighted": int(ps.normalized[pos]) * ps.weight,
            }
            for ps in decision.plugin_scores
        }
        out[nodes.names[decision.candidates[pos]]] = {"plugins": plugins, "total": int(decision.totals[pos])}
    return out


def top_candidates(decision: Decision, nodes: NodeTable, k: int = TOP_CANDIDATES) -> list[dict]:
    """The k best-scored candidates (winner first) as compact rows for the audit."""
    if len(decision.totals) == 0:
        if decision.selected_row is None:
            return []
        return [{"node": nodes.names[decision.selected_row], "total": None, "plugins": {}}]
    totals = decision.totals
    if len(totals) > k:
        part = np.argpartition(-totals, k - 1)[:k]
        # Among more than k tied top scores the partition keeps any k: make sure the winner is one.
        chosen_pos = np.flatnonzero(decision.candidates == decision.selected_row)
        if len(chosen_pos) and chosen_pos[0] not in part:
            part[np.argmin(totals[part])] = chosen_pos[0]
    else:
        part = np.arange(len(totals))
    order = part[np.argsort(-totals[part], kind="stable")]
    matrix = score_matrix(decision, nodes, order)
    rows = [{"node": name, **entry} for name, entry in matrix.items()]
    chosen = nodes.names[decision.selected_row] if decision.selected_row is not None else None
    rows.sort(key=lambda r: (r["node"] != chosen, -r["total"]))
    return rows


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
