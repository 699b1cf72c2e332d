"""kubectl's printers for the cluster objects the scheduler reads (printers/internalversion/printers.go):
namespaces, services, replicasets, statefulsets, replicationcontrollers and deployments, with `-o wide`
and `-A`.

The counts are the objects' status as their controllers wrote it (printDeployment, printReplicaSet,
printStatefulSet, printReplicationController): READY is status.readyReplicas over spec.replicas, CURRENT
status.replicas, UP-TO-DATE status.updatedReplicas, AVAILABLE status.availableReplicas.
"""

from __future__ import annotations

from datetime import datetime

from .printers import human_duration, table
from ..models import ClusterObject

# kubectl's resource names -> (kind, plural as `get` names it)
RESOURCES: dict[str, tuple[str, str]] = {}
for _kind, _plural, _names in (
        ("Namespace", "namespaces", ("namespace", "namespaces", "ns")),
        ("Service", "services", ("service", "services", "svc")),
        ("ReplicaSet", "replicasets.apps", ("replicaset", "replicasets", "rs")),
        ("StatefulSet", "statefulsets.apps", ("statefulset", "statefulsets", "sts")),
        ("Deployment", "deployments.apps", ("deployment", "deployments", "deploy")),
        ("ReplicationController", "replicationcontrollers", ("replicationcontroller", "replicationcontrollers", "rc"))):
    for _name in _names:
        RESOURCES[_name] = (_kind, _plural)
# ---- preemption's kinds ----
for _kind, _plural, _names in (
        ("PriorityClass", "priorityclasses.scheduling.k8s.io", ("priorityclass", "priorityclasses", "pc")),
        ("PodDisruptionBudget", "poddisruptionbudgets.policy", ("poddisruptionbudget", "poddisruptionbudgets", "pdb"))):
    for _name in _names:
        RESOURCES[_name] = (_kind, _plural)
# ---- end of preemption's kinds ----
CLUSTER_SCOPED = ("Namespace", "PriorityClass")


def _selector_text(selector) -> str:
    """As metav1.FormatLabelSelector (a LabelSelector) or labels.FormatLabels (a map)."""
    if not isinstance(selector, dict):
        return "<none>"
    if "matchLabels" in selector or "matchExpressions" in selector:
        parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
        for r in selector.get("matchExpressions") or []:
            op, key, values = r.get("operator"), r.get("key"), ",".join(r.get("values") or [])
            parts.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key,
                          "DoesNotExist": f"!{key}"}.get(op, f"{key} {op} ({values})"))
        return ",".join(parts) or "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>"


def _status(obj: ClusterObject, key: str) -> int:
    """A count of the object's status, as its controller last wrote it (absent: 0, as omitempty leaves it)."""
    status = obj.manifest.get("status")
    value = status.get(key) if isinstance(status, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _service_ports(spec: dict) -> str:
    ports = []
    for p in spec.get("ports") or []:
        text = f"{p.get('port')}/{p.get('protocol') or 'TCP'}"
        if p.get("nodePort"):
            text = f"{p.get('port')}:{p.get('nodePort')}/{p.get('protocol') or 'TCP'}"
        ports.append(text)
    return ",".join(ports) or "<none>"


def _containers(spec: dict) -> tuple[str, str]:
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return ",".join(str(c.get("name") or "") for c in containers), ",".join(str(c.get("image") or "") for c in containers)


def _int_or_na(value) -> str:
    return "N/A" if value is None else str(value)


def objects_table(kind: str, objs: list[ClusterObject], *, all_namespaces: bool, wide: bool, now: datetime) -> str:
    rows = []
    for obj in objs:
        spec = obj.manifest.get("spec") or {}
        age = human_duration((now - obj.created_at).total_seconds())
        if kind == "Namespace":
            headers, row = ["NAME", "STATUS", "AGE"], [obj.name, "Active", age]
        elif kind == "PriorityClass":  # printPriorityClass
            m = obj.manifest
            headers = ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
            row = [obj.name, str(m.get("value") or 0), "true" if m.get("globalDefault") else "false", age,
                   m.get("preemptionPolicy") or "PreemptLowerPriority"]
        elif kind == "PodDisruptionBudget":  # printPodDisruptionBudget (the caller put the status in)
            status = obj.manifest.get("status") or {}
            headers = ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]
            row = [obj.name, _int_or_na(spec.get("minAvailable")), _int_or_na(spec.get("maxUnavailable")),
                   str(status.get("disruptionsAllowed") or 0), age]
        elif kind == "Service":
            headers = ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
            row = [obj.name, spec.get("type") or "ClusterIP", spec.get("clusterIP") or "<none>",
                   ",".join(spec.get("externalIPs") or []) or "<none>", _service_ports(spec), age]
            if wide:
                headers, row = headers + ["SELECTOR"], row + [_selector_text(obj.selector)]
        elif kind == "StatefulSet":
            ready = _status(obj, "readyReplicas")
            headers, row = ["NAME", "READY", "AGE"], [obj.name, f"{ready}/{obj.replicas if obj.replicas is not None else 1}", age]
            if wide:
                names, images = _containers(spec)
                headers, row = headers + ["CONTAINERS", "IMAGES"], row + [names, images]
        elif kind == "Deployment":
            ready, up_to_date = _status(obj, "readyReplicas"), _status(obj, "updatedReplicas")
            available = _status(obj, "availableReplicas")
            want = obj.replicas if obj.replicas is not None else 1
            headers = ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
            row = [obj.name, f"{ready}/{want}", str(up_to_date), str(available), age]
            if wide:
                names, images = _containers(spec)
                headers, row = headers + ["CONTAINERS", "IMAGES", "SELECTOR"], row + [names, images, _selector_text(obj.selector)]
        else:  # ReplicaSet, ReplicationController
            current, ready = _status(obj, "replicas"), _status(obj, "readyReplicas")
            headers = ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
            row = [obj.name, str(obj.replicas if obj.replicas is not None else 1), str(current), str(ready), age]
            if wide:
                names, images = _containers(spec)
                headers, row = headers + ["CONTAINERS", "IMAGES", "SELECTOR"], row + [names, images, _selector_text(obj.selector)]
        if all_namespaces and kind not in CLUSTER_SCOPED:
            headers, row = ["NAMESPACE"] + headers, [obj.namespace] + row
        rows.append(row)
    if not rows:
        return ""
    return table(headers, rows)
