"""The parts of the chaos report both backends share: the goals, hostile-apply verdicts, poison pods."""

from __future__ import annotations

from .verdict import BOUND, PENDING_WITH_REASON

# The promises the run checks (issue 9): the test asserts these.
POSTGRES_RECOVERY_GOAL_S = 30.0
SAMPLE = 20  # how many offending pods or nodes the report lists


def goals(result: dict) -> tuple[dict, list[str]]:
    """Which goals the run met, and a sentence for each one it did not."""
    pg = result.get("postgres_recovery_s")
    outages = (result.get("faults") or {}).get("postgres_outage", {}).get("count", 0)
    met = {
        "no_pod_lost": result["pods_lost"] == 0,
        "no_node_overcommitted": result["nodes_overcommitted"] == 0,
        "no_pod_double_bound": result["double_bound"] == 0,
        "postgres_recovery_within_30s": (not outages) or (pg is not None and pg <= POSTGRES_RECOVERY_GOAL_S),
    }
    why = []
    if not met["no_pod_lost"]:
        why.append(f"{result['pods_lost']} pod(s) lost: {result['lost_by_reason']}")
    if not met["no_node_overcommitted"]:
        why.append(f"{result['nodes_overcommitted']} node(s) overcommitted, e.g. {result['overcommitted'][:3]}")
    if not met["no_pod_double_bound"]:
        why.append(f"{result['double_bound']} pod(s) bound twice, e.g. {result['double_bound_pods'][:3]}")
    if not met["postgres_recovery_within_30s"]:
        why.append(f"binding did not recover within {POSTGRES_RECOVERY_GOAL_S:.0f} s of the Postgres outage "
                   f"(recovery_s {result['faults']['postgres_outage']['recovery_s']})")
    return met, why


def findings(result: dict) -> list[str]:
    """What else the run saw that a careful operator would want fixed (not among the goals)."""
    out = []
    h = result.get("hostile") or {}
    if h.get("admitted") or h.get("crashed") or h.get("timed_out"):
        kinds = lambda v: sorted({e["kind"] for e in h.get("by_apply", []) if e["verdict"] == v})  # noqa: E731
        out.append(f"hostile manifests not refused cleanly: admitted {kinds('admitted')}, crashed {kinds('crashed')}"
                   f"{', timed out ' + str(kinds('timed_out')) if h.get('timed_out') else ''}")
    if h.get("poison_pods_stalled"):
        stalled = sorted(k for k, v in h.get("poison_pods", {}).items() if v == "stalled")
        out.append(f"{len(stalled)} poison pod(s) neither bound nor failed with a reason: {stalled}")
    if result.get("pods_pending_with_room"):
        out.append(f"{result['pods_pending_with_room']} pod(s) pending although a node has room for them by the sum "
                   f"of its pods (room leaked), e.g. {result['pending_with_room'][:3]}")
    if result.get("usage_drift_nodes"):
        out.append(f"{result['usage_drift_nodes']} node(s) whose usage columns differ from their pods, "
                   f"e.g. {result['usage_drift'][:2]}")
    if result.get("bound_without_binding"):
        out.append(f"{result['bound_without_binding']} pod(s) bound with no Binding row")
    for exit_ in result.get("replica_exits") or ():
        out.append(f"replica {exit_['replica']} exited ({exit_['exit_code']}) at {exit_['t']} s: {exit_['error']}")
    if result.get("mirror_disagrees_with_api"):
        out.append(f"{result['mirror_disagrees_with_api']} pod(s) bound differently in Postgres than in the API server")
    return out


def hostile_verdict(*, exit_code: int | None, stderr: str, timed_out: bool) -> str:
    """refused: exit 1 with an error and no traceback; admitted: exit 0; crashed: anything else."""
    if timed_out or exit_code is None:
        return "timed_out"
    if exit_code == 0:
        return "admitted"
    if exit_code == 1 and "Traceback (most recent call last)" not in stderr:
        return "refused"
    return "crashed"


def first_error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if not lines:
        return ""
    if any(ln.startswith("Traceback") for ln in lines):
        return lines[-1][:240]  # the exception itself
    return lines[0][:240]


def poison_state(*, bound: bool, ours: bool, condition_status: str, condition_message: str) -> str:
    """What became of a hostile pod that got in: bound (harmless), isolated (failed alone, with a
    reason), ignored (not for any of our profiles), or stalled (none of these: it may block others)."""
    if bound:
        return "bound"
    if not ours:
        return "ignored"
    if condition_status == "False" and condition_message:
        return "isolated"
    return "stalled"


def hostile_summary(entries: list[dict], poison: dict[str, str]) -> dict:
    counts = {"applied": len(entries)}
    for verdict in ("refused", "admitted", "crashed", "timed_out"):
        counts[verdict] = sum(e["verdict"] == verdict for e in entries)
    counts["refused_but_changed_something"] = sum(bool(e["verdict"] != "admitted" and e["pods_in"]) for e in entries)
    states = list(poison.values())
    counts.update({"poison_pods_in": len(states), "poison_pods_isolated": states.count("isolated"),
                   "poison_pods_bound": states.count("bound"), "poison_pods_ignored": states.count("ignored"),
                   "poison_pods_stalled": states.count("stalled"), "poison_pods": poison, "by_apply": entries})
    return counts


def category_counts(categories: dict[str, str]) -> tuple[int, int, dict[str, int]]:
    bound = sum(c == BOUND for c in categories.values())
    pending = sum(c == PENDING_WITH_REASON for c in categories.values())
    lost: dict[str, int] = {}
    for c in categories.values():
        if c not in (BOUND, PENDING_WITH_REASON):
            lost[c] = lost.get(c, 0) + 1
    return bound, pending, lost
