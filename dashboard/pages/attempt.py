"""The attempt page: why one scheduling attempt ended as it did, read through the engine's explain code."""

from __future__ import annotations

from django.conf import settings
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from scheduler.engine.explain import TRACE_MAX_NODES, trace_filtered, trace_omitted, trace_scores
from scheduler.models import RESULT_SCHEDULED, RESULT_UNSCHEDULABLE, Attempt

from .domain import domain_url
from .preemption import attempt_preemption
from .why import why_section

# Verdict rows rendered at once; a search narrows the rest (a 5,000-node cluster is 5,000 rows).
MAX_VERDICT_ROWS = 1000


def profile_score_order(version: int, profile_name: str) -> list[str]:
    """The profile's score plugins in its configured order (the stored rows are JSON objects, whose
    key order Postgres does not keep); empty when that version or profile is gone."""
    from scheduler.models import SchedulerConfigVersion
    from scheduler.versions.profiles import config_for_version

    try:
        config = config_for_version(version)
    except SchedulerConfigVersion.DoesNotExist:
        return []
    for profile in config.profiles:
        if profile.scheduler_name == profile_name:
            return [name for name, _ in profile.scores]
    return []


def score_table(scores: dict[str, dict], winner: str, order: list[str] = ()) -> dict:
    """The score matrix for a template: plugins as columns (with weights) in the profile's order,
    candidates as rows, the winner first, then by total."""
    plugins: list[tuple[str, int]] = []
    for entry in scores.values():
        for name, cell in entry["plugins"].items():
            if name not in (p for p, _ in plugins):
                plugins.append((name, cell["weight"]))
    rank = {name: i for i, name in enumerate(order)}
    plugins.sort(key=lambda p: rank.get(p[0], len(rank)))
    rows = [{"node": node, "total": entry["total"], "winner": node == winner,
             "cells": [entry["plugins"].get(name) for name, _ in plugins]}
            for node, entry in scores.items()]
    rows.sort(key=lambda r: (not r["winner"], -(r["total"] if r["total"] is not None else -1), r["node"]))
    return {"plugins": plugins, "rows": rows}


def verdict_rows(filtered: dict[str, list[dict]], query: str) -> list[dict]:
    """One row per rejected node (plugin, reasons), filtered by a case-insensitive substring of any column."""
    q = query.strip().lower()
    rows = []
    for node in sorted(filtered):
        for verdict in filtered[node]:
            row = {"node": node, "plugin": verdict["plugin"], "reasons": verdict["reasons"]}
            if not q or q in node.lower() or q in verdict["plugin"].lower() or any(q in r.lower() for r in verdict["reasons"]):
                rows.append(row)
    return rows


def topology_rows(topology: dict | None) -> list[dict]:
    """A traced spread failure: per DoNotSchedule constraint, each domain's matching pods and the skew
    a pod placed there would make (count + 1 - global minimum), busiest first."""
    rows = []
    for c in (topology or {}).get("PodTopologySpread") or []:
        low = c.get("globalMin")
        domains = sorted((c.get("domains") or {}).items(), key=lambda kv: (-kv[1], kv[0]))
        rows.append({**c, "domains": [{"value": v, "url": domain_url(c["topologyKey"], v), "count": n,
                                       "skew": None if low is None else n + 1 - low,
                                       "too_much": low is not None and n + 1 - low > c["maxSkew"]}
                                      for v, n in domains]})
    return rows


def affinity_rows(topology: dict | None) -> list[dict]:
    """A traced affinity verdict: (what was counted, topology key, value, matching pods)."""
    part = (topology or {}).get("InterPodAffinity") or {}
    words = {"affinity": "pods matching all required affinity terms",
             "antiAffinity": "pods matching a required anti-affinity term",
             "existingAntiAffinity": "existing pods whose required anti-affinity matches this pod"}
    return [{"what": words[name], "key": key, "value": value, "url": domain_url(key, value), "count": count}
            for name in ("affinity", "antiAffinity", "existingAntiAffinity")
            for key, table in sorted((part.get(name) or {}).items())
            for value, count in sorted(table.items(), key=lambda kv: (-kv[1], kv[0]))]


@require_GET
def attempt_detail(request, attempt_id: int):
    attempt = get_object_or_404(Attempt.objects.select_related("binding"), pk=attempt_id)
    query = request.GET.get("q", "")[:253]
    filtered = trace_filtered(attempt.trace)
    verdicts = verdict_rows(filtered, query)
    # A capped trace names some nodes of its largest groups and counts the rest (engine/explain.py).
    omitted = trace_omitted(attempt.trace)
    omitted_total = sum(g["omitted"] for g in omitted)
    # Every candidate when the attempt traced them all, else the top candidates every scheduled attempt keeps.
    traced_scores = trace_scores(attempt.trace)
    scores = traced_scores or {row["node"]: {"plugins": row["plugins"], "total": row["total"]}
                               for row in attempt.candidates}
    histogram = sorted(attempt.reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    widest = max((n for _, n in histogram), default=0)
    return render(request, "dashboard/attempt.html", {
        "attempt": attempt,
        "why": why_section(attempt.namespace, attempt.pod_name) if attempt.result == RESULT_UNSCHEDULABLE else None,
        "binding": getattr(attempt, "binding", None),
        "preemption": attempt_preemption(attempt.trace),
        "scheduled": attempt.result == RESULT_SCHEDULED,
        "histogram": [{"reason": r, "count": n, "percent": round(100 * n / widest) if widest else 0} for r, n in histogram],
        "traced": bool(attempt.trace),
        "trace_mode": settings.SCHEDBOARD_TRACE,
        "rejected_count": len(filtered) + omitted_total,
        "named_count": len(filtered),
        "omitted": omitted,
        "omitted_total": omitted_total,
        "trace_max_nodes": TRACE_MAX_NODES,
        "spread": topology_rows((attempt.trace or {}).get("topology")),
        "affinity": affinity_rows((attempt.trace or {}).get("topology")),
        "verdicts": verdicts[:MAX_VERDICT_ROWS],
        "verdicts_total": len(verdicts),
        "verdicts_cut": len(verdicts) > MAX_VERDICT_ROWS,
        "query": query,
        "matrix": score_table(scores, attempt.node_name,
                              profile_score_order(attempt.profile_version, attempt.profile_name) if scores else []),
        "all_candidates": bool(traced_scores),
        "latencies": [
            ("Waiting in the queue", attempt.queue_wait_ms),
            ("Algorithm (filter, score, select)", attempt.algorithm_ms),
            ("Scheduling cycle (algorithm, assume, reserve)", attempt.attempt_ms),
            ("Binding", attempt.binding_ms),
            ("End to end (first queued → bound)", attempt.e2e_ms),
        ],
    })
