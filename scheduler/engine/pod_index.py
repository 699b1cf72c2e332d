"""The pods on each node of a NodeTable (bound or assumed), kept the way PodTopologySpread and
InterPodAffinity read them: upstream walks NodeInfo.Pods, PodsWithAffinity and
PodsWithRequiredAntiAffinity of every node for every incoming pod; here that work is done once
per change instead.

- Pods are grouped by (namespace, labels, terminating): replicas share a group. A query ("how many
  pods on each node match this selector in this namespace") is answered as a per-node count
  vector, built once from the groups and then kept exact on every add and remove, so a cycle
  reads it in O(1) and aggregates it per topology domain with one bincount.
- Existing pods' (anti-)affinity terms are grouped by the term itself: each distinct term keeps
  how many pods carry it on each node. A cycle tests each distinct term once against the
  incoming pod instead of every pod's every term.

The narrow interface (add_pod, remove_pod, load, set_row) is what the cache's assume/forget and a
snapshot's bulk load call.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from .pod_info import AffinityTerm, PodInfo, pod_info
from .pods import PodSpec
from .preemption.columns import PodColumns

# How many distinct queries keep their count vectors up to date (least recently used dropped).
MAX_QUERIES = 256
# Empty pod groups kept before they are swept (when they are also most of the groups).
SWEEP_EMPTY_GROUPS = 1024

_EMPTY_ROWS = np.zeros(0, dtype=np.int64)


class RowCounts:
    """A multiset of node rows: how many of something sit on each node, with cached arrays, and
    once asked for, the same counts summed per topology domain of one key (kept up to date)."""

    __slots__ = ("counts", "_arrays", "_domain")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None
        self._domain: tuple[str, np.ndarray, np.ndarray] | None = None  # (key, node codes, per-code sums)

    def add(self, row: int, delta: int) -> None:
        left = self.counts.get(row, 0) + delta
        if left:
            self.counts[row] = left
        else:
            del self.counts[row]
        self._arrays = None
        if self._domain is not None:
            code = self._domain[1][row]
            if code >= 0:
                self._domain[2][code] += delta

    def per_domain(self, key: str, codes: np.ndarray, size: int) -> np.ndarray:
        """Per value code of topology key `key` (node value codes `codes`, -1 where a node lacks the
        key), the sum of the counts: built once, then kept up to date by add(). Do not modify."""
        if self._domain is None or self._domain[0] != key:
            rows, many = self.arrays()
            node_codes = codes[rows]
            keep = node_codes >= 0
            sums = np.zeros(size, dtype=np.int64)
            np.add.at(sums, node_codes[keep], many[keep])
            self._domain = (key, codes, sums)
        return self._domain[2]

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, how many on each), rows distinct."""
        if self._arrays is None:
            if not self.counts:
                self._arrays = (_EMPTY_ROWS, _EMPTY_ROWS)
            else:
                rows = np.fromiter(self.counts.keys(), dtype=np.int64, count=len(self.counts))
                many = np.fromiter(self.counts.values(), dtype=np.int64, count=len(self.counts))
                self._arrays = (rows, many)
        return self._arrays

    def copy(self) -> RowCounts:
        other = RowCounts()
        other.counts = dict(self.counts)
        return other


class _Group:
    """Pods with the same namespace, labels and terminating state."""

    __slots__ = ("key", "namespace", "labels", "deleting", "rows", "queries", "size")

    def __init__(self, key: tuple, namespace: str, labels: dict[str, str], deleting: bool):
        self.key = key
        self.namespace = namespace
        self.labels = labels
        self.deleting = deleting
        self.rows = RowCounts()
        self.queries: list[_Query] = []
        self.size = 0  # pods in the group; an empty group is kept until the next sweep


class _Query:
    """A per-node count of the pods whose group passes `accepts`, in `namespaces` (None: all), and
    sums of it per topology domain for the node subsets asked about (`domains`)."""

    __slots__ = ("key", "namespaces", "accepts", "counts", "groups", "domains")

    def __init__(self, key, namespaces: frozenset[str] | None, accepts: Callable[[_Group], bool], n: int):
        self.key = key
        self.namespaces = namespaces
        self.accepts = accepts
        self.counts = np.zeros(n, dtype=np.int64)
        self.groups: set[_Group] = set()
        # (domain key, include key) -> (node codes, included nodes, per-code sums, per-code presence)
        self.domains: dict[object, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}

    def bump(self, row: int, delta: int) -> None:
        self.counts[row] += delta
        for codes, keep, sums, _ in self.domains.values():
            if keep[row]:
                sums[codes[row]] += delta


class _Entry:
    """One indexed pod: where it is and what it was indexed under (removal undoes exactly that)."""

    __slots__ = ("row", "group", "info", "with_affinity", "with_required_anti")

    def __init__(self, row: int, group: _Group, info: PodInfo, with_affinity: bool, with_required_anti: bool):
        self.row = row
        self.group = group
        self.info = info
        self.with_affinity = with_affinity
        self.with_required_anti = with_required_anti


class PodIndex:
    def __init__(self, n: int):
        self.n = n
        self._entries: dict[str, _Entry] = {}
        self._groups: dict[tuple, _Group] = {}
        self._empty_groups = 0
        self._groups_by_namespace: dict[str, set[_Group]] = {}
        self._queries: OrderedDict[object, _Query] = OrderedDict()
        self._queries_by_namespace: dict[str | None, set[_Query]] = {}
        # Existing pods' terms: term (or (term, weight)) -> the rows of the pods carrying it.
        self.required_anti_affinity: dict[AffinityTerm, RowCounts] = {}
        self.required_affinity: dict[AffinityTerm, RowCounts] = {}
        self.preferred_affinity: dict[tuple[AffinityTerm, int], RowCounts] = {}
        self.preferred_anti_affinity: dict[tuple[AffinityTerm, int], RowCounts] = {}
        # As NodeInfo.PodsWithAffinity / PodsWithRequiredAntiAffinity, counted over all nodes.
        self.pods_with_affinity = 0
        self.pods_with_required_anti_affinity = 0
        # The same pods as columns (priority, start time, requests) for preemption's dry run.
        self.columns = PodColumns()

    def __len__(self) -> int:
        return len(self._entries)

    # ---- changes -------------------------------------------------------------------------
    def add_pod(self, row: int, pod: PodSpec) -> None:
        """Index a pod bound or assumed on node `row` (a pod already indexed is moved)."""
        pod_key = pod.key
        if pod_key in self._entries:
            self._remove_entry(pod_key)
        labels = pod.labels
        key = (pod.namespace, tuple(sorted(labels.items())) if labels else (), pod.deleting)
        group = self._groups.get(key)
        if group is None:
            group = self._new_group(key, pod.namespace, dict(labels), pod.deleting)
        elif group.size == 0:
            self._empty_groups -= 1
        group.size += 1
        group.rows.add(row, 1)
        for q in group.queries:
            q.bump(row, 1)
        self.columns.add(row, pod, key[:2])
        # As podWithAffinity / podWithRequiredAntiAffinity: the spec decides, parsed or not.
        anti = pod.pod_anti_affinity
        if pod.pod_affinity is None and anti is None:
            self._entries[pod_key] = _Entry(row, group, None, False, False)
            return
        entry = _Entry(row, group, pod_info(pod), True, anti is not None and len(anti.required) != 0)
        self._entries[pod_key] = entry
        self._apply_terms(entry, +1)

    def remove_pod(self, row: int, pod: PodSpec) -> None:
        """Undo add_pod for this pod (by key; the row it was indexed under wins). Unknown pods are ignored."""
        pod_key = pod.key
        if pod_key in self._entries:
            self._remove_entry(pod_key)

    def load(self, placed: Iterable[tuple[int, PodSpec]]) -> None:
        """Replace everything with these (row, pod) pairs (a snapshot's bulk load)."""
        self.clear()
        for row, pod in placed:
            self.add_pod(row, pod)

    def set_row(self, row: int, pods: Iterable[PodSpec]) -> None:
        """Replace the pods of one node (after re-reading it)."""
        for key in [k for k, e in self._entries.items() if e.row == row]:
            self._remove_entry(key)
        for pod in pods:
            self.add_pod(row, pod)

    def clear(self) -> None:
        self.__init__(self.n)

    def copy(self) -> PodIndex:
        """An independent index with the same pods (for dry runs on a copied table)."""
        other = PodIndex(self.n)
        for key, e in self._entries.items():
            g = e.group
            group = other._groups.get(g.key)
            if group is None:
                group = other._new_group(g.key, g.namespace, g.labels, g.deleting)
            group.size += 1
            group.rows.add(e.row, 1)
            entry = _Entry(e.row, group, e.info, e.with_affinity, e.with_required_anti)
            other._entries[key] = entry
            if e.with_affinity:
                other._apply_terms(entry, +1)
        other.columns = self.columns.copy()
        return other

    def _new_group(self, key: tuple, namespace: str, labels: dict[str, str], deleting: bool) -> _Group:
        group = _Group(key, namespace, labels, deleting)
        self._groups[key] = group
        self._groups_by_namespace.setdefault(namespace, set()).add(group)
        # Queries already kept must count the new group's pods too, where it matches.
        for ns in (namespace, None):
            for q in self._queries_by_namespace.get(ns, ()):
                if q.accepts(group):
                    q.groups.add(group)
                    group.queries.append(q)
        return group

    def _remove_entry(self, key: str) -> None:
        entry = self._entries.pop(key)
        self.columns.remove(key)
        group = entry.group
        group.rows.add(entry.row, -1)
        for q in group.queries:
            q.bump(entry.row, -1)
        group.size -= 1
        if group.size == 0:
            # Empty groups stay (a pod that is forgotten often comes back with the same labels)
            # until they are many, then all go at once.
            self._empty_groups += 1
            if self._empty_groups > SWEEP_EMPTY_GROUPS and 2 * self._empty_groups > len(self._groups):
                self._sweep()
        if entry.with_affinity:
            self._apply_terms(entry, -1)

    def _sweep(self) -> None:
        """Drop every empty group (from its namespace and from the queries it matched)."""
        for group in [g for g in self._groups.values() if g.size == 0]:
            del self._groups[group.key]
            members = self._groups_by_namespace[group.namespace]
            members.discard(group)
            if not members:
                del self._groups_by_namespace[group.namespace]
            for q in group.queries:
                q.groups.discard(group)
        self._empty_groups = 0

    def _apply_terms(self, entry: _Entry, sign: int) -> None:
        self.pods_with_affinity += sign
        if entry.with_required_anti:
            self.pods_with_required_anti_affinity += sign
        info = entry.info
        row = entry.row
        for term in info.required_anti_affinity:
            _bump(self.required_anti_affinity, term, row, sign)
        for term in info.required_affinity:
            _bump(self.required_affinity, term, row, sign)
        for w in info.preferred_affinity:
            _bump(self.preferred_affinity, (w.term, w.weight), row, sign)
        for w in info.preferred_anti_affinity:
            _bump(self.preferred_anti_affinity, (w.term, w.weight), row, sign)

    # ---- queries -------------------------------------------------------------------------
    def count(self, key: object, namespaces: frozenset[str] | None, accepts: Callable[[str, Mapping[str, str], bool], bool]) -> np.ndarray:
        """Per node, how many indexed pods in `namespaces` (None: any) pass `accepts(namespace,
        labels, terminating)`. `key` names the question: the same key must always mean the same
        question. The returned vector is kept up to date by later changes; do not modify it."""
        q = self._queries.get(key)
        if q is not None:
            self._queries.move_to_end(key)
            return q.counts
        q = _Query(key, namespaces, lambda g: accepts(g.namespace, g.labels, g.deleting), self.n)
        if namespaces is None:
            candidates = self._groups.values()
        else:
            candidates = [g for ns in namespaces for g in self._groups_by_namespace.get(ns, ())]
        for g in candidates:
            if q.accepts(g):
                q.groups.add(g)
                g.queries.append(q)
                rows, many = g.rows.arrays()
                q.counts[rows] += many
        self._queries[key] = q
        for ns in (namespaces if namespaces is not None else (None,)):
            self._queries_by_namespace.setdefault(ns, set()).add(q)
        if len(self._queries) > MAX_QUERIES:
            self._drop_query(next(iter(self._queries)))
        return q.counts

    def count_per_domain(self, key: object, namespaces: frozenset[str] | None,
                         accepts: Callable[[str, Mapping[str, str], bool], bool], domain_key: object,
                         codes: np.ndarray, size: int, include: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """count() summed per topology domain over the included nodes: (per-code sums, per-code
        presence of an included node), for node codes `codes` (-1: no domain) in [0, size).
        `domain_key` names the codes and the include mask (the same key, the same arrays); the sums
        are then kept up to date with the counts. Do not modify what is returned."""
        per_node = self.count(key, namespaces, accepts)
        q = self._queries[key]
        cached = q.domains.get(domain_key)
        if cached is None:
            keep = include & (codes >= 0)
            kept = codes[keep]
            sums = np.rint(np.bincount(kept, weights=per_node[keep], minlength=size)).astype(np.int64)
            present = np.bincount(kept, minlength=size) > 0
            cached = q.domains[domain_key] = (codes, keep, sums, present)
        return cached[2], cached[3]

    def _drop_query(self, key: object) -> None:
        q = self._queries.pop(key)
        for ns in (q.namespaces if q.namespaces is not None else (None,)):
            members = self._queries_by_namespace.get(ns)
            if members is not None:
                members.discard(q)
                if not members:
                    del self._queries_by_namespace[ns]
        for g in q.groups:
            g.queries.remove(q)

    # ---- reading -------------------------------------------------------------------------
    def pods(self) -> list[tuple[str, int]]:
        """(pod key, row) of every indexed pod (for tests and debugging)."""
        return [(k, e.row) for k, e in self._entries.items()]


def _bump(table: dict, key, row: int, sign: int) -> None:
    counts = table.get(key)
    if counts is None:
        counts = table[key] = RowCounts()
    counts.add(row, sign)
    if not counts.counts:
        del table[key]
