"""The pods bound or assumed on each node, followed into a worker's NodeTable (its PodIndex), and
the cluster objects (namespaces, services, controllers) PodTopologySpread and InterPodAffinity read.

Loaded in bulk when the table is (re)built, then kept incremental: every change to what a node
holds (a reservation taken or released, a pod bound, arriving bound or deleted, a recount's repair) bumps
the node's `generation` in the same transaction, so the nodes whose generation moved since the
last batch are exactly the nodes whose pods must be read again. Only the fields the two plugins
read are fetched (labels, namespace, terminating, pod (anti-)affinity), never the whole manifest.
"""

from __future__ import annotations

import json

from django.db import connection
from django.db.models import Q

from ..engine.cluster_objects import ClusterObjects
from ..engine.nodes import NodeTable
from ..engine.pods import HostPort, PodSpec
from ..engine.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from ..models import (NAMESPACE, POD_DISRUPTION_BUDGET, REPLICA_SET, REPLICATION_CONTROLLER, SERVICE, STATEFUL_SET,
                      ClusterObject, Pod)
from .budgets import LazyBudgets
from ..manifests.stored import label_selector, pod_affinities_shared, status_fields

# Beyond this share of the nodes changed, one bulk read is cheaper than the per-node filter.
BULK_SHARE = 0.5

# A placed pod's row: (id, version, node_name, assumed_node, namespace, name, deleting, labels, affinity,
# and what preemption reads: uid, priority, requests, host ports, start time, conditions), JSON as text;
# the version is what the index depends on, every field after the node, compared as text so an
# unchanged pod on a node read again costs no decoding.
_FIELDS = ("pk", "node_name", "assumed_node", "namespace", "name", "deleting", "manifest__metadata__labels",
           "manifest__spec__affinity", "uid", "priority", "req_cpu", "req_memory", "req_ephemeral", "req_scalar",
           "host_ports", "manifest__status__startTime", "manifest__status__conditions", "bound_at")
_SELECT = """
SELECT id, node_name, assumed_node, namespace, name, deleting,
       (manifest->'metadata'->'labels')::text, (manifest->'spec'->'affinity')::text,
       uid, priority, req_cpu, req_memory, req_ephemeral, req_scalar::text, host_ports::text,
       manifest->'status'->>'startTime', (manifest->'status'->'conditions')::text, bound_at
FROM scheduler_pod
"""
# The node list is one array parameter: psycopg splits a query with hundreds of placeholders
# (Django's IN) slower than Postgres runs it.
_ON_NODES = _SELECT + "WHERE node_name = ANY(%(names)s) OR (node_name = '' AND assumed_node = ANY(%(names)s))"
_ALL_PLACED = _SELECT + "WHERE node_name <> '' OR assumed_node <> ''"


def _with_versions(rows) -> list[tuple]:
    return [(r[0], tuple(r[5:]), *r[1:]) for r in rows]


def _rows(names: list[str] | None) -> list[tuple]:
    """The placed pods on these nodes (None: on any node)."""
    if connection.vendor != "postgresql":
        pods = Pod.objects.exclude(node_name="", assumed_node="") if names is None else \
            Pod.objects.filter(Q(node_name__in=names) | Q(node_name="", assumed_node__in=names))
        return _with_versions((*r[:6], json.dumps(r[6]), json.dumps(r[7]), *r[8:13], json.dumps(r[13]),
                               json.dumps(r[14]), r[15], json.dumps(r[16]), r[17])
                              for r in pods.values_list(*_FIELDS))
    with connection.cursor() as cursor:
        if names is None:
            cursor.execute(_ALL_PLACED)
        else:
            cursor.execute(_ON_NODES, {"names": names})
        return _with_versions(cursor.fetchall())


def _placed(pk, version, node_name, assumed_node, namespace, name, deleting, labels, affinity, uid, priority,
            req_cpu, req_memory, req_ephemeral, req_scalar, host_ports, start_time, conditions, bound_at) -> PodSpec:
    labels = json.loads(labels) if labels else None
    pod_affinity, pod_anti_affinity = pod_affinities_shared(json.loads(affinity) if affinity else None)
    status = {"startTime": start_time, "conditions": json.loads(conditions) if conditions else None}
    spec = PodSpec(namespace=namespace, name=name, uid=uid or "", deleting=deleting, priority=priority or 0,
                   labels=labels if isinstance(labels, dict) else {},
                   pod_affinity=pod_affinity, pod_anti_affinity=pod_anti_affinity,
                   **{k: v for k, v in status_fields({"status": status}).items() if k != "nominated_node_name"})
    if spec.start_time is None and bound_at is not None:
        # The simulated cluster has no kubelet to write status.startTime: its pods start when bound.
        spec.start_time = bound_at.timestamp()
    # What the pod takes from its node, as its row records it (preemption's dry run gives it back).
    scalar = json.loads(req_scalar) if req_scalar else None
    spec.requests = {CPU: req_cpu or 0, MEMORY: req_memory or 0, EPHEMERAL_STORAGE: req_ephemeral or 0, PODS: 1,
                     **(scalar if isinstance(scalar, dict) else {})}
    ports = json.loads(host_ports) if host_ports else None
    if ports:
        spec.host_ports = tuple(HostPort(port=int(port), protocol=proto, ip=ip) for proto, port, ip in ports)
    return spec


class PlacedPods:
    """What one worker's table holds of the placed pods: per node, {pod id: (version, spec)}."""

    def __init__(self) -> None:
        self.table: NodeTable | None = None
        self.generations: dict[str, int] = {}
        self.by_node: dict[str, dict[int, tuple[object, PodSpec]]] = {}
        self.indexed: dict[str, tuple[int, str]] = {}  # pod key -> (pod id, node) indexed under it

    def sync(self, table: NodeTable, generations: dict[str, int], candidates=None) -> int:
        """Bring table.pods up to date with these node generations; the number of nodes read again.
        `candidates`: the only nodes whose generation may have moved (the rest are not compared)."""
        if table is not self.table:
            self._load_all(table, generations)
            return table.n
        known = self.generations
        changed = [name for name, gen in generations.items() if known.get(name) != gen] if candidates is None else \
            [name for name in candidates if known.get(name) != generations[name]]
        if not changed:
            return 0
        if len(changed) > BULK_SHARE * max(1, table.n):
            self._load_all(table, generations)
            return table.n
        rows = _rows(changed)
        fresh: dict[str, dict[int, tuple]] = {name: {} for name in changed}
        for r in rows:
            fresh.setdefault(r[2] or r[3], {})[r[0]] = r
        for name in changed:
            row = table.index.get(name)
            known = self.by_node.setdefault(name, {})
            now = fresh.get(name, {})
            for pk in [pk for pk in known if pk not in now]:
                self._unindex(pk, known.pop(pk)[1], name)
            for pk, r in now.items():
                held = known.get(pk)
                if held is not None and held[0] == r[1]:
                    continue  # the same version on the same node: already indexed
                if held is not None:
                    self._unindex(pk, held[1], name)
                spec = _placed(*r)
                known[pk] = (r[1], spec)
                if row is not None:
                    self._index(row, pk, spec, name)
            self.generations[name] = generations[name]
        return len(changed)

    def note_reserved(self, reserved: list[tuple[int, str, PodSpec]], generations: dict[str, int]) -> None:
        """These pods (id, node, spec), assumed and indexed by this worker, are now reserved. Where the
        reservation moved a node's generation just one past the one last read, nobody else changed
        that node since: its pods are what the index holds, and the next refresh need not read them."""
        by_node: dict[str, list[tuple[int, PodSpec]]] = {}
        for pk, node, spec in reserved:
            by_node.setdefault(node, []).append((pk, spec))
        for node, pods in by_node.items():
            gen = generations.get(node)
            if gen is None or self.generations.get(node) != gen - 1 or self.table is None:
                continue
            known = self.by_node.setdefault(node, {})
            for pk, spec in pods:
                known[pk] = (None, spec)  # no version: a later read of the node indexes it afresh
                self.indexed[spec.key] = (pk, node)
            self.generations[node] = gen

    def drop_assumed(self, cache) -> None:
        """Take out of the index the pods the cache assumed that no read of the shared state put there:
        the sync that follows puts back those whose reservation stands."""
        if cache.table is not self.table:
            return
        for key, assumed in cache.assumed.items():
            if key not in self.indexed:
                self.table.pods.remove_pod(assumed.row, assumed.pod)

    def _index(self, row: int, pk: int, spec: PodSpec, node: str) -> None:
        # A pod that moved (or a new pod under a deleted one's name) replaces the entry under its key.
        self.table.pods.add_pod(row, spec)
        self.indexed[spec.key] = (pk, node)

    def _unindex(self, pk: int, spec: PodSpec, node: str) -> None:
        # Only the entry this row put there: the key may meanwhile be indexed for its new node or pod.
        if self.indexed.get(spec.key) == (pk, node):
            del self.indexed[spec.key]
            self.table.pods.remove_pod(-1, spec)

    def _load_all(self, table: NodeTable, generations: dict[str, int]) -> None:
        self.table = table
        self.by_node = {}
        self.indexed = {}
        placed = []
        for r in _rows(None):
            name = r[2] or r[3]
            spec = _placed(*r)
            self.by_node.setdefault(name, {})[r[0]] = (r[1], spec)
            row = table.index.get(name)
            if row is not None:
                placed.append((row, spec))
                self.indexed[spec.key] = (r[0], name)
        table.pods.load(placed)
        self.generations = dict(generations)


def cluster_objects_from_rows(rows) -> ClusterObjects:
    """(kind, namespace, name, labels, selector) rows -> the ClusterObjects the plugins read."""
    objects = ClusterObjects()
    for kind, namespace, name, labels, selector in rows:
        if kind == NAMESPACE:
            objects.namespace_labels[name] = labels if isinstance(labels, dict) else {}
        elif kind == SERVICE:
            objects.services.setdefault(namespace, []).append(selector if isinstance(selector, dict) else None)
        elif kind == REPLICATION_CONTROLLER:
            objects.replication_controllers[(namespace, name)] = selector if isinstance(selector, dict) else None
        elif kind in (REPLICA_SET, STATEFUL_SET):
            table = objects.replica_sets if kind == REPLICA_SET else objects.stateful_sets
            table[(namespace, name)] = label_selector(selector) if isinstance(selector, dict) else None
    return objects


# What FollowedObjects.sync compares (rows, newest write) and whether there is a budget, as one row; a read of
# the snapshot's may take it in its own statement (SEEN_PARAMS its parameters). By hand: the ORM's aggregate()
# built and compiled its query again each batch (0.44 ms against 0.1).
SEEN_SQL = (f"SELECT count(*), max(updated_at), count(CASE WHEN kind = %s THEN 1 END) "
            f"FROM {ClusterObject._meta.db_table}")
SEEN_PARAMS = [POD_DISRUPTION_BUDGET]


class FollowedObjects:
    """The ClusterObjects, read again only when the table changed (rows counted, newest write)."""

    def __init__(self) -> None:
        self.version: tuple | None = None
        self.objects = ClusterObjects()

    def sync(self, seen: tuple | None = None) -> ClusterObjects:
        """`seen`: SEEN_SQL's row, when the caller read it (else read here)."""
        if seen is None:
            with connection.cursor() as cursor:
                cursor.execute(SEEN_SQL, SEEN_PARAMS)
                seen = cursor.fetchone()
        count, newest, budgets = seen
        version = (count, newest)
        if version != self.version:
            self.objects = cluster_objects_from_rows(
                ClusterObject.objects.values_list("kind", "namespace", "name", "labels", "selector"))
            self.version = version
        # A budget's status follows its pods, not its row: read again each batch while there is one, when
        # preemption first looks at it.
        self.objects.pdbs = LazyBudgets() if budgets else []
        return self.objects


def _topology_view(manifest) -> tuple:
    """What the index holds of a placed pod from its manifest: labels and affinity (topology), and what
    preemption reads (terminating, status.startTime, the DisruptionTarget condition)."""
    manifest = manifest if isinstance(manifest, dict) else {}
    meta, status = manifest.get("metadata") or {}, manifest.get("status") or {}
    status = status if isinstance(status, dict) else {}
    return (meta.get("labels"), (manifest.get("spec") or {}).get("affinity"), bool(meta.get("deletionTimestamp")),
            status.get("startTime"), [c for c in status.get("conditions") or () if isinstance(c, dict)
                                      and c.get("type") == "DisruptionTarget"])


def placed_pod_changed(row: Pod, old_manifest) -> None:
    """A placed pod's labels, affinity or what preemption reads changed in place: bump its node's generation (in the caller's
    transaction), so every worker's snapshot reads that node's pods again."""
    node = row.node_name or row.assumed_node
    if node and _topology_view(old_manifest) != _topology_view(row.manifest):
        from django.db.models import F

        from ..models import Node

        Node.objects.filter(name=node).update(generation=F("generation") + 1)
