"""The trace format: JSON lines, the cluster at the start, then timed events.

    {"kind": "trace", "version": 1, "source": ..., "start": iso, "end": iso, "seed": n|null (the live tie-break seed),
     "batch_size": n, "feature_gates": {"SchedulerPopFromBackoffQ": bool, ...} (the live run's; upstream's defaults
     when absent), "config": {"version": n, "config": config_to_dict()} | null}
    {"kind": "node", "manifest": {...}}                    a node at the start
    {"kind": "pod", "manifest": {...}, "node": "n1"|null}  a pod at the start: bound, or pending (queued at t=0;
                                                           "tiebreaks" as pod_add's, for its attempts in the window)
    {"kind": "object", "manifest": {...}}                  Namespace, Service, ReplicaSet... (what plugins read)
    {"kind": "bind_failures", "pods": {"ns/name": n}}      bindings the live binder had refused, per pod (its first
                                                           n bindings fail in the replay too, under any configuration)
    {"t": s, "kind": "pod_add", "manifest": {...}, "node": null, "first_attempt_t": s}   (when the live loop first
                                                           tried it, if it did: the replay queues it then;
                                                           "first_snapshot_t": when that attempt's snapshot was
                                                           read, if recorded: the replay queues it then instead;
                                                           "retry_snapshot_t": [s, ...] the snapshot instants of its
                                                           later live attempts: the replay retries it then;
                                                           "tiebreaks": [[seed, position, start index] | null, ...]
                                                           where each live attempt's random choices stood: the
                                                           replay draws from there, engine/tiebreak.py)
    {"t": s, "kind": "pod_delete", "key": "ns/name"}
    {"t": s, "kind": "node_add" | "node_update", "manifest": {...}}
    {"t": s, "kind": "node_delete", "name": "n1"}
    {"t": s, "kind": "object_add", "manifest": {...}}      an object created (or changed) in the window
    {"t": s, "kind": "config", "version": n, "config": {...}}
    {"t": s, "kind": "bound", "key": "ns/name", "node": "n1"}   what the live run did (compared, never replayed)

`t` is seconds since the start. Events are kept in file order for equal `t`, which is the order
they happened in. A `kubectl get nodes,pods -A -o yaml` dump is read as a trace with a start and
no events (pods without a node arrive at t=0).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from scheduler.manifests.errors import ManifestError
from scheduler.manifests.files import parse_documents
from scheduler.manifests.objects import ParsedNode, ParsedPod

TRACE_VERSION = 1
TERMINAL_PHASES = ("Succeeded", "Failed")

HEADER = "trace"
START_KINDS = ("node", "pod", "object", "bind_failures")
POD_ADD, POD_DELETE = "pod_add", "pod_delete"
NODE_ADD, NODE_UPDATE, NODE_DELETE = "node_add", "node_update", "node_delete"
CONFIG, BOUND, OBJECT_ADD = "config", "bound", "object_add"
EVENT_KINDS = (POD_ADD, POD_DELETE, NODE_ADD, NODE_UPDATE, NODE_DELETE, OBJECT_ADD, CONFIG, BOUND)


class TraceError(ValueError):
    """A trace that cannot be read: the message names the line."""


@dataclass
class Trace:
    header: dict = field(default_factory=dict)
    nodes: list[dict] = field(default_factory=list)  # manifests
    pods: list[tuple[dict, str | None]] = field(default_factory=list)  # (manifest, node or None)
    objects: list[dict] = field(default_factory=list)
    bind_failures: dict[str, int] = field(default_factory=dict)  # pod key -> bindings the live run saw refused
    # Pods pending at the start: pod key -> where each of its live attempts' random choices stood (pod_add's
    # "tiebreaks" is on the event itself).
    pod_tiebreaks: dict[str, list] = field(default_factory=dict)
    events: list[dict] = field(default_factory=list)  # sorted by t, stable

    @property
    def recorded_placements(self) -> dict[str, list[str]]:
        """What the live run bound, pod key -> the nodes of its bindings in order, from the "bound" events (a
        name can be bound more than once: a StatefulSet's pod deleted and created again under it)."""
        out: dict[str, list[str]] = {}
        for e in self.events:
            if e["kind"] == BOUND:
                out.setdefault(e["key"], []).append(e["node"])
        return out

    def lines(self):
        yield {"kind": HEADER, "version": TRACE_VERSION, **{k: v for k, v in self.header.items()
                                                             if k not in ("kind", "version")}}
        for m in self.nodes:
            yield {"kind": "node", "manifest": m}
        for m, node in self.pods:
            tiebreaks = self.pod_tiebreaks.get(pod_key(m)) if node is None else None
            yield {"kind": "pod", "manifest": m, "node": node, **({"tiebreaks": tiebreaks} if tiebreaks else {})}
        for m in self.objects:
            yield {"kind": "object", "manifest": m}
        if self.bind_failures:
            yield {"kind": "bind_failures", "pods": self.bind_failures}
        yield from self.events

    def dump(self, fp) -> int:
        n = 0
        for line in self.lines():
            fp.write(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n")
            n += 1
        return n

    def summary(self) -> dict:
        counts: dict[str, int] = {}
        for e in self.events:
            counts[e["kind"]] = counts.get(e["kind"], 0) + 1
        return {"source": self.header.get("source", ""), "start": self.header.get("start"),
                "end": self.header.get("end"), "nodes": len(self.nodes), "pods": len(self.pods),
                "events": counts, "duration_s": self.events[-1]["t"] if self.events else 0.0}


def pod_key(manifest: dict) -> str:
    meta = manifest.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def _check_tiebreaks(line: dict, where: str) -> None:
    value = line.get("tiebreaks", [])

    def whole(v):
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    if not isinstance(value, list) or not all(
            v is None or (isinstance(v, list) and len(v) == 3 and all(whole(x) for x in v)) for v in value):
        raise TraceError(f"{where}: tiebreaks must be a list of [seed, position, start index] (whole numbers) or null, "
                         f"got {value!r}")


def _require(line: dict, keys: tuple[str, ...], where: str) -> None:
    missing = [k for k in keys if k not in line]
    if missing:
        raise TraceError(f"{where}: {line.get('kind')!r} needs {', '.join(missing)}")


def read_trace(text: str, filename: str = "<trace>") -> Trace:
    """A JSON-lines trace, or a kubectl YAML/JSON dump of nodes and pods (read as a starting state)."""
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    try:
        head = json.loads(first)
    except ValueError:
        head = None
    if not (isinstance(head, dict) and head.get("kind") == HEADER):
        return trace_from_manifests(text, filename)
    trace = Trace()
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{filename}:{number}"
        try:
            line = json.loads(raw)
        except ValueError as exc:
            raise TraceError(f"{where}: not JSON: {exc}") from None
        if not isinstance(line, dict):
            raise TraceError(f"{where}: a line must be a JSON object")
        kind = line.get("kind")
        if kind == HEADER:
            if line.get("version") != TRACE_VERSION:
                raise TraceError(f"{where}: trace version {line.get('version')!r}, this reader knows {TRACE_VERSION}")
            trace.header = line
        elif kind == "node" or kind == "object":
            _require(line, ("manifest",), where)
            (trace.nodes if kind == "node" else trace.objects).append(line["manifest"])
        elif kind == "bind_failures":
            pods = line.get("pods")
            if not isinstance(pods, dict) or not all(isinstance(n, int) and n >= 0 for n in pods.values()):
                raise TraceError(f"{where}: 'bind_failures' needs pods, a map of pod key to a count")
            trace.bind_failures.update(pods)
        elif kind == "pod":
            _require(line, ("manifest",), where)
            _check_tiebreaks(line, where)
            trace.pods.append((line["manifest"], line.get("node") or None))
            if line.get("tiebreaks") and isinstance(line["manifest"], dict):
                trace.pod_tiebreaks[pod_key(line["manifest"])] = line["tiebreaks"]
        elif kind in EVENT_KINDS:
            _require(line, ("t",), where)
            needs = {POD_ADD: ("manifest",), POD_DELETE: ("key",), NODE_ADD: ("manifest",), NODE_UPDATE: ("manifest",),
                     NODE_DELETE: ("name",), OBJECT_ADD: ("manifest",), CONFIG: ("config",), BOUND: ("key", "node")}[kind]
            _require(line, needs, where)
            for name in ("t", "first_attempt_t", "first_snapshot_t"):
                value = line.get(name, 0)
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                    raise TraceError(f"{where}: {name} must be seconds since the start, got {value!r}")
            retries = line.get("retry_snapshot_t", [])
            if not isinstance(retries, list) or any(isinstance(v, bool) or not isinstance(v, (int, float))
                                                    or not 0 <= v < float("inf") for v in retries):
                raise TraceError(f"{where}: retry_snapshot_t must be a list of seconds since the start, got {retries!r}")
            _check_tiebreaks(line, where)
            trace.events.append(line)
        else:
            raise TraceError(f"{where}: unknown kind {kind!r}")
    trace.events.sort(key=lambda e: e["t"])  # stable: equal times keep file order
    return trace


def trace_from_manifests(text: str, filename: str, *, source: str = "manifests") -> Trace:
    """A starting state from Node and Pod documents (a `kubectl get nodes,pods -A -o yaml` List too),
    decoded by the same parser as `apply`, so what apply refuses, this refuses with the same words."""
    try:
        parsed = parse_documents(text, filename)
    except ManifestError as exc:
        raise TraceError(str(exc)) from None
    trace = Trace(header={"source": source, "start": None, "end": None, "seed": None, "config": None})
    for obj in parsed:
        if isinstance(obj, ParsedNode):
            trace.nodes.append(obj.manifest)
        elif isinstance(obj, ParsedPod):
            if (obj.manifest.get("status") or {}).get("phase") in TERMINAL_PHASES:
                continue  # a finished pod holds no room: kube-scheduler's informer leaves it out too
            trace.pods.append((obj.manifest, obj.spec.node_name or None))
    if not trace.nodes and not trace.pods:
        raise TraceError(f"{filename}: neither a trace nor any Node or Pod")
    return trace
