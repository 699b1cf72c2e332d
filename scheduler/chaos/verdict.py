"""The chaos run's verdict, from first principles: what each node holds summed from the pods placed
on it (never from the node's own usage columns), which pods are lost, which are bound twice, and how
long the binding rate took to come back after each fault. Pure functions over plain data, so the
simulated and the kubernetes runs (and the tests) share them.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass

WILDCARD_IPS = ("", "0.0.0.0")

# ---- nodes over their allocatable ----------------------------------------------------------


@dataclass(frozen=True)
class Placed:
    """A pod that takes room on a node: bound there, or reserved (assumed) there."""

    node: str
    key: str  # namespace/name
    requests: dict[str, int]  # resource -> amount in allocatable's units; "pods" is 1
    host_ports: tuple[tuple[str, int, str], ...] = ()  # (protocol, port, host ip)


def _ports_conflict(a: tuple[str, int, str], b: tuple[str, int, str]) -> bool:
    """As NodePorts (HostPortInfo.CheckConflict): same protocol and port, and the IPs overlap."""
    if a[0] != b[0] or int(a[1]) != int(b[1]):
        return False
    return a[2] in WILDCARD_IPS or b[2] in WILDCARD_IPS or a[2] == b[2]


def overcommitted(allocatable: dict[str, dict[str, int]], placed: Iterable[Placed]) -> list[dict]:
    """Every (node, resource) whose placed pods ask for more than the node has, and every host-port clash.

    A resource the node does not list has an allocatable of 0; a pod on a node that does not exist
    is reported with resource "node".
    """
    sums: dict[str, dict[str, int]] = {}
    ports: dict[str, list[tuple[str, tuple]]] = {}
    found: list[dict] = []
    for p in placed:
        if p.node not in allocatable:
            found.append({"node": p.node, "resource": "node", "requested": 1, "allocatable": 0, "pods": [p.key]})
            continue
        node_sums = sums.setdefault(p.node, {})
        for resource, amount in p.requests.items():
            node_sums[resource] = node_sums.get(resource, 0) + int(amount)
        for port in p.host_ports:
            for other_key, other in ports.get(p.node, []):
                if _ports_conflict(port, other):
                    found.append({"node": p.node, "resource": f"hostPort {port[0]}/{port[1]}", "requested": 2,
                                  "allocatable": 1, "pods": sorted([other_key, p.key])})
            ports.setdefault(p.node, []).append((p.key, port))
    for node, node_sums in sorted(sums.items()):
        for resource, amount in sorted(node_sums.items()):
            limit = allocatable[node].get(resource, 0)
            if amount > limit:
                found.append({"node": node, "resource": resource, "requested": amount, "allocatable": limit})
    return found


def pending_with_room(allocatable: dict[str, dict[str, int]], placed: Iterable[Placed],
                      pending: Iterable[Placed]) -> list[dict]:
    """Pending pods that some node has room for, counted from the pods on it: room the scheduler
    believes taken (a leaked usage delta) shows here, as an overcommit shows above. For pods with no
    node selector, affinity or tolerations to honour (the chaos run's own); `Placed.node` is ignored."""
    used: dict[str, dict[str, int]] = {name: {} for name in allocatable}
    ports: dict[str, list[tuple]] = {name: [] for name in allocatable}
    for p in placed:
        if p.node in used:
            for resource, amount in p.requests.items():
                used[p.node][resource] = used[p.node].get(resource, 0) + int(amount)
            ports[p.node].extend(p.host_ports)
    found = []
    for pod in pending:
        for name in sorted(allocatable):
            fits = all(used[name].get(r, 0) + int(a) <= allocatable[name].get(r, 0) for r, a in pod.requests.items() if a)
            if fits and not any(_ports_conflict(mine, theirs) for mine in pod.host_ports for theirs in ports[name]):
                found.append({"pod": pod.key, "node": name})
                break
    return found


# ---- lost pods -----------------------------------------------------------------------------

BOUND, PENDING_WITH_REASON = "bound", "pending_with_reason"
# The ways to be lost.
MISSING, ASSUMED_STUCK, NO_REASON, NOT_QUEUED = "missing", "assumed_stuck", "pending_without_reason", "not_queued"


@dataclass(frozen=True)
class PodState:
    exists: bool
    bound: bool = False
    assumed: bool = False  # reserved on a node, binding not done
    condition_status: str = ""  # PodScheduled: "True", "False" or ""
    condition_reason: str = ""
    condition_message: str = ""
    queued: bool = False  # in the scheduling queue (active, backoff, unschedulable or in flight)


def classify(state: PodState) -> str:
    """bound, pending_with_reason, or why the pod is lost.

    A pod is LOST when, after the run and its settle time, it is neither bound nor
    pending-and-queued-with-a-reason: pending (not bound, not reserved) with PodScheduled=False and
    a reason and message saying why, and present in the scheduling queue so it will be tried again.
    A pod whose row vanished, a pod still reserved (assumed) after the settle time, a pending pod with
    no reason, and a pending pod the queue forgot are all lost.
    """
    if not state.exists:
        return MISSING
    if state.bound:
        return BOUND
    if state.assumed:
        return ASSUMED_STUCK
    if state.condition_status != "False" or not state.condition_reason or not state.condition_message:
        return NO_REASON
    if not state.queued:
        return NOT_QUEUED
    return PENDING_WITH_REASON


def is_lost(category: str) -> bool:
    return category not in (BOUND, PENDING_WITH_REASON)


def is_transient(state: PodState) -> bool:
    """Pending for a reason that passes by itself (a refused binding in backoff), not for want of room."""
    return classify(state) == PENDING_WITH_REASON and state.condition_reason != "Unschedulable"


def steady(categories: Iterable[str], transient: int = 0) -> bool:
    """Nothing left to wait for: no pod lost, and none pending for a reason that passes by itself."""
    return transient == 0 and not any(is_lost(c) for c in categories)


# ---- double bindings -----------------------------------------------------------------------


@dataclass(frozen=True)
class BindingRecord:
    uid: str
    key: str  # namespace/name
    node: str


def double_bound(bindings: Iterable[BindingRecord], current_node: dict[str, str]) -> list[dict]:
    """Pods bound more than once: a uid with two or more binding records, or whose record names a
    node other than the one the pod is on now (`current_node`: key -> node, "" when not bound)."""
    by_uid: dict[str, list[BindingRecord]] = {}
    for b in bindings:
        by_uid.setdefault(b.uid, []).append(b)
    found = []
    for uid, records in sorted(by_uid.items()):
        if len(records) > 1:
            found.append({"uid": uid, "pods": sorted({r.key for r in records}), "nodes": sorted(r.node for r in records),
                          "why": f"{len(records)} binding records"})
            continue
        record = records[0]
        now = current_node.get(record.key)
        if now is not None and now != record.node:
            found.append({"uid": uid, "pods": [record.key], "nodes": [record.node, now or "(not bound)"],
                          "why": "bound to a node other than its binding record's"})
    return found


# ---- recovery after a fault ----------------------------------------------------------------

BEFORE_S, WINDOW_S, SHARE, STEP_S = 10.0, 2.0, 0.5, 0.1


def recovery(bind_times: list[float], fault_at: float, *, until: float, before: float = BEFORE_S,
             window: float = WINDOW_S, share: float = SHARE, step: float = STEP_S) -> dict:
    """How long bindings took to come back after a fault at `fault_at` (all times in seconds, sorted).

    pre_rate: bindings per second in the `before` seconds before the fault.
    recovery_s: from the fault to the END of the first `window`-second window (sliding by `step`,
      starting at the fault) whose binding rate is at least `share` of pre_rate; with no binding
      before the fault, to the first binding after it. None when neither happens by `until`.
      A fault that changes nothing therefore reads `window` seconds.
    first_binding_s: from the fault to the first binding after it.
    """
    count = lambda lo, hi: bisect.bisect_left(bind_times, hi) - bisect.bisect_left(bind_times, lo)  # noqa: E731
    pre_rate = count(fault_at - before, fault_at) / before
    i = bisect.bisect_left(bind_times, fault_at)
    first = bind_times[i] - fault_at if i < len(bind_times) and bind_times[i] <= until else None
    recovered = None
    if pre_rate == 0:
        recovered = first
    else:
        start = fault_at
        while start + window <= until + 1e-9:
            if count(start, start + window) / window >= share * pre_rate:
                recovered = start + window - fault_at
                break
            start += step
    return {"pre_rate_per_s": round(pre_rate, 2), "recovery_s": None if recovered is None else round(recovered, 2),
            "first_binding_s": None if first is None else round(first, 3)}
