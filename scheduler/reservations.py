"""Atomic node reservations in Postgres: no overcommit and no double placement across workers.

Every change to a node's usage is one conditional UPDATE (compare-and-set): a reservation
only lands if the room is still there, in the database's own view at commit time. The pod
row is claimed in the same transaction, so a pod is reserved on at most one node.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from .engine.pods import PodSpec
from .engine.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from .models import Node, Pod


def pod_usage_fields(pod: PodSpec) -> dict:
    """The Pod row columns that record what the pod takes from a node."""
    return {
        "req_cpu": pod.requests.get(CPU, 0),
        "req_memory": pod.requests.get(MEMORY, 0),
        "req_ephemeral": pod.requests.get(EPHEMERAL_STORAGE, 0),
        "req_scalar": {r: v for r, v in pod.requests.items() if r not in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS) and v},
        "nonzero_cpu": pod.nonzero_requests[CPU],
        "nonzero_memory": pod.nonzero_requests[MEMORY],
        "host_ports": [[p.protocol, p.port, p.ip] for p in pod.host_ports],
    }


def _apply_delta(node_name: str, usage: dict, sign: int, *, check_fit: bool, spec_version: int | None = None) -> bool:
    """Add (sign=+1) or remove (sign=-1) a pod's usage on a node with one conditional UPDATE."""
    nodes = Node.objects.filter(name=node_name)
    if spec_version is not None:
        nodes = nodes.filter(spec_version=spec_version)
    if check_fit:
        # As NodeResourcesFit: a zero request never fails; the pod count always counts.
        nodes = nodes.filter(req_pods__lte=F("alloc_pods") - 1)
        if usage["req_cpu"]:
            nodes = nodes.filter(req_cpu__lte=F("alloc_cpu") - usage["req_cpu"])
        if usage["req_memory"]:
            nodes = nodes.filter(req_memory__lte=F("alloc_memory") - usage["req_memory"])
        if usage["req_ephemeral"]:
            nodes = nodes.filter(req_ephemeral__lte=F("alloc_ephemeral") - usage["req_ephemeral"])
    changes = {
        "req_cpu": F("req_cpu") + sign * usage["req_cpu"],
        "req_memory": F("req_memory") + sign * usage["req_memory"],
        "req_ephemeral": F("req_ephemeral") + sign * usage["req_ephemeral"],
        "req_pods": F("req_pods") + sign,
        "nonzero_cpu": F("nonzero_cpu") + sign * usage["nonzero_cpu"],
        "nonzero_memory": F("nonzero_memory") + sign * usage["nonzero_memory"],
        "generation": F("generation") + 1,
    }
    if usage["req_scalar"] or usage["host_ports"]:
        # JSON columns cannot be compared-and-set column-wise: read, check, and write back
        # conditionally on the generation we read (any concurrent change makes us retry).
        current = nodes.values_list("generation", "alloc_scalar", "req_scalar", "used_ports").first()
        if current is None:
            return False
        generation, alloc_scalar, req_scalar, used_ports = current
        req_scalar = dict(req_scalar or {})
        for r, v in usage["req_scalar"].items():
            req_scalar[r] = req_scalar.get(r, 0) + sign * v
            if check_fit and req_scalar[r] > (alloc_scalar or {}).get(r, 0):
                return False
        ports = [list(p) for p in used_ports or []]
        for p in usage["host_ports"]:
            if sign > 0:
                if check_fit and any(_ports_conflict(p, q) for q in ports):
                    return False
                ports.append(list(p))
            elif list(p) in ports:
                ports.remove(list(p))
        nodes = nodes.filter(generation=generation)
        changes["req_scalar"] = {r: v for r, v in req_scalar.items() if v}
        changes["used_ports"] = ports
    return nodes.update(**changes) == 1


def _ports_conflict(a, b) -> bool:
    """As HostPortInfo.CheckConflict: same protocol and port, and either IP is the wildcard or both equal."""
    (pa, porta, ipa), (pb, portb, ipb) = a, b
    if pa != pb or int(porta) != int(portb):
        return False
    wildcard = "0.0.0.0"
    return ipa == wildcard or ipb == wildcard or ipa == ipb


def reserve(*, pod_id: int, usage: dict, node_name: str, spec_version: int | None = None) -> bool:
    """Claim the pod and take its room on the node, or change nothing and return False."""
    with transaction.atomic():
        claimed = Pod.objects.filter(pk=pod_id, node_name="", assumed_node="", deleting=False).update(
            assumed_node=node_name, assumed_at=timezone.now()
        )
        if claimed != 1:
            return False
        if not _apply_delta(node_name, usage, +1, check_fit=True, spec_version=spec_version):
            transaction.set_rollback(True)
            return False
    return True


def release_assumed(*, pod_id: int, node_name: str, usage: dict) -> bool:
    """Give back an assumed (not bound) pod's room. Idempotent: only the first call releases."""
    with transaction.atomic():
        released = Pod.objects.filter(pk=pod_id, assumed_node=node_name, node_name="").update(assumed_node="", assumed_at=None)
        if released != 1:
            return False
        _apply_delta(node_name, usage, -1, check_fit=False)
    return True


def release_node_usage(*, node_name: str, usage: dict) -> None:
    """Give back a bound pod's room (the pod is gone). Call inside the transaction that deletes it."""
    _apply_delta(node_name, usage, -1, check_fit=False)


def add_node_usage(*, node_name: str, usage: dict) -> None:
    """Count a pod that arrives already bound (spec.nodeName set), fitting or not, as the kubelet would."""
    _apply_delta(node_name, usage, +1, check_fit=False)


def node_recount(node: Node) -> None:
    """Recompute a node's usage from the pods bound or assumed on it (a node created after its pods)."""
    from django.db.models import Q

    usage = {"req_cpu": 0, "req_memory": 0, "req_ephemeral": 0, "req_pods": 0, "nonzero_cpu": 0, "nonzero_memory": 0}
    scalars: dict[str, int] = {}
    ports: list = []
    for pod in Pod.objects.filter(Q(node_name=node.name) | Q(node_name="", assumed_node=node.name)):
        for f in ("req_cpu", "req_memory", "req_ephemeral", "nonzero_cpu", "nonzero_memory"):
            usage[f] += getattr(pod, f)
        usage["req_pods"] += 1
        for r, v in (pod.req_scalar or {}).items():
            scalars[r] = scalars.get(r, 0) + v
        ports.extend(pod.host_ports or [])
    for f, v in usage.items():
        setattr(node, f, v)
    node.req_scalar = scalars
    node.used_ports = ports
    node.generation += 1


def _values(rows: list[tuple]) -> tuple[str, list]:
    """A VALUES list with placeholders for `rows`, and the flat parameters."""
    width = len(rows[0])
    one = "(" + ", ".join(["%s"] * width) + ")"
    return ", ".join([one] * len(rows)), [v for row in rows for v in row]


_CLAIM = """
WITH v(id, node) AS (VALUES {values})
UPDATE scheduler_pod SET assumed_node = v.node, assumed_at = %s
FROM v
WHERE scheduler_pod.id = v.id AND scheduler_pod.node_name = '' AND scheduler_pod.assumed_node = ''
  AND scheduler_pod.deleting = %s
RETURNING scheduler_pod.id
"""

# As NodeResourcesFit: the pod count always counts; a zero request never fails.
_TAKE = """
WITH v(name, cpu, mem, eph, pods, nzc, nzm, specv) AS (VALUES {values})
UPDATE scheduler_node SET
  req_cpu = req_cpu + v.cpu, req_memory = req_memory + v.mem, req_ephemeral = req_ephemeral + v.eph,
  req_pods = req_pods + v.pods, nonzero_cpu = nonzero_cpu + v.nzc, nonzero_memory = nonzero_memory + v.nzm,
  generation = generation + 1
FROM v
WHERE scheduler_node.name = v.name AND (v.specv = 0 OR scheduler_node.spec_version = v.specv)
  AND req_pods + v.pods <= alloc_pods
  AND (v.cpu = 0 OR req_cpu + v.cpu <= alloc_cpu)
  AND (v.mem = 0 OR req_memory + v.mem <= alloc_memory)
  AND (v.eph = 0 OR req_ephemeral + v.eph <= alloc_ephemeral)
RETURNING scheduler_node.name
"""


def reserve_many(placements: list[tuple[int, dict, str, int | None]]) -> tuple[set[int], set[int]]:
    """Reserve many (pod id, usage, node, node spec_version) placements in one transaction.

    Returns (conflicts, gone): pods whose node had no room left (or changed), and pods that
    were deleted or placed meanwhile. Everything else is reserved when this returns. Pods on
    one node are taken together, so the node's check is against their sum.
    """
    if not placements:
        return set(), set()
    conflicts: set[int] = set()
    simple = [p for p in placements if not p[1]["req_scalar"] and not p[1]["host_ports"]]
    special = [p for p in placements if p[1]["req_scalar"] or p[1]["host_ports"]]
    with transaction.atomic(), connection.cursor() as cursor:
        claimed: set[int] = set()
        if simple:
            values, params = _values([(pod_id, node) for pod_id, _, node, _ in simple])
            cursor.execute(_CLAIM.format(values=values), [*params, timezone.now(), False])
            claimed = {row[0] for row in cursor.fetchall()}
        by_node: dict[str, list] = {}
        for p in simple:
            if p[0] in claimed:
                by_node.setdefault(p[2], []).append(p)
        if by_node:
            rows = []
            for node, group in by_node.items():
                total = [sum(p[1][f] for p in group) for f in ("req_cpu", "req_memory", "req_ephemeral")]
                nonzero = [sum(p[1][f] for p in group) for f in ("nonzero_cpu", "nonzero_memory")]
                rows.append((node, *total, len(group), *nonzero, group[0][3] if group[0][3] is not None else 0))
            values, params = _values(rows)
            cursor.execute(_TAKE.format(values=values), params)
            taken = {row[0] for row in cursor.fetchall()}
            lost = [p[0] for node, group in by_node.items() if node not in taken for p in group]
            if lost:
                Pod.objects.filter(pk__in=lost).update(assumed_node="", assumed_at=None)
                conflicts.update(lost)
        gone = {p[0] for p in simple if p[0] not in claimed}
        for pod_id, usage, node, spec_version in special:
            if reserve(pod_id=pod_id, usage=usage, node_name=node, spec_version=spec_version):
                continue
            still_there = Pod.objects.filter(pk=pod_id, node_name="", assumed_node="", deleting=False).exists()
            (conflicts if still_there else gone).add(pod_id)
    return conflicts, gone
