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

from scheduler.engine.field import GO_JSON_KIND
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


_PERCENT_MSG = ("a valid percent string must be a numeric string followed by an ending '%' "
                "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")


def _int_or_percent(o, value, path: str) -> tuple[int, bool] | None:
    """A maxSurge / maxUnavailable (intstr.IntOrString) as ValidatePositiveIntOrPercent checks it: (value,
    is_percent), or None after recording why."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        # IntOrString.UnmarshalJSON reads anything but a string into its int32.
        kind = f"number {value}" if isinstance(value, float) else GO_JSON_KIND.get(type(value), "value")
        o.add(path, f"cannot unmarshal {kind} into Go value of type int32")
        return None
    if isinstance(value, int):
        if value < 0:
            o.add(path, f"Invalid value: {value}: must be greater than or equal to 0")
            return None
        return value, False
    if not value[:-1].isascii() or not value.endswith("%") or not value[:-1].isdigit():
        o.add(path, f"Invalid value: {_go_json(value)}: {_PERCENT_MSG}")
        return None
    return int(value[:-1]), True


def _deployment(o, obj: dict, spec: dict) -> None:
    """SetDefaults_Deployment (strategy RollingUpdate 25%/25%, revisionHistoryLimit 10, progressDeadlineSeconds
    600), written into the stored object as the API server stores it, then ValidateDeploymentSpec's checks of
    the fields the controller reads."""
    out = obj.setdefault("spec", {})
    strategy = o.map(spec.get("strategy"), "spec.strategy")
    kind = strategy.get("type") or "RollingUpdate"
    if not isinstance(kind, str):
        o.add("spec.strategy.type", f"cannot unmarshal {type(kind).__name__} into Go struct field "
                                    "DeploymentStrategy.spec.strategy.type of type v1.DeploymentStrategyType")
        return
    defaulted = {**strategy, "type": kind}
    if kind == "RollingUpdate":
        rolling = o.map(strategy.get("rollingUpdate"), "spec.strategy.rollingUpdate")
        rolling = {**rolling, **{k: "25%" for k in ("maxUnavailable", "maxSurge") if rolling.get(k) is None}}
        defaulted["rollingUpdate"] = rolling
        path = "spec.strategy.rollingUpdate"
        unavailable = _int_or_percent(o, rolling["maxUnavailable"], f"{path}.maxUnavailable")
        surge = _int_or_percent(o, rolling["maxSurge"], f"{path}.maxSurge")
        if unavailable is not None and surge is not None:
            if unavailable[0] == 0 and surge[0] == 0:
                o.add(f"{path}.maxUnavailable",
                      f"Invalid value: {_go_json(rolling['maxUnavailable'])}: may not be 0 when `maxSurge` is 0")
            if unavailable[1] and unavailable[0] > 100:
                o.add(f"{path}.maxUnavailable",
                      f"Invalid value: {_go_json(rolling['maxUnavailable'])}: must not be greater than 100%")
    elif kind == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            o.add("spec.strategy.rollingUpdate", "Forbidden: may not be specified when strategy `type` is 'Recreate'")
    else:
        o.add("spec.strategy", f"Unsupported value: {_go_json(strategy)}: supported values: \"Recreate\", "
                               f"\"RollingUpdate\"")
    out["strategy"] = defaulted
    for key, default in (("revisionHistoryLimit", 10), ("progressDeadlineSeconds", 600)):
        value = o.int(spec.get(key), f"spec.{key}", default)
        if value is not None and value < 0:
            o.add(f"spec.{key}", f"Invalid value: {value}: must be greater than or equal to 0")
        out[key] = value if value is not None else default
    min_ready = o.int(spec.get("minReadySeconds"), "spec.minReadySeconds", 0) or 0
    if min_ready < 0:
        o.add("spec.minReadySeconds", f"Invalid value: {min_ready}: must be greater than or equal to 0")
    deadline = out["progressDeadlineSeconds"]
    if isinstance(deadline, int) and deadline <= min_ready:
        o.add("spec.progressDeadlineSeconds", f"Invalid value: {deadline}: must be greater than minReadySeconds")
    o.bool(spec.get("paused"), "spec.paused")


def _statefulset_defaults(obj: dict) -> None:
    """SetDefaults_StatefulSet, written into the stored object: podManagementPolicy OrderedReady, updateStrategy
    RollingUpdate (with partition 0 when the type was left empty), the PVC retention policy Retain/Retain,
    revisionHistoryLimit 10. (MaxUnavailableStatefulSet's maxUnavailable default is not written.)"""
    spec = obj.setdefault("spec", {})
    if not spec.get("podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = dict(spec.get("updateStrategy") or {})
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        if strategy.get("rollingUpdate") is None:
            strategy["rollingUpdate"] = {}
    if strategy["type"] == "RollingUpdate" and isinstance(strategy.get("rollingUpdate"), dict):
        strategy["rollingUpdate"] = {**strategy["rollingUpdate"]}
        if strategy["rollingUpdate"].get("partition") is None:
            strategy["rollingUpdate"]["partition"] = 0
    spec["updateStrategy"] = strategy
    policy = dict(spec.get("persistentVolumeClaimRetentionPolicy") or {})
    for key in ("whenDeleted", "whenScaled"):
        if not policy.get(key):
            policy[key] = "Retain"
    spec["persistentVolumeClaimRetentionPolicy"] = policy
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10


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
        if kind == DEPLOYMENT:
            _deployment(o, obj, spec)
        elif kind == STATEFUL_SET and not o.problems:
            _statefulset_defaults(obj)
        elif kind == REPLICA_SET:
            min_ready = o.int(spec.get("minReadySeconds"), "spec.minReadySeconds", 0) or 0
            if min_ready < 0:
                o.add("spec.minReadySeconds", f"Invalid value: {min_ready}: must be greater than or equal to 0")
        if kind in (REPLICA_SET, STATEFUL_SET, DEPLOYMENT) and "replicas" not in (obj.get("spec") or {}):
            obj.setdefault("spec", {})["replicas"] = replicas  # SetDefaults_*: spec.replicas 1
    return ParsedObject(kind=kind, namespace=namespace, name=name, uid=uid, labels=dict(labels), selector=selector,
                        replicas=replicas, manifest=obj)
