"""The pods on a NodeTable's nodes as columns, one slot per pod, kept in step by the pod index on
every add and remove: what preemption needs of every pod (node row, priority, start time, requests)
in arrays, so the dry run over thousands of candidate nodes is a few numpy passes, not a Python loop
over their pods.
"""

from __future__ import annotations

import numpy as np

from ..pods import POD_REASON_PREEMPTION_BY_SCHEDULER, PodSpec

_NO_START = np.nan  # status.startTime unset


class PodColumns:
    """Slots are reused after a removal; `seq` keeps the order the pods were added in (upstream's
    NodeInfo.Pods order, which breaks ties between equally important pods)."""

    def __init__(self, capacity: int = 64) -> None:
        self._cap = capacity
        self.row = np.full(capacity, -1, dtype=np.int64)  # -1: free slot
        self.priority = np.zeros(capacity, dtype=np.int64)
        self.start = np.full(capacity, _NO_START, dtype=np.float64)
        self.seq = np.zeros(capacity, dtype=np.int64)
        self.group = np.zeros(capacity, dtype=np.int64)  # code of (namespace, labels)
        self.has_ports = np.zeros(capacity, dtype=bool)
        # Terminating because the scheduler preempted it (deletionTimestamp and DisruptionTarget).
        self.preempting = np.zeros(capacity, dtype=bool)
        self.requests: dict[str, np.ndarray] = {}
        self.pods = np.empty(capacity, dtype=object)  # slot -> PodSpec (an array: fancy indexing copies in C)
        self.slot_of: dict[str, int] = {}
        self._free: list[int] = []
        self.high = 0  # slots at or above this were never used
        self._seq = 0
        self.group_codes: dict[tuple, int] = {}
        self.group_keys: list[tuple[str, dict[str, str]]] = []  # code -> (namespace, labels)

    def __len__(self) -> int:
        return len(self.slot_of)

    def _grow(self) -> None:
        old, cap = self._cap, self._cap * 2
        for name in ("row", "priority", "start", "seq", "group", "has_ports", "preempting"):
            col = getattr(self, name)
            fill = -1 if name == "row" else (_NO_START if name == "start" else 0)
            grown = np.full(cap, fill, dtype=col.dtype)
            grown[:old] = col
            setattr(self, name, grown)
        for r, col in self.requests.items():
            grown = np.zeros(cap, dtype=np.int64)
            grown[:old] = col
            self.requests[r] = grown
        grown = np.empty(cap, dtype=object)
        grown[:old] = self.pods
        self.pods = grown
        self._cap = cap

    def add(self, row: int, pod: PodSpec, gkey: tuple | None = None) -> None:
        """Put the pod in a slot; `gkey` is its (namespace, sorted labels) when the caller has it already."""
        key = pod.key
        if key in self.slot_of:
            self.remove(key)
        if self._free:
            slot = self._free.pop()
            fresh = False
        else:
            if self.high == self._cap:
                self._grow()
            slot = self.high
            self.high += 1
            fresh = True  # its columns still hold their fill values: only what differs is written
        self.slot_of[key] = slot
        self.pods[slot] = pod
        self.row[slot] = row
        if pod.priority or not fresh:
            self.priority[slot] = pod.priority
        if pod.start_time is not None or not fresh:
            self.start[slot] = _NO_START if pod.start_time is None else pod.start_time
        self.seq[slot] = self._seq
        self._seq += 1
        if gkey is None:
            labels = pod.labels
            gkey = (pod.namespace, tuple(sorted(labels.items())) if labels else ())
        code = self.group_codes.get(gkey)
        if code is None:
            code = self.group_codes[gkey] = len(self.group_keys)
            self.group_keys.append((pod.namespace, dict(pod.labels)))
        if code or not fresh:
            self.group[slot] = code
        if pod.host_ports or not fresh:
            self.has_ports[slot] = bool(pod.host_ports)
        preempting = pod.deleting and pod.disruption_target_reason == POD_REASON_PREEMPTION_BY_SCHEDULER
        if preempting or not fresh:
            self.preempting[slot] = preempting
        for r, v in pod.requests.items():
            col = self.requests.get(r)
            if col is None:
                col = self.requests[r] = np.zeros(self._cap, dtype=np.int64)
            col[slot] = v

    def remove(self, key: str) -> None:
        slot = self.slot_of.pop(key, None)
        if slot is None:
            return
        pod = self.pods[slot]
        self.pods[slot] = None
        self.row[slot] = -1
        for r in pod.requests:
            self.requests[r][slot] = 0
        self._free.append(slot)

    def copy(self) -> PodColumns:
        other = object.__new__(PodColumns)
        other.__dict__.update(self.__dict__)
        for name in ("row", "priority", "start", "seq", "group", "has_ports", "preempting"):
            setattr(other, name, getattr(self, name).copy())
        other.requests = {r: c.copy() for r, c in self.requests.items()}
        other.pods = self.pods.copy()
        other.slot_of = dict(self.slot_of)
        other._free = list(self._free)
        other.group_codes = dict(self.group_codes)
        other.group_keys = list(self.group_keys)
        return other

    def on_rows(self, rows_mask: np.ndarray) -> np.ndarray:
        """The used slots whose node row is set in `rows_mask` (a bool mask over node rows)."""
        row = self.row[:self.high]
        used = row >= 0
        slots = np.flatnonzero(used)
        return slots[rows_mask[row[slots]]]

    def requests_of(self, resource: str, slots: np.ndarray) -> np.ndarray:
        col = self.requests.get(resource)
        return col[slots] if col is not None else np.zeros(len(slots), dtype=np.int64)
