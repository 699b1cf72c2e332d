"""Hostile manifests, applied during a chaos run as a user would: `manage.py apply -f FILE` on the
simulated backend, a POST to the API server on the kubernetes backend (which validates first).

Every one of them should be refused with a clear error (`file: doc N: field: problem`, exit 1, no
traceback, nothing applied). One that gets in is a *poison pod*: the run then checks that it was
isolated (marked failed with a reason, or harmlessly bound) and did not stall the pods around it.
Each pod is otherwise a small, valid pod of the default scheduler, so one that gets in is queued and
scheduled in the same batches as the run's own pods.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .plan import HOSTILE_NAMESPACE


def _pod_yaml(name: str, *, metadata_extra: str = "", spec_extra: str = "", requests: str = "",
              scheduler_name: str = "default-scheduler") -> str:
    requests = requests or '          cpu: "10m"\n          memory: "8Mi"\n'
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {HOSTILE_NAMESPACE}\n{metadata_extra}"
            f"spec:\n  schedulerName: {scheduler_name}\n{spec_extra}  containers:\n  - name: app\n"
            f"    image: registry.k8s.io/pause:3.10\n    resources:\n      requests:\n{requests}")


def _pod_body(name: str, *, annotations=None, labels=None, scheduler_name="default-scheduler", requests=None) -> dict:
    meta: dict = {"name": name, "namespace": HOSTILE_NAMESPACE}
    if annotations is not None:
        meta["annotations"] = annotations
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"schedulerName": scheduler_name,
                     "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": requests or {"cpu": "10m", "memory": "8Mi"}}}]}}


def _alias_bomb(name: str) -> str:
    # Six levels of ten: about 500 bytes of YAML that expand to a million strings (8 MB as JSON).
    levels = ['    l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 6):
        refs = ", ".join([f"*l{i - 1}"] * 10)
        levels.append(f"    l{i}: &l{i} [{refs}]")
    extra = "  annotations:\n" + "\n".join(levels) + "\n"
    return _pod_yaml(name, metadata_extra=extra)


def _deep(name: str, depth: int = 20000) -> str:
    return _pod_yaml(name, metadata_extra=f"  annotations:\n    deep: {'[' * depth}{']' * depth}\n")


@dataclass(frozen=True)
class Hostile:
    kind: str
    what: str
    names: Callable[[int], list[str]]  # the pods the manifest would create
    yaml: Callable[[int], str]  # the file `apply` gets
    api_bodies: Callable[[int], list[dict]] | None = None  # what the kubernetes variant POSTs (JSON-expressible)


def _one(kind: str) -> Callable[[int], list[str]]:
    return lambda i: [f"hostile-{i}-{kind}"]


def _two(kind: str) -> Callable[[int], list[str]]:
    return lambda i: [f"hostile-{i}-{kind}-a", f"hostile-{i}-{kind}-b"]


DUPLICATE_UID = "7b0c6d9e-1f2a-4c3b-9d8e-000000000000"

CATALOGUE: dict[str, Hostile] = {h.kind: h for h in [
    Hostile("alias-bomb", "YAML anchors and aliases that expand 500 bytes into a million strings",
            _one("alias-bomb"), lambda i: _alias_bomb(f"hostile-{i}-alias-bomb")),
    Hostile("annotations-not-a-map", "metadata.annotations: 5",
            _one("annotations-not-a-map"),
            lambda i: _pod_yaml(f"hostile-{i}-annotations-not-a-map", metadata_extra="  annotations: 5\n"),
            lambda i: [_pod_body(f"hostile-{i}-annotations-not-a-map", annotations=5)]),
    Hostile("annotation-list-value", "an annotation whose value is a list",
            _one("annotation-list-value"),
            lambda i: _pod_yaml(f"hostile-{i}-annotation-list-value",
                                metadata_extra="  annotations:\n    team: [a, b]\n"),
            lambda i: [_pod_body(f"hostile-{i}-annotation-list-value", annotations={"team": ["a", "b"]})]),
    Hostile("label-int-value", "a label whose value is an integer",
            _one("label-int-value"),
            lambda i: _pod_yaml(f"hostile-{i}-label-int-value", metadata_extra="  labels:\n    tier: 7\n"),
            lambda i: [_pod_body(f"hostile-{i}-label-int-value", labels={"tier": 7})]),
    Hostile("duplicate-uid", "two pods in one file with the same metadata.uid",
            _two("duplicate-uid"),
            lambda i: "---\n".join(_pod_yaml(n, metadata_extra=f"  uid: {DUPLICATE_UID[:-4]}{i:04d}\n")
                                   for n in _two("duplicate-uid")(i))),
    Hostile("bad-scheduler-name", "spec.schedulerName that is not a DNS-1123 subdomain",
            _one("bad-scheduler-name"),
            lambda i: _pod_yaml(f"hostile-{i}-bad-scheduler-name", scheduler_name='"Default_Scheduler!!"'),
            lambda i: [_pod_body(f"hostile-{i}-bad-scheduler-name", scheduler_name="Default_Scheduler!!")]),
    Hostile("huge-integer", "spec.priority with 5,000 digits",
            _one("huge-integer"),
            lambda i: _pod_yaml(f"hostile-{i}-huge-integer", spec_extra=f"  priority: 1{'0' * 5000}\n")),
    Hostile("float-overflow", "a cpu request of 1e999999999",
            _one("float-overflow"),
            # Not sent to the API server: kube-apiserver v1.20 itself spends tens of seconds on this
            # quantity (measured: a 30 s request timeout), which attacks the API server, not us.
            lambda i: _pod_yaml(f"hostile-{i}-float-overflow", requests="          cpu: 1e999999999\n")),
    Hostile("int64-overflow", "a cpu request of 2^63 cores (past int64 in millicores)",
            _one("int64-overflow"),
            lambda i: _pod_yaml(f"hostile-{i}-int64-overflow", requests='          cpu: "9223372036854775808"\n'),
            lambda i: [_pod_body(f"hostile-{i}-int64-overflow", requests={"cpu": "9223372036854775808"})]),
    Hostile("binary-tag", "an annotation tagged !!binary",
            _one("binary-tag"),
            lambda i: _pod_yaml(f"hostile-{i}-binary-tag", metadata_extra="  annotations:\n    x: !!binary aGVsbG8=\n")),
    Hostile("set-tag", "an annotation tagged !!set",
            _one("set-tag"),
            lambda i: _pod_yaml(f"hostile-{i}-set-tag", metadata_extra="  annotations:\n    x: !!set {a, b}\n")),
    Hostile("duplicate-keys", "metadata.name given twice (kubectl refuses duplicate keys)",
            lambda i: [f"hostile-{i}-duplicate-keys-a", f"hostile-{i}-duplicate-keys-b"],
            lambda i: _pod_yaml(f"hostile-{i}-duplicate-keys-a",
                                metadata_extra=f"  name: hostile-{i}-duplicate-keys-b\n")),
    Hostile("deep-nesting", "an annotation nested 20,000 lists deep",
            _one("deep-nesting"), lambda i: _deep(f"hostile-{i}-deep-nesting")),
    Hostile("negative-request", "a cpu request of -1",
            _one("negative-request"),
            lambda i: _pod_yaml(f"hostile-{i}-negative-request", requests='          cpu: "-1"\n'),
            lambda i: [_pod_body(f"hostile-{i}-negative-request", requests={"cpu": "-1"})]),
    # (An integer key is not hostile: kubectl, like sigs.k8s.io/yaml, makes it the string "5".)
    Hostile("annotation-bad-key", "an annotation whose key is not a qualified name",
            _one("annotation-bad-key"),
            lambda i: _pod_yaml(f"hostile-{i}-annotation-bad-key", metadata_extra='  annotations:\n    "not a key!": x\n'),
            lambda i: [_pod_body(f"hostile-{i}-annotation-bad-key", annotations={"not a key!": "x"})]),
]}

KINDS = list(CATALOGUE)
# What the kubernetes variant can send at all: a JSON body (YAML-level attacks never reach the API).
API_KINDS = [k for k, h in CATALOGUE.items() if h.api_bodies is not None]


def describe() -> dict[str, str]:
    return {k: h.what for k, h in CATALOGUE.items()}
