"""A worker's view of the nodes: a NodeTable rebuilt when node specs change, its usage
reloaded from Postgres at the start of every batch (one query), one row at a time after a
lost reservation race."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import psycopg
from django.db import connection, transaction
from django.db.models import Q, Subquery
from django.utils import timezone

from ..engine.cache import Cache
from ..engine.nodes import NodeSpec, NodeTable, NodeUsage
from ..engine.pods import HostPort
from ..engine.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from ..manifests.objects import node_from_manifest
from ..models import DeletedPod, Node
from .placed_pods import SEEN_SQL, SEEN_PARAMS, FollowedObjects, PlacedPods
from .topology_claims import CLOCK_SEQUENCE, read_clock

_USAGE_FIELDS = ("req_cpu", "req_memory", "req_ephemeral", "req_pods", "nonzero_cpu", "nonzero_memory",
                 "req_scalar", "used_ports")


def ports_from_json(rows) -> list[HostPort]:
    return [HostPort(port=int(port), protocol=proto, ip=ip) for proto, port, ip in rows]


def usage_from_values(req_cpu, req_memory, req_ephemeral, req_pods, nonzero_cpu, nonzero_memory, req_scalar, used_ports) -> NodeUsage:
    requested = {CPU: req_cpu, MEMORY: req_memory, EPHEMERAL_STORAGE: req_ephemeral, PODS: req_pods, **(req_scalar or {})}
    return NodeUsage(requested=requested, nonzero_cpu=nonzero_cpu, nonzero_memory=nonzero_memory,
                     ports=tuple(ports_from_json(used_ports or ())))


_NODE_COLUMNS = ("spec_version", "req_cpu", "req_memory", "req_ephemeral", "req_pods", "nonzero_cpu", "nonzero_memory",
                 "generation")


def _read_nodes() -> tuple[list[str], dict[str, np.ndarray], int, int | None]:
    """Every node's name (in name order) and number columns, the newest pod deletion and (Postgres) the oldest
    transaction still running when the statement's snapshot was taken, in one statement.

    On Postgres each column comes as one array in the binary format (a few C calls instead of a Python
    tuple per node: a third of the cost at 5,000 nodes); elsewhere through the ORM."""
    newest_deletion = DeletedPod.objects.order_by("-id").values("id")[:1]
    if connection.vendor == "postgresql":
        connection.ensure_connection()
        node, deleted = Node._meta.db_table, DeletedPod._meta.db_table
        # The rows sorted once and aggregated in that order: every array of the one aggregation takes the rows
        # in the same order (so they line up); an ORDER BY in each aggregate would sort them once per column
        # (23 ms instead of 6 at 5,000 nodes). Name order, so that the spec key is the same from one read to
        # the next (were it not, the table would only be rebuilt).
        columns = ("name", *_NODE_COLUMNS)
        aggregates = ", ".join(f"array_agg({c})" for c in columns)
        with connection.connection.cursor(binary=True) as cursor:
            cursor.execute(f"SELECT {aggregates}, (SELECT id FROM {deleted} ORDER BY id DESC LIMIT 1), {_XMIN} FROM "
                           f"(SELECT {', '.join(columns)} FROM {node} ORDER BY name) sorted")
            names, *arrays, mark, xmin = cursor.fetchone()
        names = names or []
        cols = {c: np.asarray(a or (), dtype=np.int64) for c, a in zip(_NODE_COLUMNS, arrays)}
        return names, cols, mark or 0, xmin
    rows = list(Node.objects.order_by("name").annotate(newest_deletion=Subquery(newest_deletion))
                .values_list("name", *_NODE_COLUMNS, "newest_deletion"))
    mark = (rows[0][-1] if rows else DeletedPod.objects.order_by("-id").values_list("id", flat=True).first()) or 0
    cols = {c: np.fromiter((r[i + 1] for r in rows), dtype=np.int64, count=len(rows)) for i, c in enumerate(_NODE_COLUMNS)}
    return [r[0] for r in rows], cols, mark, None


# The oldest transaction id still running when this statement's snapshot was taken: every transaction below it
# has ended, so a row it wrote was visible to this read (or never will be). The next read need only look at
# the rows whose `touched` (the writer's id, set by a trigger: migration 0019) is at or above it.
_NAMES_PER_QUERY = 10_000  # names per `IN (...)`: Postgres takes at most 65,535 parameters in one statement
_XMIN = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
_CHANGED_COLUMNS = ("spec_version", "req_cpu", "req_memory", "req_ephemeral", "req_pods", "nonzero_cpu",
                    "nonzero_memory", "generation")


def _read_changed_nodes(since: int, also: list[str]):
    """Whether a transaction with an id >= `since` deleted nodes, and the nodes written by one (or named in
    `also`): their names, number columns, extended resources and host ports; the newest pod deletion, this
    statement's xmin, the topology clock (topology_claims.read_clock's) and the cluster objects' version
    (placed_pods.SEEN_SQL's row), each read by this statement: two round trips less per batch. One statement (one
    scan of the node table, no other row decoded)."""
    node, deleted = Node._meta.db_table, DeletedPod._meta.db_table
    columns = ("name", *_CHANGED_COLUMNS, "req_scalar", "used_ports")
    aggregates = ", ".join(f"array_agg({c})" for c in columns)
    connection.ensure_connection()
    with connection.connection.cursor(binary=True) as cursor:
        cursor.execute(f"SELECT * FROM (SELECT coalesce((SELECT max(touched) FROM scheduler_node_deleted) >= %s, false), "
                       f"{aggregates}, (SELECT id FROM {deleted} ORDER BY id DESC LIMIT 1), {_XMIN}, "
                       f"(SELECT last_value FROM {CLOCK_SEQUENCE}) FROM "
                       f"(SELECT {', '.join(columns)} FROM {node} WHERE touched >= %s OR name = ANY(%s)) changed) nodes, "
                       f"({SEEN_SQL}) objects",
                       [since, since, also, *SEEN_PARAMS])
        row = cursor.fetchone()
    nodes_deleted, names, *arrays, scalars, ports, mark, xmin, clock = row[:-3]
    seen = row[-3:]
    cols = {c: np.asarray(a or (), dtype=np.int64) for c, a in zip(_CHANGED_COLUMNS, arrays)}
    return nodes_deleted, names or [], cols, scalars or [], ports or [], mark or 0, xmin, int(clock), tuple(seen)


@contextmanager
def one_committed_state():
    """The reads inside see one committed state: the nodes' usage, their scalar resources and ports, the pods on
    them and the newest deletion, all as of the first read. Statement by statement (read committed), a pod
    deleted or a binding committed between two reads would count in one and not the other: the usage still
    holding a pod the index or the scalar columns have dropped, a decision no replay of the recorded history
    could make again. Postgres: one repeatable-read, read-only transaction; SQLite: one transaction (writers
    wait the few milliseconds it takes). Inside a caller's transaction, that transaction's view stands."""
    if connection.in_atomic_block:
        yield
        return
    if connection.vendor != "postgresql":
        with transaction.atomic():
            yield
        return
    # Said by the transaction's own BEGIN (psycopg's transaction characteristics, set while no transaction is
    # open), not by a SET TRANSACTION after it: a round trip less per batch. Given back once it has ended.
    connection.ensure_connection()
    raw = connection.connection
    before = (raw.isolation_level, raw.read_only)
    raw.isolation_level, raw.read_only = psycopg.IsolationLevel.REPEATABLE_READ, True
    try:
        with transaction.atomic():
            yield
    finally:
        _restore_characteristics(raw, before)


def _restore_characteristics(raw, before: tuple) -> None:
    """The connection's transactions as they were; a connection that cannot say so (broken, or left in a
    transaction) is closed, so that no later transaction of this process is read-only by mistake."""
    try:
        raw.isolation_level, raw.read_only = before
    except Exception:  # noqa: BLE001 - whatever went wrong, the connection must not be used as it is
        if connection.connection is raw:
            connection.close()
        else:
            raw.close()


class Snapshot:
    """Holds the worker's Cache; `refresh()` brings it up to date with the shared state."""

    def __init__(self) -> None:
        self.cache: Cache | None = None
        self._spec_key: tuple | None = None
        self._specs: dict[str, tuple[int, NodeSpec]] = {}
        self.spec_versions: dict[str, int] = {}
        self.placed = PlacedPods()
        self.objects = FollowedObjects()
        self.clock: int | None = None
        self.deleted_mark = 0  # the newest DeletedPod id the last refresh saw (Attempt.snapshot_deleted_pod)
        self.read_at = None  # when the last refresh read (Attempt.snapshot_at)
        # Postgres: the last read's xmin (the next one re-reads only the nodes written at or after it), every
        # node's generation as read, and where the table's change list stood after the read (the rows this
        # worker changed itself since, by assuming pods, are read again too).
        self._xmin: int | None = None
        self._generations: dict[str, int] = {}
        self._local_mark: tuple[int, int] | None = None
        self.rows_read = 0  # how many nodes the last refresh read (all of them, or the changed ones)

    def refresh(self) -> Cache:
        with one_committed_state():
            # The instant this view stands for (Attempt.snapshot_at): taken inside the read, once SQLite's lock is
            # held, so a change it saw committed before this and one it did not see commits after.
            self.read_at = timezone.now()
            return self._refresh()

    def _refresh(self) -> Cache:
        # The clock before the pods are read: a claim checked after this is seen by reserve (topology_claims).
        # Read by the first statement of the read (one snapshot: the changed nodes' read when there is one, which
        # reads it itself and sets it even when it then leaves the table to the whole read below).
        self.clock = None
        if self._refresh_changed():
            return self.cache
        if self.clock is None:
            self.clock = read_clock()
        # Numbers for every node, JSON only for the few nodes with extended resources or host
        # ports in use: decoding 2 x 5,000 JSON values per batch would cost more than the rest.
        # The newest pod deletion read in the same statement as the nodes' usage (one statement sees one
        # committed state): the replay applies exactly the deletions whose room this snapshot saw freed.
        names, cols, self.deleted_mark, xmin = _read_nodes()
        n = len(names)
        spec_key = (tuple(names), cols["spec_version"].tobytes())
        if spec_key != self._spec_key or self.cache is None:
            self._rebuild(list(zip(names, cols["spec_version"].tolist())))
            self._spec_key = spec_key
        else:
            # The pods this worker assumed were indexed by its cache; the shared state has them now
            # (their nodes' generations moved), or has dropped them.
            self.placed.drop_assumed(self.cache)
        table = self.cache.table
        standard = {CPU: cols["req_cpu"], MEMORY: cols["req_memory"], EPHEMERAL_STORAGE: cols["req_ephemeral"],
                    PODS: cols["req_pods"]}
        scalars, ports = {}, {}
        special = Node.objects.filter(~Q(req_scalar={}) | ~Q(used_ports=[])).values_list("name", "req_scalar", "used_ports")
        for name, req_scalar, used_ports in special:
            row = table.index.get(name)
            if row is not None:
                if req_scalar:
                    scalars[row] = req_scalar
                if used_ports:
                    ports[row] = ports_from_json(used_ports)
        table.load_usage(standard, cols["nonzero_cpu"], cols["nonzero_memory"], scalars, ports)
        self._generations = dict(zip(names, cols["generation"].tolist())) if n else {}
        self.placed.sync(table, self._generations)
        self._finish(xmin)
        self.rows_read = n
        return self.cache

    def _finish(self, xmin: int | None, objects_seen: tuple | None = None) -> None:
        self.cache.table.objects = self.objects.sync(objects_seen)
        # The shared state already counts every reservation that committed, ours included.
        self.cache.assumed.clear()
        table = self.cache.table
        self._xmin = xmin
        self._local_mark = (table.usage_epoch, len(table.changed_rows))

    def _refresh_changed(self) -> bool:
        """Bring the table up to date by reading only the nodes written since the last read (Postgres), and
        the rows this worker changed itself since (its assumed pods, which the shared state may not hold:
        a lost race). False, having changed nothing, when the whole table must be read: the first read, a
        node added, deleted or respecified, or this worker's own changes no longer listed."""
        table = self.cache.table if self.cache is not None else None
        if self._xmin is None or table is None or connection.vendor != "postgresql":
            return False
        epoch, seen = self._local_mark
        if table.usage_epoch != epoch:
            return False
        local = sorted(set(table.changed_rows[seen:]))
        also = [table.names[row] for row in local]
        nodes_deleted, names, cols, scalar_json, port_json, mark, xmin, self.clock, objects_seen = _read_changed_nodes(
            self._xmin, also)
        if nodes_deleted:
            return False
        index = table.index
        rows = np.fromiter((index.get(name, -1) for name in names), dtype=np.int64, count=len(names))
        versions = self.spec_versions
        if (rows < 0).any() or any(versions.get(name) != v for name, v in zip(names, cols["spec_version"].tolist())):
            return False
        self.deleted_mark = mark
        self.placed.drop_assumed(self.cache)
        scalars = {int(row): js for row, js in zip(rows, scalar_json) if js}
        ports = {int(row): ports_from_json(js) for row, js in zip(rows, port_json) if js}
        standard = {CPU: cols["req_cpu"], MEMORY: cols["req_memory"], EPHEMERAL_STORAGE: cols["req_ephemeral"],
                    PODS: cols["req_pods"]}
        table.load_usage_rows(rows, standard, cols["nonzero_cpu"], cols["nonzero_memory"], scalars, ports)
        generations = self._generations
        generations.update(zip(names, cols["generation"].tolist()))
        self.placed.sync(table, generations, candidates=names)
        self._finish(xmin, objects_seen)
        self.rows_read = len(names)
        return True

    def _rebuild(self, names_versions: list[tuple[str, int]]) -> None:
        wanted = {name: version for name, version in names_versions}
        stale = [name for name, version in wanted.items() if self._specs.get(name, (None,))[0] != version]
        # Every node stale (the first build): read them all, not by a list of names (at most 65,535 parameters).
        queries = [Node.objects.all()] if stale and len(stale) == len(wanted) else [
            Node.objects.filter(name__in=stale[i:i + _NAMES_PER_QUERY]) for i in range(0, len(stale), _NAMES_PER_QUERY)]
        for query in queries:
            for name, version, manifest in query.values_list("name", "spec_version", "manifest"):
                self._specs[name] = (version, node_from_manifest(manifest))
        for name in list(self._specs):
            if name not in wanted:
                del self._specs[name]
        specs = [self._specs[name][1] for name, _ in names_versions if name in self._specs]
        self.spec_versions = {name: self._specs[name][0] for name, _ in names_versions if name in self._specs}
        table = NodeTable(specs)
        table.objects = self.objects.objects
        if self.cache is None:
            self.cache = Cache(table)
        else:
            # Keep the one Cache object: a cycle in progress holds it.
            self.cache.table = table

    def _current_generations(self) -> tuple[dict[str, int], list[str] | None]:
        """Every node's generation as the shared state has it now, and the nodes whose generation may have moved
        since the last read (None: any of them). On Postgres after a read, only the nodes written since that
        read's xmin are read (every node's generation through the ORM was ~80 ms of a worker's CPU per lost race
        at 50,000 nodes); the next refresh reads them again for their usage."""
        if self._xmin is None or connection.vendor != "postgresql":
            return dict(Node.objects.values_list("name", "generation")), None
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT name, generation FROM {Node._meta.db_table} WHERE touched >= %s", [self._xmin])
            moved = dict(cursor.fetchall())
        self._generations.update(moved)
        return self._generations, list(moved)

    def refresh_nodes(self, cache: Cache, node_names: set[str]) -> None:
        """Reload these nodes' usage (after a lost reservation race); rebuild if one of them changed."""
        with one_committed_state():
            self._refresh_nodes(cache, node_names)

    def _refresh_nodes(self, cache: Cache, node_names: set[str]) -> None:
        rows = Node.objects.filter(name__in=node_names).values_list("name", "spec_version", *_USAGE_FIELDS)
        # The pods too, on every node that changed: a lost race may be over a topology domain (a spread
        # constraint or anti-affinity refused at claim), which spans more nodes than the ones named.
        self.clock = read_clock()
        self.placed.sync(cache.table, *self._current_generations())
        found = {r[0]: r for r in rows}
        if set(found) != set(node_names) or any(r[1] != self.spec_versions.get(name) for name, r in found.items()):
            # A node changed (labels, taints, allocatable) or went away: rebuild everything.
            self._spec_key = None
            self._xmin = None  # and read every node
            self._refresh()
            return
        for name, values in found.items():
            cache.table.set_row_usage(cache.table.index[name], usage_from_values(*values[2:]))
