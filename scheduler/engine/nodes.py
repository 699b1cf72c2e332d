"""NodeTable: the cluster's nodes as numpy columns, one row per node.

Static attributes (allocatable, labels, taints, images, unschedulable) are built once per
node-set version; usage (requested resources, non-zero requests, host ports in use) changes
with every assumed or bound pod and is updated in place by row index.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import re

import numpy as np

from .cluster_objects import ClusterObjects
from .pod_index import PodIndex
from .pods import HostPort, PodSpec, Resources, Taint
from .resources import CPU, MEMORY, PODS, STANDARD_RESOURCES


# Rows kept in NodeTable.changed_rows before the list starts again (as if all usage had changed).
MAX_CHANGED_ROWS = 1 << 16


@dataclass(frozen=True)
class ImageState:
    """One entry of node.status.images: every name it goes by, and its size in bytes."""

    names: tuple[str, ...]
    size: int


@dataclass
class NodeSpec:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable: Resources = field(default_factory=dict)
    unschedulable: bool = False
    images: tuple[ImageState, ...] = ()


@dataclass
class NodeUsage:
    """What the pods on a node (bound or assumed) take from it."""

    requested: Resources = field(default_factory=dict)
    nonzero_cpu: int = 0
    nonzero_memory: int = 0
    ports: tuple[HostPort, ...] = ()

    @classmethod
    def of_pods(cls, pods: Iterable[PodSpec]) -> NodeUsage:
        usage = cls()
        for pod in pods:
            usage.add(pod)
        return usage

    def add(self, pod: PodSpec) -> None:
        for name, value in pod.requests.items():
            self.requested[name] = self.requested.get(name, 0) + value
        self.nonzero_cpu += pod.nonzero_requests[CPU]
        self.nonzero_memory += pod.nonzero_requests[MEMORY]
        self.ports = self.ports + pod.host_ports


_GO_INT = re.compile(r"[+-]?[0-9]+")


class LabelColumn:
    """One label key over all nodes: an int code per node (-1 where the node lacks the key)."""

    def __init__(self, values: Sequence[str | None]):
        self.vocab: dict[str, int] = {}
        codes = np.empty(len(values), dtype=np.int32)
        for i, v in enumerate(values):
            codes[i] = -1 if v is None else self.vocab.setdefault(v, len(self.vocab))
        self.codes = codes
        self._ints: np.ndarray | None = None

    def exists(self) -> np.ndarray:
        return self.codes >= 0

    def isin(self, values: Iterable[str]) -> np.ndarray:
        wanted = [self.vocab[v] for v in values if v in self.vocab]
        if not wanted:
            return np.zeros(len(self.codes), dtype=bool)
        return np.isin(self.codes, np.asarray(wanted, dtype=np.int32))

    def as_int(self) -> tuple[np.ndarray, np.ndarray]:
        """Each node's value parsed as an integer (for Gt/Lt), and a mask of where that parse worked."""
        if self._ints is None:
            parsed = np.zeros(len(self.vocab), dtype=np.int64)
            ok = np.zeros(len(self.vocab), dtype=bool)
            for value, code in self.vocab.items():
                # As strconv.ParseInt(value, 10, 64): ASCII digits with an optional sign, within int64.
                if _GO_INT.fullmatch(value):
                    number = int(value)
                    if -(1 << 63) <= number < (1 << 63):
                        parsed[code] = number
                        ok[code] = True
            present = self.codes >= 0
            ints = np.where(present, parsed[np.maximum(self.codes, 0)] if len(parsed) else 0, 0)
            valid = present & (ok[np.maximum(self.codes, 0)] if len(ok) else False)
            self._ints = np.stack([ints, valid.astype(np.int64)])
        return self._ints[0], self._ints[1].astype(bool)


class NodeTable:
    """Columns over nodes. Row i of every array is node `names[i]`."""

    def __init__(self, nodes: Sequence[NodeSpec], usage: Sequence[NodeUsage] | None = None):
        self.specs = list(nodes)
        self.names = [n.name for n in self.specs]
        self.n = len(self.names)
        self.index = {name: i for i, name in enumerate(self.names)}
        if len(self.index) != self.n:
            raise ValueError("duplicate node names in NodeTable")
        n = self.n
        resource_names = list(STANDARD_RESOURCES)
        for spec in self.specs:
            for r in spec.allocatable:
                if r not in resource_names:
                    resource_names.append(r)
        self.allocatable: dict[str, np.ndarray] = {
            r: np.fromiter((s.allocatable.get(r, 0) for s in self.specs), dtype=np.int64, count=n) for r in resource_names
        }
        self.unschedulable = np.fromiter((s.unschedulable for s in self.specs), dtype=bool, count=n)
        self.name_array = np.asarray(self.names, dtype=object)
        # Taints: the distinct taints in the cluster and a node x taint membership matrix.
        self.taints: list[Taint] = []
        taint_index: dict[Taint, int] = {}
        rows, cols = [], []
        for i, spec in enumerate(self.specs):
            for t in spec.taints:
                j = taint_index.setdefault(t, len(taint_index))
                if j == len(self.taints):
                    self.taints.append(t)
                rows.append(i)
                cols.append(j)
        self.taint_matrix = np.zeros((n, len(self.taints)), dtype=bool)
        self.taint_matrix[rows, cols] = True
        # Images: name -> (rows having it, size on each of those rows).
        image_rows: dict[str, list[tuple[int, int]]] = {}
        for i, spec in enumerate(self.specs):
            for image in spec.images:
                for name in image.names:
                    image_rows.setdefault(name, []).append((i, image.size))
        self.images: dict[str, tuple[np.ndarray, np.ndarray]] = {
            name: (np.asarray([r for r, _ in v], dtype=np.int64), np.asarray([s for _, s in v], dtype=np.int64))
            for name, v in image_rows.items()
        }
        self._labels: dict[str, LabelColumn] = {}
        # The pods on each node with their labels and affinity terms (PodTopologySpread and
        # InterPodAffinity read them), and the other cluster objects those plugins read.
        self.pods = PodIndex(n)
        self.objects = ClusterObjects()
        # Which rows' usage changed, in order, since `usage_epoch` last moved (a reload of all usage
        # moves it): the signature batches (batching.py) recompute only those rows of what they keep.
        self.usage_epoch = 0
        self.changed_rows: list[int] = []
        self.reset_usage(usage)

    # ---- usage -------------------------------------------------------------------------
    def _all_usage_changed(self) -> None:
        self.usage_epoch += 1
        self.changed_rows = []

    def _row_changed(self, row: int) -> None:
        rows = self.changed_rows
        if len(rows) >= MAX_CHANGED_ROWS:
            self._all_usage_changed()  # bounded: whoever kept the old list starts again
        else:
            rows.append(row)

    def reset_usage(self, usage: Sequence[NodeUsage] | None) -> None:
        self._all_usage_changed()
        n = self.n
        self._min_free: dict[str, int] = {}
        self.requested: dict[str, np.ndarray] = {r: np.zeros(n, dtype=np.int64) for r in self.allocatable}
        self.nonzero_requested = {CPU: np.zeros(n, dtype=np.int64), MEMORY: np.zeros(n, dtype=np.int64)}
        # (protocol, port) -> {row: [ips]}: sparse, since few pods use host ports.
        self.ports: dict[tuple[str, int], dict[int, list[str]]] = {}
        for i, u in enumerate(usage or ()):
            self._apply(i, u.requested, u.nonzero_cpu, u.nonzero_memory, u.ports, +1)

    def load_usage(self, standard: dict[str, np.ndarray], nonzero_cpu: np.ndarray, nonzero_memory: np.ndarray,
                   scalars: dict[int, dict[str, int]], ports: dict[int, list[HostPort]]) -> None:
        """Replace all usage at once from columns (a snapshot of the shared state). Only the rows whose
        usage differs count as changed, when that is cheap to know (no extended resource or host port
        anywhere, before or after)."""
        self._note_reload(standard, nonzero_cpu, nonzero_memory, scalars, ports)
        self._min_free.clear()
        for r, col in self.requested.items():
            col[:] = standard[r] if r in standard else 0
        for r, col in standard.items():
            if r not in self.requested:
                self.requested[r] = np.asarray(col, dtype=np.int64).copy()
                self.allocatable.setdefault(r, np.zeros(self.n, dtype=np.int64))
        self.nonzero_requested[CPU][:] = nonzero_cpu
        self.nonzero_requested[MEMORY][:] = nonzero_memory
        self._set_scalars(scalars)
        self.ports = {}
        for row, row_ports in ports.items():
            self.set_row_ports(row, row_ports)

    def load_usage_rows(self, rows: np.ndarray, standard: dict[str, np.ndarray], nonzero_cpu: np.ndarray,
                        nonzero_memory: np.ndarray, scalars: dict[int, dict[str, int]],
                        ports: dict[int, list[HostPort]]) -> None:
        """Replace the usage of these rows only (the shared state's, read again); every other row stands.
        `standard` and the nonzero columns are aligned with `rows`; `scalars` and `ports` are keyed by row
        and hold only the rows that have any."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return
        self._min_free.clear()
        for r, col in self.requested.items():
            col[rows] = standard[r] if r in standard else 0  # extended resources: set from `scalars` next
        self._set_scalars(scalars)
        self.nonzero_requested[CPU][rows] = nonzero_cpu
        self.nonzero_requested[MEMORY][rows] = nonzero_memory
        with_ports = {row for by_row in self.ports.values() for row in by_row}
        if len(rows) > self.n // 4:
            self._all_usage_changed()
        else:
            for row in rows.tolist():
                self._row_changed(row)
        for row in rows.tolist():
            if row in with_ports or row in ports:
                self.set_row_ports(row, ports.get(row, []))

    def _set_scalars(self, scalars: dict[int, dict[str, int]]) -> None:
        """Write rows' extended-resource usage, adding a column for a resource no node declares."""
        for row, values in scalars.items():
            for r, v in values.items():
                if r not in self.requested:
                    self.requested[r] = np.zeros(self.n, dtype=np.int64)
                    self.allocatable.setdefault(r, np.zeros(self.n, dtype=np.int64))
                self.requested[r][row] = v

    def _note_reload(self, standard, nonzero_cpu, nonzero_memory, scalars, ports) -> None:
        plain = (not scalars and not ports and not self.ports and set(self.requested) <= set(STANDARD_RESOURCES)
                 and set(standard) <= set(STANDARD_RESOURCES) and self.n and len(self.changed_rows) < MAX_CHANGED_ROWS // 2)
        if not plain:
            self._all_usage_changed()
            return
        differs = (np.asarray(nonzero_cpu) != self.nonzero_requested[CPU]) | (np.asarray(nonzero_memory) != self.nonzero_requested[MEMORY])
        for r, col in self.requested.items():
            differs |= (np.asarray(standard[r]) if r in standard else 0) != col
        rows = np.flatnonzero(differs)
        if len(rows) > self.n // 4:
            self._all_usage_changed()
        else:
            self.changed_rows.extend(rows.tolist())

    def set_row_usage(self, row: int, usage: NodeUsage) -> None:
        """Replace one node's usage (after a lost reservation race)."""
        self._row_changed(row)
        self._min_free.clear()
        for r, col in self.requested.items():
            col[row] = usage.requested.get(r, 0)
        for r, v in usage.requested.items():
            if r not in self.requested:
                self.requested[r] = np.zeros(self.n, dtype=np.int64)
                self.allocatable.setdefault(r, np.zeros(self.n, dtype=np.int64))
                self.requested[r][row] = v
        self.nonzero_requested[CPU][row] = usage.nonzero_cpu
        self.nonzero_requested[MEMORY][row] = usage.nonzero_memory
        self.set_row_ports(row, list(usage.ports))

    def set_row_ports(self, row: int, ports: list[HostPort]) -> None:
        self._row_changed(row)
        for key in list(self.ports):
            self.ports[key].pop(row, None)
            if not self.ports[key]:
                del self.ports[key]
        for p in ports:
            self.ports.setdefault((p.protocol, p.port), {}).setdefault(row, []).append(p.ip)

    def min_free(self, resource: str) -> int:
        """The least room left for `resource` on any node (allocatable - requested), cached."""
        known = self._min_free.get(resource)
        if known is None:
            if self.n == 0:
                return 0
            known = self._min_free[resource] = int((self.allocatable_of(resource) - self.requested_of(resource)).min())
        return known

    def requested_of(self, resource: str) -> np.ndarray:
        col = self.requested.get(resource)
        return col if col is not None else np.zeros(self.n, dtype=np.int64)

    def allocatable_of(self, resource: str) -> np.ndarray:
        col = self.allocatable.get(resource)
        return col if col is not None else np.zeros(self.n, dtype=np.int64)

    def add_pod(self, row: int, pod: PodSpec) -> None:
        """Count an assumed or bound pod against node `row` (the cache's assume), and index it."""
        self._apply(row, pod.requests, pod.nonzero_requests[CPU], pod.nonzero_requests[MEMORY], pod.host_ports, +1)
        self.pods.add_pod(row, pod)

    def remove_pod(self, row: int, pod: PodSpec) -> None:
        """Undo add_pod (the cache's forget, or a bound pod deleted)."""
        self._apply(row, pod.requests, pod.nonzero_requests[CPU], pod.nonzero_requests[MEMORY], pod.host_ports, -1)
        self.pods.remove_pod(row, pod)

    def _apply(self, row, requested, nonzero_cpu, nonzero_memory, ports, sign) -> None:
        changed = self.changed_rows
        if len(changed) < MAX_CHANGED_ROWS:
            changed.append(row)  # (_row_changed, inlined: every assume passes here)
        else:
            self._all_usage_changed()
        columns, min_free = self.requested, self._min_free
        for r, v in requested.items():
            col = columns.get(r)
            if col is None:
                # A resource no node declares: track what is asked of it anyway.
                col = columns[r] = np.zeros(self.n, dtype=np.int64)
                self.allocatable.setdefault(r, np.zeros(self.n, dtype=np.int64))
            used = int(col[row]) + sign * v  # (read once as a Python int: a numpy scalar's += reads it again)
            col[row] = used
            # Keep the least free room per resource exact: taking room can only lower it; giving
            # room back may raise it, so that resource is recomputed when next asked.
            known = min_free.get(r)
            if known is not None:
                if sign > 0:
                    free = int(self.allocatable[r][row]) - used
                    if free < known:
                        min_free[r] = free
                else:
                    del min_free[r]
        nonzero = self.nonzero_requested
        nonzero[CPU][row] += sign * nonzero_cpu
        nonzero[MEMORY][row] += sign * nonzero_memory
        for p in ports:
            by_row = self.ports.setdefault((p.protocol, p.port), {})
            ips = by_row.setdefault(row, [])
            if sign > 0:
                ips.append(p.ip)
            else:
                if p.ip in ips:
                    ips.remove(p.ip)
                if not ips:
                    del by_row[row]

    def usage_of(self, row: int) -> NodeUsage:
        ports = tuple(HostPort(port=port, protocol=proto, ip=ip)
                      for (proto, port), rows in self.ports.items() for ip in rows.get(row, ()))
        return NodeUsage(
            requested={r: int(col[row]) for r, col in self.requested.items() if col[row]},
            nonzero_cpu=int(self.nonzero_requested[CPU][row]),
            nonzero_memory=int(self.nonzero_requested[MEMORY][row]),
            ports=ports,
        )

    def copy(self) -> NodeTable:
        """A table sharing the static columns, with its own usage (for dry runs)."""
        other = object.__new__(NodeTable)
        other.__dict__.update(self.__dict__)
        other.requested = {r: c.copy() for r, c in self.requested.items()}
        other.nonzero_requested = {r: c.copy() for r, c in self.nonzero_requested.items()}
        other.ports = {k: {row: list(ips) for row, ips in v.items()} for k, v in self.ports.items()}
        other.allocatable = dict(self.allocatable)
        other._min_free = dict(self._min_free)
        other.pods = self.pods.copy()
        other.changed_rows = list(self.changed_rows)
        return other

    # ---- labels ------------------------------------------------------------------------
    def label(self, key: str) -> LabelColumn:
        col = self._labels.get(key)
        if col is None:
            col = self._labels[key] = LabelColumn([s.labels.get(key) for s in self.specs])
        return col

    @property
    def pod_count(self) -> np.ndarray:
        return self.requested[PODS]
