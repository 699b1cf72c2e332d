"""Topology domains over a NodeTable: each node's value of a topology key as an integer code, and
per-domain sums of per-node counts (one bincount instead of a map keyed by (key, value))."""

from __future__ import annotations

import numpy as np

from .nodes import NodeTable


class Domains:
    """The domains of one topology key: `codes[row]` is the node's value code (-1: the node lacks the
    key), `values[code]` the value."""

    __slots__ = ("key", "codes", "values", "size", "_slots", "_has_key", "_take")

    def __init__(self, nodes: NodeTable, key: str):
        col = nodes.label(key)
        self.key = key
        self.codes = col.codes
        self.values = list(col.vocab)  # vocab is insertion-ordered: code i is the i-th value
        self.size = len(self.values)
        self._slots: np.ndarray | None = None
        self._has_key = self.codes >= 0
        # Each node's index into a per-value vector with one extra slot (at `size`) for "no key".
        self._take = np.where(self._has_key, self.codes, self.size)

    def slots(self) -> np.ndarray:
        """Each node's value slot, reading a missing key as the value "" (as Go's map lookup does):
        the node's value code, else the code of "" if some node has that value, else `size`."""
        if self._slots is None:
            empty = self.values.index("") if "" in self.values else self.size
            self._slots = np.where(self.codes >= 0, self.codes, empty)
        return self._slots

    def has_key(self) -> np.ndarray:
        """Nodes having the key (shared: do not modify)."""
        return self._has_key

    def sums(self, per_node: np.ndarray, include: np.ndarray | None = None) -> np.ndarray:
        """Per value code, the sum of `per_node` over the (included) nodes having the key."""
        codes = self.codes if include is None else self.codes[include]
        weights = per_node if include is None else per_node[include]
        keep = codes >= 0
        if not keep.all():
            codes, weights = codes[keep], weights[keep]
        if len(codes) == 0:
            return np.zeros(self.size, dtype=np.int64)
        return np.rint(np.bincount(codes, weights=weights, minlength=self.size)).astype(np.int64)

    def present(self, include: np.ndarray | None = None) -> np.ndarray:
        """Per value code, whether any (included) node has that value."""
        codes = self.codes if include is None else self.codes[include]
        codes = codes[codes >= 0]
        out = np.zeros(self.size, dtype=bool)
        out[codes] = True
        return out

    def sums_and_present(self, per_node: np.ndarray, include: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """sums() and present() over the same included nodes, with one selection."""
        keep = include & self._has_key
        codes = self.codes[keep]
        if len(codes) == 0:
            return np.zeros(self.size, dtype=np.int64), np.zeros(self.size, dtype=bool)
        sums = np.rint(np.bincount(codes, weights=per_node[keep], minlength=self.size)).astype(np.int64)
        present = np.bincount(codes, minlength=self.size) > 0
        return sums, present

    def at_nodes(self, per_value: np.ndarray, default=0) -> np.ndarray:
        """Each node's entry of a per-value vector (`default` where the node lacks the key)."""
        return np.append(per_value, np.asarray(default, dtype=per_value.dtype))[self._take]


def domains(nodes: NodeTable, key: str) -> Domains:
    """The table's Domains of `key`, built once per table."""
    cache = nodes.__dict__.setdefault("_domains", {})
    d = cache.get(key)
    if d is None:
        d = cache[key] = Domains(nodes, key)
    return d
