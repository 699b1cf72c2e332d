"""Atomic node reservations in Postgres: no overcommit and no double placement across workers.

Every change to a node's usage applies exactly once, atomically: the column-wise changes are one
conditional UPDATE (compare-and-set: a reservation only lands if the room is still there, in the
database's own view at commit time); the JSON columns (extended resources, host ports) are read and
written under the node row's lock. The pod row is claimed in the same transaction, and only in the
version the worker scheduled, so a pod is reserved on at most one node with the requests it was
placed with. A periodic recount (usage_recount) recomputes every node's usage from its pods and
repairs, logs and counts any drift.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import BigIntegerField, F, Q, TextField, Value
from django.db.models.functions import Cast
from django.utils import timezone

from ..engine.pods import PodSpec
from ..engine.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from ..models import Node, Pod
from .sql import lock_in_order, rows_source, update_from_values

log = logging.getLogger(__name__)

try:  # Errors that blame the database, not a pod (COPY on a raw cursor raises psycopg's own, unwrapped).
    import psycopg

    SYSTEMIC_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError, psycopg.OperationalError,
                                                        psycopg.InterfaceError)
except ImportError:  # pragma: no cover - the embedded mode needs no psycopg
    SYSTEMIC_ERRORS = (OperationalError, InterfaceError)

USAGE_FIELDS = ("req_cpu", "req_memory", "req_ephemeral", "req_scalar", "nonzero_cpu", "nonzero_memory", "host_ports")


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


def row_usage(pod: Pod) -> dict:
    """What a Pod row records it takes from its node (the arguments of the functions below)."""
    return {f: getattr(pod, f) for f in USAGE_FIELDS}


def _int64(amount: int) -> Value:
    """An amount as SQL bigint: Django binds a plain int beside F() as a 32-bit integer on Postgres, so a
    memory delta of 2Gi or more would wrap (3Gi became -1Gi)."""
    return Value(amount, output_field=BigIntegerField())


def _apply_delta(node_name: str, usage: dict, sign: int, *, check_fit: bool, spec_version: int | None = None) -> bool:
    """Add (sign=+1) or remove (sign=-1) a pod's usage on a node, atomically; False if it does not fit (or no node).

    Without check_fit the change always applies while the node exists: a release or an arrival is
    never lost to a concurrent change (it waits for the row instead).
    """
    nodes = Node.objects.filter(name=node_name)
    if spec_version is not None:
        nodes = nodes.filter(spec_version=spec_version)
    if check_fit:
        # As NodeResourcesFit: a zero request never fails; the pod count always counts.
        nodes = nodes.filter(req_pods__lte=F("alloc_pods") - 1)
        if usage["req_cpu"]:
            nodes = nodes.filter(req_cpu__lte=F("alloc_cpu") - _int64(usage["req_cpu"]))
        if usage["req_memory"]:
            nodes = nodes.filter(req_memory__lte=F("alloc_memory") - _int64(usage["req_memory"]))
        if usage["req_ephemeral"]:
            nodes = nodes.filter(req_ephemeral__lte=F("alloc_ephemeral") - _int64(usage["req_ephemeral"]))
    changes = {
        "req_cpu": F("req_cpu") + _int64(sign * usage["req_cpu"]),
        "req_memory": F("req_memory") + _int64(sign * usage["req_memory"]),
        "req_ephemeral": F("req_ephemeral") + _int64(sign * usage["req_ephemeral"]),
        "req_pods": F("req_pods") + sign,
        "nonzero_cpu": F("nonzero_cpu") + _int64(sign * usage["nonzero_cpu"]),
        "nonzero_memory": F("nonzero_memory") + _int64(sign * usage["nonzero_memory"]),
        "generation": F("generation") + 1,
    }
    if not usage["req_scalar"] and not usage["host_ports"]:
        return nodes.update(**changes) == 1  # one statement: atomic by itself
    # JSON columns cannot be changed column-wise in SQL: read them under the row's lock (held to the
    # end of the caller's transaction), check, write. A concurrent change waits for the lock and then
    # reads what this one wrote, so neither is lost (a compare-and-set on the generation lost one).
    with transaction.atomic(savepoint=False):
        current = nodes.select_for_update().values_list("pk", "alloc_scalar", "req_scalar", "used_ports").first()
        if current is None:
            return False
        pk, alloc_scalar, req_scalar, used_ports = current
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
        changes["req_scalar"] = {r: v for r, v in req_scalar.items() if v}
        changes["used_ports"] = ports
        return Node.objects.filter(pk=pk).update(**changes) == 1


def _ports_conflict(a, b) -> bool:
    """As HostPortInfo.CheckConflict: same protocol and port, and either IP is the wildcard or both equal."""
    (pa, porta, ipa), (pb, portb, ipb) = a, b
    if pa != pb or int(porta) != int(portb):
        return False
    wildcard = "0.0.0.0"
    return ipa == wildcard or ipb == wildcard or ipa == ipb


def reserve(*, pod_id: int, usage: dict, node_name: str, spec_version: int | None = None,
            pod_version=None, attempts: int | None = None) -> bool:
    """Claim the pod (in the version read, when given) and take its room on the node, or change nothing and return False.

    `attempts`, when given, is the pod's attempt count with this attempt, written by the claim itself."""
    with transaction.atomic():
        claim = Pod.objects.filter(pk=pod_id, node_name="", assumed_node="", deleting=False)
        if pod_version is not None:
            claim = claim.filter(updated_at=pod_version)
        counted = {} if attempts is None else {"attempts": attempts}
        if claim.update(assumed_node=node_name, assumed_at=timezone.now(), binding_at=None, **counted) != 1:
            return False
        if not _apply_delta(node_name, usage, +1, check_fit=True, spec_version=spec_version):
            transaction.set_rollback(True)
            return False
    return True


def release_assumed(*, pod_id: int, node_name: str, usage: dict, condition: Q | None = None,
                    uncount_attempt: bool = False) -> bool:
    """Give back an assumed (not bound) pod's room. Idempotent: only the first call releases.

    `condition` narrows it further, checked in the same UPDATE (the reconciler: only if not marked binding).
    `uncount_attempt` takes back the attempt the claim counted (the worker's attempt was not recorded after all).
    """
    with transaction.atomic():
        pods = Pod.objects.filter(pk=pod_id, assumed_node=node_name, node_name="")
        if condition is not None:
            pods = pods.filter(condition)
        uncounted = {"attempts": F("attempts") - 1} if uncount_attempt else {}
        released = pods.update(assumed_node="", assumed_at=None, binding_at=None, **uncounted)
        if released != 1:
            return False
        if not _apply_delta(node_name, usage, -1, check_fit=False):
            log.info("released pod %s from node %s, which no longer exists", pod_id, node_name)
    return True


def release_node_usage(*, node_name: str, usage: dict) -> None:
    """Give back a bound pod's room (the pod is gone). Call inside the transaction that deletes it."""
    _apply_delta(node_name, usage, -1, check_fit=False)


def add_node_usage(*, node_name: str, usage: dict) -> None:
    """Count a pod that arrives already bound (spec.nodeName set), fitting or not, as the kubelet would."""
    _apply_delta(node_name, usage, +1, check_fit=False)


def node_recount(node: Node) -> None:
    """Set a node's usage from the pods bound or assumed on it (a node created after its pods)."""
    counted = _usage_by_node([node.name]).get(node.name) or _ZERO_USAGE
    for f, v in counted.items():
        setattr(node, f, type(v)(v) if isinstance(v, (dict, list)) else v)
    node.generation += 1


# A placement's attempt count (NULL: as it is) is written with the claim: the pod row's one update of the
# attempt, where a separate update of the count cost the batch write a statement and every pod a row version.
_CLAIM = """
WITH v(id, node, version, attempts) AS ({values})
UPDATE scheduler_pod SET assumed_node = v.node, assumed_at = %s, binding_at = NULL,
  attempts = COALESCE(v.attempts, scheduler_pod.attempts)
FROM v
WHERE scheduler_pod.id = v.id AND scheduler_pod.node_name = '' AND scheduler_pod.assumed_node = ''
  AND scheduler_pod.deleting = %s AND (v.version IS NULL OR scheduler_pod.updated_at = v.version)
RETURNING scheduler_pod.id, scheduler_pod.priority
"""

# As NodeResourcesFit: the pod count always counts; a zero request never fails. As the nominator's filter pass
# (RunFilterPluginsWithNominatedPods), the pods nominated to the node (`n`: not placed, not being deleted; the
# pods just claimed are assumed, so not counted) with a priority >= the highest of the group's pods count too:
# never more than upstream counts for the group's last pod, placed one at a time. Each worker's nominator keeps
# a nominated room from its own placements; this keeps it from two workers' at once, each placing a pod in the
# room's slack on a snapshot without the other's (the preemptor then no longer fits and preempts again). A
# node without nominated pods costs one index probe (pod_nominated).
_TAKE = """
WITH v(name, cpu, mem, eph, pods, nzc, nzm, specv, prio) AS ({values}),
n AS (
  SELECT v.name, COALESCE(SUM(p.req_cpu), 0) AS cpu, COALESCE(SUM(p.req_memory), 0) AS mem,
         COALESCE(SUM(p.req_ephemeral), 0) AS eph, COUNT(p.id) AS pods
  FROM v LEFT JOIN scheduler_pod p ON p.nominated_node = v.name AND p.nominated_node <> '' AND p.node_name = ''
    AND p.assumed_node = '' AND NOT p.deleting AND p.priority >= v.prio
  GROUP BY v.name
)
UPDATE scheduler_node SET
  req_cpu = req_cpu + v.cpu, req_memory = req_memory + v.mem, req_ephemeral = req_ephemeral + v.eph,
  req_pods = req_pods + v.pods, nonzero_cpu = nonzero_cpu + v.nzc, nonzero_memory = nonzero_memory + v.nzm,
  generation = generation + 1
FROM v JOIN n ON n.name = v.name
WHERE scheduler_node.name = v.name AND (v.specv = 0 OR scheduler_node.spec_version = v.specv)
  AND req_pods + v.pods + n.pods <= alloc_pods
  AND (v.cpu = 0 OR req_cpu + v.cpu + n.cpu <= alloc_cpu)
  AND (v.mem = 0 OR req_memory + v.mem + n.mem <= alloc_memory)
  AND (v.eph = 0 OR req_ephemeral + v.eph + n.eph <= alloc_ephemeral)
RETURNING scheduler_node.name, scheduler_node.generation
"""


@dataclass
class ReserveResult:
    """What reserve_many could not reserve, by pod id (everything else is reserved)."""

    conflicts: set[int] = field(default_factory=set)  # the node had no room left (or changed): place it again
    gone: set[int] = field(default_factory=set)  # deleted, placed meanwhile, or changed since it was read
    changed: set[int] = field(default_factory=set)  # of `gone`: still pending, in a newer version (schedule it again)
    errors: dict[int, str] = field(default_factory=dict)  # its reservation raised: this pod, not the batch, fails
    # Node -> its generation after this reservation's take (nodes taken column-wise only): a worker
    # whose snapshot had the generation before it knows that nobody else changed the node since.
    generations: dict[str, int] = field(default_factory=dict)


# A placement: (pod id, usage, node, node spec_version or None, pod updated_at as read or None[, attempts]):
# attempts, when there and not None, is the pod's attempt count with this attempt, which its claim writes (and a
# claim undone for want of room takes back).
Placement = tuple  # (int, dict, str, int | None, object[, int | None])


def _attempts(placement: Placement) -> int | None:
    return placement[5] if len(placement) > 5 else None


class TopologyClockMoved(Exception):
    """A guard's refusal: a pod with required anti-affinity was claimed since the worker's snapshot,
    so the batch is reserved again with each placement checked (scheduler/topology_claims.py)."""


def reserve_many(placements: list[Placement], *, guard=None) -> ReserveResult:
    """Reserve many placements in one transaction; a pod whose reservation raises fails alone.

    The common path is one transaction for the whole batch. If it raises (a pod row no reservation
    can be computed from, a value the database refuses), the batch is reserved again pod by pod, each
    in its own transaction, and only the pods that raise again are reported as errors.
    """
    if not placements:
        return ReserveResult()
    try:
        return _reserve_batch(placements, guard)
    except (TopologyClockMoved, *SYSTEMIC_ERRORS):
        raise  # the database itself is in trouble (no pod is to blame), or the guard refused
    except Exception:  # noqa: BLE001 - isolated below, pod by pod
        if len(placements) == 1:
            pod_id = placements[0][0]
            log.exception("reserving pod %s failed", pod_id)
            return ReserveResult(errors={pod_id: _internal_error("reserving", placements[0])})
        log.exception("reserving a batch of %d pods failed: reserving them one by one", len(placements))
    result = ReserveResult()
    for placement in placements:
        try:
            one = _reserve_batch([placement], guard)
        except (TopologyClockMoved, *SYSTEMIC_ERRORS):
            raise
        except Exception:  # noqa: BLE001
            log.exception("reserving pod %s on node %s failed", placement[0], placement[2])
            result.errors[placement[0]] = _internal_error("reserving", placement)
            continue
        result.conflicts |= one.conflicts
        result.gone |= one.gone
        result.changed |= one.changed
        result.generations.update(one.generations)
    return result


def _internal_error(what: str, placement: Placement) -> str:
    import sys

    exc = sys.exc_info()[1]
    text = str(exc).strip().splitlines()
    return f"internal error {what} the pod on node {placement[2]}: {type(exc).__name__}" + (f": {text[0]}" if text else "")


def _reserve_batch(placements: list[Placement], guard=None) -> ReserveResult:
    """Pods on one node are taken together, so the node's check is against their sum. `guard(cursor)`,
    when given, runs first in the transaction (it may raise to refuse the whole batch)."""
    result = ReserveResult()
    simple = [p for p in placements if not p[1]["req_scalar"] and not p[1]["host_ports"]]
    special = [p for p in placements if p[1]["req_scalar"] or p[1]["host_ports"]]
    with transaction.atomic(), connection.cursor() as cursor:
        if guard is not None:
            guard(cursor)
        claimed: set[int] = set()
        priorities: dict[int, int] = {}
        if simple:
            adapt = connection.ops.adapt_datetimefield_value  # the column's own form (SQLite keeps text)
            values, params = rows_source(["bigint", "text", "timestamptz", "integer"],
                                         [(p[0], p[2], adapt(p[4]), _attempts(p)) for p in simple])
            cursor.execute(_CLAIM.format(values=values), [*params, timezone.now(), False])
            priorities = dict(cursor.fetchall())  # the claimed pods' priorities (the take counts nominations by them)
            claimed = set(priorities)
        by_node: dict[str, list] = {}
        for p in simple:
            if p[0] in claimed:
                by_node.setdefault(p[2], []).append(p)
        if by_node:
            rows = []
            for node, group in by_node.items():
                total = [sum(p[1][f] for p in group) for f in ("req_cpu", "req_memory", "req_ephemeral")]
                nonzero = [sum(p[1][f] for p in group) for f in ("nonzero_cpu", "nonzero_memory")]
                highest = max(priorities.get(p[0], 0) for p in group)
                rows.append((node, *total, len(group), *nonzero, group[0][3] if group[0][3] is not None else 0, highest))
            values, params = rows_source(["text", "bigint", "bigint", "bigint", "bigint", "bigint", "bigint", "bigint",
                                          "bigint"], rows)
            lock_in_order(Node, "name", by_node)  # another worker's batch may take some of the same nodes
            cursor.execute(_TAKE.format(values=values), params)
            taken = dict(cursor.fetchall())
            result.generations.update(taken)
            lost = [p[0] for node, group in by_node.items() if node not in taken for p in group]
            if lost:
                counted = {p[0] for p in simple if _attempts(p) is not None}
                uncount = [pk for pk in lost if pk in counted]
                if uncount:  # the claims above counted these attempts: the pods are placed again
                    Pod.objects.filter(pk__in=uncount).update(assumed_node="", assumed_at=None,
                                                              attempts=F("attempts") - 1)
                if len(uncount) < len(lost):
                    Pod.objects.filter(pk__in=[pk for pk in lost if pk not in counted]).update(assumed_node="",
                                                                                               assumed_at=None)
                result.conflicts.update(lost)
        result.gone = {p[0] for p in simple if p[0] not in claimed}
        for placement in special:
            pod_id, usage, node, spec_version, version = placement[:5]
            if reserve(pod_id=pod_id, usage=usage, node_name=node, spec_version=spec_version, pod_version=version,
                       attempts=_attempts(placement)):
                continue
            pending = Pod.objects.filter(pk=pod_id, node_name="", assumed_node="", deleting=False)
            if not pending.exists():
                result.gone.add(pod_id)
            elif version is not None and not pending.filter(updated_at=version).exists():
                result.gone.add(pod_id)
            else:
                result.conflicts.add(pod_id)
        if result.gone:
            # Still pending, only newer than the version scheduled: the worker places the new version.
            result.changed = set(Pod.objects.filter(pk__in=result.gone, node_name="", assumed_node="", deleting=False)
                                 .values_list("pk", flat=True))
    return result


# ---- the recount ----------------------------------------------------------------------------

_ZERO_USAGE = {"req_cpu": 0, "req_memory": 0, "req_ephemeral": 0, "req_pods": 0, "nonzero_cpu": 0,
               "nonzero_memory": 0, "req_scalar": {}, "used_ports": []}
# The node columns the recount owns, and the resource label each is counted under.
_RECOUNTED = (("req_cpu", CPU), ("req_memory", MEMORY), ("req_ephemeral", EPHEMERAL_STORAGE), ("req_pods", PODS),
              ("nonzero_cpu", "nonzero-cpu"), ("nonzero_memory", "nonzero-memory"))
HOST_PORTS_LABEL = "hostports"
RECOUNT_CHUNK = 1000  # nodes locked at once: a pass never holds more, and never for long

# What every pod bound (node_name) or assumed (assumed_node) on each of the given nodes takes, in one
# aggregate over the pod table (the pod_node_name and pod_assumed_node indexes). A pod row whose JSON
# is not what the service writes (a number where a map belongs) counts what can be read of it.
_USAGE_CTES = """
WITH pods AS (
  SELECT CASE WHEN node_name <> '' THEN node_name ELSE assumed_node END AS node, req_cpu, req_memory,
         req_ephemeral, nonzero_cpu, nonzero_memory,
         CASE WHEN jsonb_typeof(req_scalar) = 'object' THEN req_scalar ELSE '{}'::jsonb END AS req_scalar,
         CASE WHEN jsonb_typeof(host_ports) = 'array' THEN host_ports ELSE '[]'::jsonb END AS host_ports
  FROM scheduler_pod
  WHERE {pods}
), sums AS (
  SELECT node, sum(req_cpu) AS cpu, sum(req_memory) AS mem, sum(req_ephemeral) AS eph, count(*) AS pods,
         sum(nonzero_cpu) AS nzc, sum(nonzero_memory) AS nzm
  FROM pods GROUP BY node
), scalars AS (
  SELECT node, jsonb_object_agg(resource, amount) AS scalar FROM (
    SELECT node, e.key AS resource, sum((e.value)::numeric)::bigint AS amount
    FROM pods, jsonb_each(pods.req_scalar) e WHERE jsonb_typeof(e.value) = 'number'
    GROUP BY node, e.key HAVING sum((e.value)::numeric) <> 0) per_resource
  GROUP BY node
), ports AS (
  SELECT node, jsonb_agg(e.value ORDER BY e.value) AS ports
  FROM pods, jsonb_array_elements(pods.host_ports) e GROUP BY node
)
"""
_AGGREGATE = _USAGE_CTES.replace("{pods}", "node_name = ANY(%(names)s) OR (node_name = '' AND assumed_node = ANY(%(names)s))") + """
SELECT s.node, s.cpu, s.mem, s.eph, s.pods, s.nzc, s.nzm, coalesce(sc.scalar, '{}'::jsonb), coalesce(p.ports, '[]'::jsonb)
FROM sums s LEFT JOIN scalars sc ON sc.node = s.node LEFT JOIN ports p ON p.node = s.node
"""
# The recount's read-only look (no lock), in one statement so one snapshot: every change to what a node's pods
# take writes the node's row in the same transaction, so a node whose columns differ from its pods' sums here
# has drifted. It may name more than drifted (JSON compared as stored: a recorded zero amount, ports in
# another order), never fewer: _drift decides on the locked rows.
_MAYBE_DRIFTED = _USAGE_CTES.replace("{pods}", "node_name <> '' OR assumed_node <> ''") + """
SELECT n.id FROM scheduler_node n
LEFT JOIN sums s ON s.node = n.name LEFT JOIN scalars sc ON sc.node = n.name LEFT JOIN ports p ON p.node = n.name
WHERE (n.req_cpu, n.req_memory, n.req_ephemeral, n.req_pods, n.nonzero_cpu, n.nonzero_memory)
      IS DISTINCT FROM (coalesce(s.cpu, 0), coalesce(s.mem, 0), coalesce(s.eph, 0), coalesce(s.pods, 0),
                        coalesce(s.nzc, 0), coalesce(s.nzm, 0))
   OR n.req_scalar IS DISTINCT FROM coalesce(sc.scalar, '{}'::jsonb)
   OR n.used_ports IS DISTINCT FROM coalesce(p.ports, '[]'::jsonb)
ORDER BY n.id
"""


def _usage_by_node(names: list[str]) -> dict[str, dict]:
    """Node name -> the usage its bound and assumed pods add up to (nodes without pods are absent)."""
    if not names:
        return {}
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_AGGREGATE, {"names": list(names)})
            rows = cursor.fetchall()

        def js(value):
            return json.loads(value) if isinstance(value, str) else value

        return {node: {"req_cpu": int(cpu), "req_memory": int(mem), "req_ephemeral": int(eph), "req_pods": int(pods),
                       "nonzero_cpu": int(nzc), "nonzero_memory": int(nzm), "req_scalar": js(scalar),
                       "used_ports": js(ports)}
                for node, cpu, mem, eph, pods, nzc, nzm, scalar, ports in rows}
    # SQLite (the embedded mode: one process, small clusters): the same sums, added up here.
    out: dict[str, dict] = {}
    pods = Pod.objects.filter(Q(node_name__in=names) | Q(node_name="", assumed_node__in=names))
    for node_name, assumed_node, *usage in pods.values_list("node_name", "assumed_node", *USAGE_FIELDS):
        u = dict(zip(USAGE_FIELDS, usage))
        total = out.setdefault(node_name or assumed_node, {**_ZERO_USAGE, "req_scalar": {}, "used_ports": []})
        for f in ("req_cpu", "req_memory", "req_ephemeral", "nonzero_cpu", "nonzero_memory"):
            total[f] += u[f]
        total["req_pods"] += 1
        for r, v in (u["req_scalar"] if isinstance(u["req_scalar"], dict) else {}).items():
            if isinstance(v, int):
                total["req_scalar"][r] = total["req_scalar"].get(r, 0) + v
        total["used_ports"] += u["host_ports"] if isinstance(u["host_ports"], list) else []
    for total in out.values():
        total["req_scalar"] = {r: v for r, v in total["req_scalar"].items() if v}
        total["used_ports"] = sorted(total["used_ports"])
    return out


def _drift(old: dict, new: dict) -> list[tuple[str, object, object]]:
    """(resource label, recorded, counted) for every resource whose recorded usage is not what the pods take."""
    found = [(label, old[f], new[f]) for f, label in _RECOUNTED if old[f] != new[f]]
    recorded = {r: v for r, v in (old["req_scalar"] if isinstance(old["req_scalar"], dict) else {}).items() if v}
    for resource in sorted(set(recorded) | set(new["req_scalar"])):
        if recorded.get(resource, 0) != new["req_scalar"].get(resource, 0):
            found.append((resource, recorded.get(resource, 0), new["req_scalar"].get(resource, 0)))
    if not isinstance(old["req_scalar"], dict) and not found:
        found.append(("extended-resources", old["req_scalar"], new["req_scalar"]))
    ports = old["used_ports"]
    if not isinstance(ports, list) or sorted(ports, key=repr) != sorted(new["used_ports"], key=repr):
        found.append((HOST_PORTS_LABEL, ports, new["used_ports"]))
    return found


_EMPTY_JSON = {"{}": {}, "[]": []}


def _json_text(text: str | None):
    """A JSON column read as text, decoded (the empty map and list without the decoder)."""
    empty = _EMPTY_JSON.get(text)
    if empty is not None:
        return type(empty)()
    return None if text is None else json.loads(text)


def usage_recount(*, chunk: int = RECOUNT_CHUNK, on_repair=None) -> dict:
    """Recompute every node's usage from the pods bound or assumed on it; repair drift, log and report it.

    Why this cannot race a reservation into overcommit (or undo one):
      - Every change to what a pod takes from node N (a claim and its take, a release, a pod arriving
        bound or leaving) is made in a transaction that also writes N's row; moving a reservation to
        a binding on the same node changes nothing N counts.
      - A pass locks a chunk of node rows first (in id order, SKIP LOCKED), and only then, in a new
        statement (READ COMMITTED: a new snapshot), sums the pods of the nodes it holds.
      - So for a node it holds, every transaction that touched it either committed before the lock
        (its pod rows are in the sum) or will write the node after this pass commits (its pod rows
        are not in the sum, and its delta applies on top of the recounted value, checked against
        allocatable then). A node another transaction is writing at this moment is skipped (SKIP
        LOCKED), not waited for: the pass never waits on a lock, so it can never be part of a
        deadlock, and the skipped node is recounted by the next pass.
      - On Postgres the locked pass takes only the nodes a read-only look (_MAYBE_DRIFTED, one statement
        and so one snapshot) found different from their pods' sums: a node that looks right there had no
        drift at that instant, and drift made later is found by the next pass.
    Returns {"nodes": recounted, "skipped": busy nodes left for the next pass, "repaired": {node: [resources]}}.
    """
    report = {"nodes": 0, "skipped": 0, "repaired": {}}
    if connection.vendor == "postgresql":
        # Look first, lock only what may have drifted: locking and summing every chunk took 0.9 s of CPU
        # and 11-16 s of a worker's time a pass at 50,000 nodes, where nearly always nothing has drifted.
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM scheduler_node")
            [(total,)] = cursor.fetchall()
            cursor.execute(_MAYBE_DRIFTED)
            maybe = [pk for (pk,) in cursor.fetchall()]
        report["nodes"] = max(0, total - len(maybe))
        for i in range(0, len(maybe), chunk):
            ids = maybe[i:i + chunk]
            _recount_held(Node.objects.filter(pk__in=ids).order_by("pk").select_for_update(skip_locked=True),
                          ids, report, on_repair)
        return report
    after = 0
    while True:
        ids = list(Node.objects.filter(pk__gt=after).order_by("pk").values_list("pk", flat=True)[:chunk])
        if not ids:
            return report
        # The chunk as a range of ids, not a list: a statement with a thousand placeholders costs the client more
        # to split than the server to run (a node committed late with an id in the range is counted here too).
        first, after = after, ids[-1]
        _recount_held(Node.objects.filter(pk__gt=first, pk__lte=after).order_by("pk"), ids, report, on_repair)


_RECOUNT_COLUMNS = ["req_cpu", "req_memory", "req_ephemeral", "req_pods", "nonzero_cpu", "nonzero_memory",
                    "req_scalar", "used_ports"]


def _recount_held(locked, ids: list[int], report: dict, on_repair) -> None:
    """Recount the nodes of `locked` (rows locked in their own transaction: see usage_recount) and repair them."""
    columns = _RECOUNT_COLUMNS
    with transaction.atomic():
        # The JSON columns as text: nearly every node's are empty, and decoding 2 x 50,000 values was a third
        # of a pass's CPU at 50,000 nodes.
        held = list(locked.values_list("pk", "name", *columns[:-2], *(Cast(c, TextField()) for c in columns[-2:])))
        report["skipped"] += len(set(ids) - {row[0] for row in held})
        report["nodes"] += len(held)
        counted = _usage_by_node([row[1] for row in held])
        repairs = []
        for pk, name, *recorded in held:
            old = dict(zip(columns, (*recorded[:-2], *(_json_text(text) for text in recorded[-2:]))))
            new = counted.get(name) or _ZERO_USAGE
            drift = _drift(old, new)
            if not drift:
                continue
            repairs.append((pk, *(new[c] for c in columns)))
            report["repaired"][name] = [label for label, _, _ in drift]
            log.warning("usage drift repaired on node %s: %s", name,
                        ", ".join(f"{label} {before} -> {now}" for label, before, now in drift))
            if on_repair is not None:
                for label, _, _ in drift:
                    on_repair(label)
        if repairs:
            # The generation too: every worker's snapshot reloads these nodes.
            Node.objects.filter(pk__in=[r[0] for r in repairs]).update(generation=F("generation") + 1)
            update_from_values(Node, columns, repairs)
