"""A scenario file, read and checked whole: every problem is reported (file, step index, field, what is
wrong) and nothing runs when there is one.

    name: node-loss                # optional
    duration: 6m                   # optional: keep the control plane running until then (default: last step)
    steps:
      - {at: 0s, apply: web.yaml}  # a file beside the scenario, inline YAML text, an object or a list of them
      - {at: 10s, fail: zone-a-large-3, unreachable: true}   # node(s): Ready=False (or Unknown)
      - {at: 40s, scale: deployment/web, replicas: 30}
      - {at: 60s, drain: zone-b-medium-1}                    # also cordon, uncordon, recover
      - {at: 90s, delete: node/zone-a-large-3}               # pod/NS/NAME, node/NAME, deployment/NAME, ...
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

import yaml

from ...manifests.cluster_objects import KINDS
from ...manifests.errors import ManifestError
from ...manifests.files import parse_documents
from ...manifests.objects import ParsedNode, ParsedPod
from ...models import ClusterObject, Node
from ..scale import SCALABLE

NODE_ACTIONS = ("fail", "recover", "cordon", "uncordon", "drain")
ACTIONS = NODE_ACTIONS + ("scale", "apply", "delete", "wait")
WAIT_CONDITIONS = ("scheduled",)
DEFAULT_WAIT_TIMEOUT = 120.0
# Keys a step may carry besides `at` and its action, per action.
OPTIONS = {"fail": {"unreachable"}, "scale": {"replicas", "namespace"}, "delete": {"namespace"},
           "drain": {"force", "ignore-daemonsets"}, "wait": {"timeout"}}
# kubectl's names for what `delete:` takes -> kind ("Pod", "Node" or a ClusterObject kind).
DELETABLE = {"pod": "Pod", "pods": "Pod", "po": "Pod", "node": "Node", "nodes": "Node", "no": "Node",
             **{name: kind for name, (kind, _) in SCALABLE.items()},
             "service": "Service", "services": "Service", "svc": "Service"}
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$")


class ScenarioError(Exception):
    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass
class Step:
    index: int
    at: float  # seconds from the start
    action: str
    target: str = ""  # node names (comma-joined for several), KIND/NAME
    names: list[str] = field(default_factory=list)  # nodes
    kind: str = ""
    namespace: str = "default"
    replicas: int = 0
    unreachable: bool = False
    force: bool = False
    ignore_daemonsets: bool = False
    manifest_text: str = ""  # apply: the documents, parsed again when the step runs
    manifest_name: str = ""
    timeout: float = DEFAULT_WAIT_TIMEOUT  # wait: wall seconds

    def describe(self) -> str:
        if self.action == "scale":
            return f"scale {self.target} --replicas {self.replicas}"
        if self.action == "apply":
            return f"apply -f {self.manifest_name}"
        return f"{self.action} {self.target}"


@dataclass
class Scenario:
    path: str
    name: str
    steps: list[Step]
    duration: float


def parse_duration(value) -> float | None:
    """Seconds from 10s / 1m30s / 500ms / 2h, or a plain number of seconds; None when it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str) or not value.strip():
        return None
    m = _DURATION.match(value.strip())
    if not m or not any(m.groups()):
        return None
    h, mins, s, ms = (float(g) if g else 0.0 for g in m.groups())
    return h * 3600 + mins * 60 + s + ms / 1000


def _show(value) -> str:
    """A value in a problem: as JSON when short, else what it is."""
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = ""
    if text and len(text) <= 60:
        return text
    return {dict: "a map", list: "a list"}.get(type(value), type(value).__name__)


class _Reader:
    """What the steps before this one leave in the cluster, so a later step may name what an earlier applies."""

    def __init__(self, path: str):
        self.path = path
        self.problems: list[tuple[int, str]] = []  # (step index, -1 for the file's own fields; problem)
        self.current = -1
        self.nodes = set(Node.objects.values_list("name", flat=True))
        self.objects = {(kind, ns, name) for kind, ns, name in ClusterObject.objects.values_list("kind", "namespace", "name")}

    def add(self, where: str, message: str) -> None:
        self.problems.append((self.current, f"{self.path}: {where}: {message}"))

    def node_names(self, where: str, value) -> list[str]:
        names = value if isinstance(value, list) else [value]
        if not names or not all(isinstance(n, str) and n for n in names):
            self.add(where, f"expected a node name or a list of them, got {_show(value)}")
            return []
        for n in names:
            if n not in self.nodes:
                self.add(where, f'node "{n}" not found (not in the cluster, nor applied by an earlier step)')
        return names

    def manifests(self, where: str, value) -> tuple[str, str]:
        """(text, name) of an apply step's documents, checked as `apply` would check them."""
        if isinstance(value, str) and "\n" not in value.strip():
            file = os.path.join(os.path.dirname(self.path), value)
            try:
                with open(file, encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError) as e:
                self.add(where, f"cannot read {file}: {getattr(e, 'strerror', None) or e}")
                return "", file
            name = file
        elif isinstance(value, str):
            text, name = value, f"{self.path}#{where}"
        elif isinstance(value, (dict, list)) and value:
            docs = value if isinstance(value, list) else [value]
            text, name = yaml.safe_dump_all(docs, sort_keys=False), f"{self.path}#{where}"
        else:
            self.add(where, f"expected a file name, YAML text, an object or a list of objects, got {_show(value)}")
            return "", ""
        try:
            parsed = parse_documents(text, name)
        except ManifestError as e:
            for p in e.problems:
                self.add(where, str(p))
            return "", name
        if not parsed:
            self.add(where, f"no objects in {name}")
        for obj in parsed:
            if isinstance(obj, ParsedNode):
                self.nodes.add(obj.spec.name)
            elif not isinstance(obj, ParsedPod):
                self.objects.add((obj.kind, obj.namespace, obj.name))
        return text, name


def _step(r: _Reader, i: int, raw) -> Step | None:
    where = f"steps[{i}]"
    r.current = i
    if not isinstance(raw, dict):
        r.add(where, f"expected a map with `at` and one action ({', '.join(ACTIONS)}), got {_show(raw)}")
        return None
    at = parse_duration(raw.get("at"))
    if "at" not in raw:
        r.add(f"{where}.at", "Required value (when the step runs: 10s, 1m30s, or seconds)")
    elif at is None or at < 0:
        r.add(f"{where}.at", f"Invalid value: {_show(raw.get('at'))}: expected a duration >= 0 such as 10s or 1m30s")
    actions = [a for a in ACTIONS if a in raw]
    if len(actions) != 1:
        r.add(where, f"expected exactly one action of {', '.join(ACTIONS)}, got "
                     f"{', '.join(actions) if actions else 'none'}")
        return None
    action = actions[0]
    allowed = {"at", action} | OPTIONS.get(action, set())
    for key in raw:
        if key not in allowed:
            r.add(f"{where}.{key}", f"unknown field for a {action} step (allowed: {', '.join(sorted(allowed))})")
    step = Step(index=i, at=at or 0.0, action=action)
    value = raw[action]
    namespace = raw.get("namespace", "default")
    if not isinstance(namespace, str) or not namespace:
        r.add(f"{where}.namespace", f"expected a namespace name, got {_show(namespace)}")
        namespace = "default"
    step.namespace = namespace
    for flag, attr in (("unreachable", "unreachable"), ("force", "force"), ("ignore-daemonsets", "ignore_daemonsets")):
        if flag in raw:
            if not isinstance(raw[flag], bool):
                r.add(f"{where}.{flag}", f"expected true or false, got {_show(raw[flag])}")
            else:
                setattr(step, attr, raw[flag])
    if action in NODE_ACTIONS:
        step.names = r.node_names(f"{where}.{action}", value)
        step.target = ",".join(step.names)
    elif action == "scale":
        kind_name, _, name = value.partition("/") if isinstance(value, str) else ("", "", "")
        if not name or kind_name.lower() not in SCALABLE:
            r.add(f"{where}.scale", f"expected KIND/NAME of a deployment, replicaset, statefulset or replicationcontroller, "
                                    f"got {_show(value)}")
        else:
            step.kind, step.target = SCALABLE[kind_name.lower()][0], f"{kind_name}/{name}"
            if (step.kind, namespace, name) not in r.objects:
                r.add(f"{where}.scale", f'{step.kind} "{namespace}/{name}" not found (not in the cluster, nor applied '
                                        "by an earlier step)")
        replicas = raw.get("replicas")
        if "replicas" not in raw:
            r.add(f"{where}.replicas", "Required value")
        elif isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
            r.add(f"{where}.replicas", f"Invalid value: {_show(replicas)}: must be an integer >= 0")
        else:
            step.replicas = replicas
    elif action == "delete":
        kind_name, _, name = value.partition("/") if isinstance(value, str) else ("", "", "")
        if not name or kind_name.lower() not in DELETABLE:
            r.add(f"{where}.delete", f"expected KIND/NAME (pod, node, deployment, replicaset, statefulset, "
                                     f"replicationcontroller, service), got {_show(value)}")
        else:
            step.kind, step.target = DELETABLE[kind_name.lower()], f"{kind_name}/{name}"
            if step.kind == "Pod" and "/" in name:
                step.namespace, _, name = name.rpartition("/")
            step.names = [name]
            if step.kind == "Node":
                if name not in r.nodes:
                    r.add(f"{where}.delete", f'node "{name}" not found (not in the cluster, nor applied by an earlier step)')
                r.nodes.discard(name)
            elif step.kind in KINDS:
                r.objects.discard((step.kind, step.namespace, name))
    elif action == "wait":
        if value not in WAIT_CONDITIONS:
            r.add(f"{where}.wait", f"Unsupported value: {_show(value)}: supported values: "
                                   + ", ".join(f'"{c}"' for c in WAIT_CONDITIONS))
        step.target = str(value)
        if "timeout" in raw:
            timeout = parse_duration(raw["timeout"])
            if timeout is None or timeout <= 0:
                r.add(f"{where}.timeout", f"Invalid value: {_show(raw['timeout'])}: expected a duration > 0 such as 2m")
            else:
                step.timeout = timeout
    else:
        step.manifest_text, step.manifest_name = r.manifests(f"{where}.apply", value)
    return step


def load(path: str) -> Scenario:
    """The scenario in `path`, checked; ScenarioError with every problem found otherwise."""
    r = _Reader(path)
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except OSError as e:
        raise ScenarioError([f"{path}: cannot read: {e.strerror or e}"]) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ScenarioError([f"{path}: invalid YAML: {getattr(e, 'problem', None) or e}{where}"]) from None
    if not isinstance(doc, dict):
        raise ScenarioError([f"{path}: expected a map with `steps`, got {_show(doc)}"])
    for key in doc:
        if key not in ("name", "duration", "steps"):
            r.add(str(key), "unknown field (allowed: duration, name, steps)")
    raw_steps = doc.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        r.add("steps", f"expected a non-empty list of steps, got {_show(raw_steps)}")
        raw_steps = []
    # Steps run in time order (ties keep file order); what an earlier step applies counts for a later one.
    timed = sorted(enumerate(raw_steps), key=lambda e: (parse_duration(e[1].get("at")) or 0.0)
                   if isinstance(e[1], dict) else 0.0)
    steps = [s for s in (_step(r, i, raw) for i, raw in timed) if s is not None]
    r.current = -1
    duration = 0.0
    if "duration" in doc:
        got = parse_duration(doc["duration"])
        if got is None or got < 0:
            r.add("duration", f"Invalid value: {_show(doc['duration'])}: expected a duration such as 6m or 90s")
        else:
            duration = got
    last = max((s.at for s in steps), default=0.0)
    if duration and duration < last:
        r.add("duration", f"Invalid value: {_show(doc['duration'])}: ends before the last step (at {last:g}s)")
    name = doc.get("name", os.path.splitext(os.path.basename(path))[0])
    if not isinstance(name, str):
        r.add("name", f"expected a string, got {_show(name)}")
    if r.problems:
        # In file order (the steps were checked in time order); a step's own problems in the order found.
        raise ScenarioError([msg for _, msg in sorted(r.problems, key=lambda p: p[0])])
    return Scenario(path=path, name=str(name), steps=steps, duration=max(duration, last))
