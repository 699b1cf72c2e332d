"""Cross-node constraints at claim: a placement that a spread constraint or pod (anti-)affinity
decided is checked again against the committed state before it is reserved.

A node's reservation (reservations.py) protects that node's room, but PodTopologySpread and
InterPodAffinity judge a node by the pods on other nodes of its topology domain. Two workers each
see only their own assumed pods, so both could put a pod into one zone at skew 1, or two
anti-affine pods onto one host. So, on Postgres:

- A pod whose own constraints read other nodes (required pod affinity or anti-affinity, a
  DoNotSchedule spread constraint, its own or a default one) is claimed *checked*: under an
  exclusive advisory lock, the worker reads the pods of every node whose generation moved (its
  index then holds the committed state), runs the two plugins' PreFilter and Filter again for the
  chosen node, and reserves in the same transaction only if the node still passes. Refused, the
  pod goes back to the cycle as a lost race: its nodes are read again and it is placed again.
- Every other claim holds the same lock shared (claims of plain pods never wait for each other),
  and compares a clock that every checked claim of a pod with required anti-affinity advances: a
  worker whose snapshot predates such a pod may have put a pod where that pod's anti-affinity
  forbids it, so when the clock moved since its snapshot, its plain placements are checked too.
  Holding the lock shared while it commits, a plain claim cannot slip in between a checked claim's
  check and its commit.

Embedded (SQLite, one worker in the process) there is nobody to race: nothing here runs.
"""

from __future__ import annotations

import logging

from django.db import connection, transaction

from ..engine.framework import SKIP, CycleState, PreFilterRejected
from ..engine.pod_info import pod_info
from ..engine.pods import DO_NOT_SCHEDULE, PodSpec
from ..models import Node
from .reservations import Placement, ReserveResult, TopologyClockMoved, reserve_many

log = logging.getLogger(__name__)

# pg_advisory_xact_lock's key for every claim (an arbitrary constant: "topo" in ASCII).
CLAIM_LOCK_KEY = 0x746F706F
CLOCK_SEQUENCE = "scheduler_topology_clock"
CHECKED_PLUGINS = ("PodTopologySpread", "InterPodAffinity")


def enabled() -> bool:
    return connection.vendor == "postgresql"


def read_clock() -> int | None:
    """The clock now (a snapshot records it before reading the pods); None when embedded."""
    if not enabled():
        return None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT last_value FROM {CLOCK_SEQUENCE}")
        return int(cursor.fetchone()[0])


def plain_guard(clock: int | None):
    """For reserve_many: take the claim lock shared, and refuse the batch if the clock moved."""
    if clock is None or not enabled():
        return None

    def guard(cursor) -> None:
        cursor.execute(f"SELECT pg_advisory_xact_lock_shared(%s), (SELECT last_value FROM {CLOCK_SEQUENCE})",
                       [CLAIM_LOCK_KEY])
        if int(cursor.fetchone()[1]) != clock:
            raise TopologyClockMoved()

    return guard


def _checked_plugins(profile) -> list:
    return [p for p in profile.filters if getattr(p, "name", None) in CHECKED_PLUGINS]


def needs_check(pod: PodSpec, profile, table) -> bool:
    """Whether the pod's own constraints read other nodes' pods (so a concurrent claim can break them)."""
    for plugin in _checked_plugins(profile):
        if plugin.name == "InterPodAffinity":
            info = pod_info(pod)
            if info.required_affinity or info.required_anti_affinity:
                return True
        elif plugin.name == "PodTopologySpread":
            try:
                if plugin.constraints(pod, table, DO_NOT_SCHEDULE):
                    return True
            except ValueError:  # a selector the plugin refuses: its PreFilter already failed the pod
                return False
    return False


def still_fits(pod: PodSpec, profile, table, row: int) -> bool:
    """The two plugins' PreFilter and Filter again, on the table as it is now, for node `row`."""
    with CycleState().active():
        for plugin in _checked_plugins(profile):
            verdict = plugin.pre_filter(pod, table)
            if isinstance(verdict, PreFilterRejected):
                return False
            if verdict is SKIP:
                continue
            if isinstance(verdict, set) and table.names[row] not in verdict:
                return False
            if not plugin.filter(pod, table).passed[row]:
                return False
    return True


class _RetryOneByOne(Exception):
    """A checked batch could not be reserved whole: its transaction is rolled back and each pod is
    claimed again alone (a later pod's check may have counted an earlier one that then lost its room)."""


def reserve_checked(placements: list[tuple[Placement, PodSpec, object]], snapshot, cache) -> ReserveResult:
    """Claim the placements under the exclusive claim lock after checking them on the committed state.

    One transaction for the batch: the lock, one read of the node generations (and of the pods of the
    nodes that moved), each placement checked in turn on the table with the earlier ones of the batch
    in it, and one reserve_many for those that passed. Only if that reservation refuses one of them
    (a node out of room, a pod gone) is the batch rolled back and claimed pod by pod."""
    table = cache.table
    # These pods are in the index only as this worker's assumptions: take them out, so a check sees
    # the committed state (a pod reserved below is put back).
    for _, pod, _ in placements:
        if pod.key not in snapshot.placed.indexed:
            table.pods.remove_pod(-1, pod)
    added: list[tuple[int, PodSpec]] = []
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CLAIM_LOCK_KEY])
            snapshot.placed.sync(table, _generations())
            refused: set[int] = set()
            passed: list[Placement] = []
            for placement, pod, profile in placements:
                row = table.index.get(placement[2])
                if row is None or not still_fits(pod, profile, table, row):
                    refused.add(placement[0])
                    continue
                table.pods.add_pod(row, pod)  # the next placements of the batch are checked with it
                added.append((row, pod))
                passed.append(placement)
            result = reserve_many(passed)
            if result.conflicts or result.gone or result.errors:
                raise _RetryOneByOne()
            if any(pod_info(pod).required_anti_affinity for _, pod in added):
                with connection.cursor() as cursor:
                    cursor.execute(f"SELECT nextval('{CLOCK_SEQUENCE}')")
    except _RetryOneByOne:
        for row, pod in added:
            table.pods.remove_pod(row, pod)
        log.debug("a checked batch of %d placements lost a reservation: claiming them one by one", len(placements))
        return _reserve_checked_one_by_one(placements, snapshot, table)
    except BaseException:
        for row, pod in added:
            table.pods.remove_pod(row, pod)
        raise
    result.conflicts |= refused
    return result


def _generations() -> dict[str, int]:
    """Every node's generation, read plainly: 5,000 rows through the ORM took over twice as long (24 vs 10 ms)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT name, generation FROM {Node._meta.db_table}")
        return dict(cursor.fetchall())


def _reserve_checked_one_by_one(placements, snapshot, table) -> ReserveResult:
    """Each placement in its own transaction under the lock: checked, then reserved alone."""
    result = ReserveResult()
    for placement, pod, profile in placements:
        pod_id, node = placement[0], placement[2]
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CLAIM_LOCK_KEY])
            snapshot.placed.sync(table, _generations())
            row = table.index.get(node)
            if row is None or not still_fits(pod, profile, table, row):
                result.conflicts.add(pod_id)
                continue
            one = reserve_many([placement])
            if pod_id not in one.conflicts | one.gone | set(one.errors):
                # Reserved: back in the index as this worker's (reserve() then marks it as read).
                table.pods.add_pod(row, pod)
                if pod_info(pod).required_anti_affinity:
                    with connection.cursor() as cursor:
                        cursor.execute(f"SELECT nextval('{CLOCK_SEQUENCE}')")
        result.conflicts |= one.conflicts
        result.gone |= one.gone
        result.changed |= one.changed
        result.errors.update(one.errors)
        result.generations.update(one.generations)
    return result


def reserve(items: list[tuple[Placement, PodSpec, object]], snapshot) -> ReserveResult:
    """reserve_many for a batch, with the placements that need it checked (see the module's docstring);
    the snapshot then knows the pods it reserved as committed (its next refresh need not read them)."""
    result = _reserve(items, snapshot)
    failed = result.conflicts | result.gone | set(result.errors)
    snapshot.placed.note_reserved([(p[0], p[2], pod) for p, pod, _ in items if p[0] not in failed], result.generations)
    return result


def _reserve(items: list[tuple[Placement, PodSpec, object]], snapshot) -> ReserveResult:
    if not enabled():
        return reserve_many([p for p, _, _ in items])
    cache = snapshot.cache
    checked = [it for it in items if needs_check(it[1], it[2], cache.table)]
    plain = [it for it in items if not any(it is c for c in checked)]
    result = ReserveResult()
    if plain:
        try:
            result = reserve_many([p for p, _, _ in plain], guard=plain_guard(snapshot.clock))
        except TopologyClockMoved:
            log.debug("a pod with required anti-affinity was claimed since the snapshot: checking %d placements",
                      len(plain))
            checked = plain + checked
    if checked:
        more = reserve_checked(checked, snapshot, cache)
        result.conflicts |= more.conflicts
        result.gone |= more.gone
        result.changed |= more.changed
        result.errors.update(more.errors)
        result.generations.update(more.generations)
    return result
