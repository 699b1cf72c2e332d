"""The cluster objects besides nodes and pods that the scheduler reads: Namespace (its labels, for
InterPodAffinity's namespaceSelector), Service (spec.selector), ReplicaSet, StatefulSet and
ReplicationController (spec.selector, for PodTopologySpread's default constraints).

Only what the scheduler reads is decoded and validated, with the API server's words and paths
(ValidateService's selector, ValidateReplicaSetSpec, ValidateStatefulSetSpec,
ValidateReplicationControllerSpec and their defaults); the rest of the object is kept as applied.
The caller has read and checked the metadata (name, namespace, labels) already.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from scheduler.engine.labels import SelectorError, as_selector
from .topology import label_selector

NAMESPACE, SERVICE, REPLICA_SET, STATEFUL_SET, REPLICATION_CONTROLLER = (
    "Namespace", "Service", "ReplicaSet", "StatefulSet", "ReplicationController")
# kind -> (apiVersion, namespaced, short names kubectl takes)
KINDS = {
    NAMESPACE: ("v1", False),
    SERVICE: ("v1", True),
    REPLICATION_CONTROLLER: ("v1", True),
    REPLICA_SET: ("apps/v1", True),
    STATEFUL_SET: ("apps/v1", True),
}
# ---- preemption's kinds (issue 12): PriorityClass and PodDisruptionBudget --------------------------
PRIORITY_CLASS, POD_DISRUPTION_BUDGET = "PriorityClass", "PodDisruptionBudget"
KINDS.update({
    PRIORITY_CLASS: ("scheduling.k8s.io/v1", False),
    POD_DISRUPTION_BUDGET: ("policy/v1", True),
})
# ---- end of preemption's kinds -------------------------------------------------------------------
# The workload kinds only the controllers read (scheduler/controllers/): validated as a ReplicaSet is.
DEPLOYMENT = "Deployment"
KINDS[DEPLOYMENT] = ("apps/v1", True)
LIST_KINDS = {f"{kind}List": kind for kind in KINDS}


@dataclass
class ParsedObject:
    kind: str
    namespace: str
    name: str
    uid: str
    labels: dict
    selector: dict | None  # as stored: a map (Service, RC), a LabelSelector (RS, STS); None: nil
    replicas: int | None
    manifest: dict
    origin: tuple[str, int, str] = ("", 0, "")


def _go_json(value) -> str:
    """A value as field.Error prints a non-string one: encoding/json (maps with sorted keys)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _string_map(o, value, path: str, go_field: str) -> dict[str, str]:
    return o.string_map(value, path, go_field)


def _replicas(o, spec: dict, path: str, default: int = 1) -> int:
    replicas = o.int(spec.get("replicas"), path, default)
    if replicas is not None and replicas < 0:
        o.add(path, f"Invalid value: {replicas}: must be greater than or equal to 0")
    return replicas if replicas is not None else default


def _template_labels(o, spec: dict, path: str) -> dict[str, str]:
    template = o.map(spec.get("template"), path)
    meta = o.map(template.get("metadata"), f"{path}.metadata")
    return _string_map(o, meta.get("labels"), f"{path}.metadata.labels", "ObjectMeta.metadata.labels")


def parse_cluster_object(o, obj: dict, kind: str, namespace: str, name: str, labels: dict, uid: str) -> ParsedObject:
    spec = o.map(obj.get("spec"), "spec") if kind != NAMESPACE else {}
    selector: dict | None = None
    replicas: int | None = None
    if kind == SERVICE:
        raw = spec.get("selector")
        got = _string_map(o, raw, "spec.selector", "ServiceSpec.spec.selector")
        for k, v in got.items():  # As ValidateLabels on spec.selector.
            from scheduler.engine.k8s_validation import is_qualified_name, is_valid_label_value

            for msg in is_qualified_name(k):
                o.add("spec.selector", f"Invalid value: {json.dumps(k)}: {msg}")
            for msg in is_valid_label_value(v):
                o.add("spec.selector", f"Invalid value: {json.dumps(v)}: {msg}")
        selector = got if raw is not None else None
    elif kind == REPLICATION_CONTROLLER:
        replicas = _replicas(o, spec, "spec.replicas")
        template_labels = _template_labels(o, spec, "spec.template")
        got = _string_map(o, spec.get("selector"), "spec.selector", "ReplicationControllerSpec.spec.selector")
        # As SetDefaults_ReplicationController: no selector means the template's labels.
        if not got and template_labels:
            got = dict(template_labels)
            obj.setdefault("spec", {})["selector"] = dict(got)
        if not got:
            o.add("spec.selector", "Required value")
        elif spec.get("template") is not None and any(template_labels.get(k) != v for k, v in got.items()):
            o.add("spec.template.metadata.labels",
                  f"Invalid value: {_go_json(template_labels)}: `selector` does not match template `labels`")
        selector = got
    elif kind == PRIORITY_CLASS:
        from .priority import parse_priority_class

        parse_priority_class(o, obj, name)
    elif kind == POD_DISRUPTION_BUDGET:
        from .priority import parse_pdb

        selector = parse_pdb(o, obj, spec)
    elif kind in (REPLICA_SET, STATEFUL_SET, DEPLOYMENT):
        replicas = _replicas(o, spec, "spec.replicas")
        template_labels = _template_labels(o, spec, "spec.template")
        raw = spec.get("selector")
        parsed = label_selector(o, raw, "spec.selector")
        if raw is None:
            o.add("spec.selector", "Required value")
        elif parsed is not None:
            # sic: upstream's ReplicaSet validation says "deployment" too
            what = "statefulset" if kind == STATEFUL_SET else "deployment"
            try:
                compiled = as_selector(parsed)
            except SelectorError:
                compiled = None  # label_selector reported why
            if compiled is not None and compiled.empty():
                o.add("spec.selector", f"Invalid value: {_go_json(raw)}: empty selector is invalid for {what}")
            elif compiled is not None and not compiled.matches(template_labels):
                o.add("spec.template.metadata.labels",
                      f"Invalid value: {_go_json(template_labels)}: `selector` does not match template `labels`")
        selector = raw
    return ParsedObject(kind=kind, namespace=namespace, name=name, uid=uid, labels=dict(labels), selector=selector,
                        replicas=replicas, manifest=obj)
