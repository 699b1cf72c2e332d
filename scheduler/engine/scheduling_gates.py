"""The SchedulingGates PreEnqueue plugin (upstream framework/plugins/schedulinggates): a pod with a
non-empty spec.schedulingGates is never attempted; the queue holds it as gated, the pod carries
PodScheduled=False with reason SchedulingGated, and removing its last gate queues it at once."""

from __future__ import annotations

NAME = "SchedulingGates"
REASON = "SchedulingGated"  # v1.PodReasonSchedulingGated
MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def gates_of(manifest: dict | None) -> list[str]:
    """The gate names of a stored pod manifest (empty: the pod may be queued)."""
    spec = (manifest or {}).get("spec") or {}
    return [g.get("name", "") for g in spec.get("schedulingGates") or () if isinstance(g, dict)]


def added_gates(old: dict | None, new: dict | None) -> list[tuple[int, str]]:
    """As validateOnlyDeletedSchedulingGates: the gates of new (index, name) that old did not have."""
    before = set(gates_of(old))
    return [(i, name) for i, name in enumerate(gates_of(new)) if name not in before]


def added_gates_problem(index: int, name: str) -> tuple[str, str]:
    """The field path and the API server's words refusing a gate added on update."""
    return (f"spec.schedulingGates[{index}].name",
            f"Forbidden: only deletion is allowed, but found new scheduling gate '{name}'")
