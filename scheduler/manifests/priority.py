"""PriorityClass (scheduling.k8s.io/v1) and PodDisruptionBudget (policy/v1) as the API server validates
them, and the Priority admission plugin: a pod's spec.priorityClassName resolved to spec.priority and
spec.preemptionPolicy (plugin/pkg/admission/priority), the globalDefault class for a pod naming none, or
priority 0 when there is no such class.

Pure: the caller gives the classes it knows (the stored ones and those of the same apply, or the
files of `explain --cluster`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass

from scheduler.engine import field
from scheduler.engine.pods import PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER

from .topology import label_selector

PREEMPTION_POLICIES = (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER)
# pkg/apis/scheduling: the highest value a user's class may have, and the two system classes.
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS = 0
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"
SYSTEM_NODE_CRITICAL = "system-node-critical"
UNHEALTHY_POD_EVICTION_POLICIES = ("IfHealthyBudget", "AlwaysAllow")
_PERCENT = re.compile(r"^[0-9]+%$")


@dataclass(frozen=True)
class PriorityClassInfo:
    name: str
    value: int
    preemption_policy: str = PREEMPT_LOWER_PRIORITY
    global_default: bool = False


# As scheduling.SystemPriorityClasses(): the API server creates them at start (its bootstrap hook), so every
# cluster has them; our databases get them when migrated (cluster/objects.py).
SYSTEM_CLASSES = {
    SYSTEM_NODE_CRITICAL: PriorityClassInfo(SYSTEM_NODE_CRITICAL, 2_000_000_000 + 1000),
    SYSTEM_CLUSTER_CRITICAL: PriorityClassInfo(SYSTEM_CLUSTER_CRITICAL, 2_000_000_000),
}
SYSTEM_CLASS_DESCRIPTIONS = {
    SYSTEM_NODE_CRITICAL: "Used for system critical pods that must not be moved from their current node.",
    SYSTEM_CLUSTER_CRITICAL: "Used for system critical pods that must run in the cluster, but can be moved to another "
                             "node if necessary.",
}


def system_class_manifest(name: str) -> dict:
    """A system class as the API server creates it (globalDefault false, so left out, as its JSON omits it)."""
    info = SYSTEM_CLASSES[name]
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": info.value, "description": SYSTEM_CLASS_DESCRIPTIONS[name],
            "preemptionPolicy": info.preemption_policy}


def _known_system_class(name: str, value: int, global_default: bool) -> str | None:
    """As IsKnownSystemPriorityClass: why a class under the system prefix is not one of the system classes."""
    known = SYSTEM_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if known.value != value:
        return f"value of {name} PriorityClass must be {known.value}"
    if known.global_default != global_default:
        return f"globalDefault of {name} PriorityClass must be {str(known.global_default).lower()}"
    return None


def parse_priority_class(o, obj: dict, name: str) -> PriorityClassInfo:
    """ValidatePriorityClass, with SetDefaults_PriorityClass (preemptionPolicy) written into the object."""
    value = o.int(obj.get("value"), "value", 0)
    global_default = o.bool(obj.get("globalDefault"), "globalDefault")
    o.str(obj.get("description"), "description")
    policy = o.str(obj.get("preemptionPolicy"), "preemptionPolicy") or PREEMPT_LOWER_PRIORITY
    if policy not in PREEMPTION_POLICIES:
        o.add("preemptionPolicy", field.not_supported(policy, PREEMPTION_POLICIES))
    obj["preemptionPolicy"] = policy
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        why = _known_system_class(name, value or 0, bool(global_default))
        if why:
            o.add("metadata.name", field.forbidden(
                f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use only. "
                f"error: {why}"))
    elif value is not None and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        o.add("value", field.forbidden(
            f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"))
    return PriorityClassInfo(name, value or 0, policy, global_default)


def priority_class_info(manifest: dict) -> PriorityClassInfo:
    """A stored (valid) PriorityClass."""
    meta = manifest.get("metadata") or {}
    return PriorityClassInfo(str(meta.get("name") or ""), int(manifest.get("value") or 0),
                             manifest.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY,
                             bool(manifest.get("globalDefault")))


def _int_or_percent(o, value, path: str) -> None:
    """ValidatePositiveIntOrPercent and IsNotMoreThan100Percent."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        o.add(path, f"expected an integer or a percent string, got {json.dumps(value)}")
    elif isinstance(value, int):
        if value < 0:
            o.add(path, f"Invalid value: {value}: must be greater than or equal to 0")
    elif not _PERCENT.match(value):
        o.add(path, f"Invalid value: {json.dumps(value)}: a valid percent string must be a numeric string followed "
                    "by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")
    elif int(value[:-1]) > 100:
        o.add(path, f"Invalid value: {json.dumps(value)}: must not be greater than 100%")


def parse_pdb(o, obj: dict, spec: dict) -> dict | None:
    """ValidatePodDisruptionBudgetSpec; the spec.selector as stored (None: nil, which selects no pod)."""
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        o.add("spec", f"Invalid value: {json.dumps(spec, sort_keys=True, separators=(',', ':'))}: "
                      "minAvailable and maxUnavailable cannot be both set")
    for key, value in (("minAvailable", min_available), ("maxUnavailable", max_unavailable)):
        if value is not None:
            _int_or_percent(o, value, f"spec.{key}")
    policy = o.str(spec.get("unhealthyPodEvictionPolicy"), "spec.unhealthyPodEvictionPolicy")
    if policy and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        o.add("spec.unhealthyPodEvictionPolicy", field.not_supported(policy, UNHEALTHY_POD_EVICTION_POLICIES))
    raw = spec.get("selector")
    label_selector(o, raw, "spec.selector")
    return raw if isinstance(raw, dict) else None


def default_class(classes: dict[str, PriorityClassInfo]) -> PriorityClassInfo | None:
    """As getDefaultPriorityClass: the globalDefault class (the lowest value if several claim it)."""
    defaults = [c for c in classes.values() if c.global_default]
    return min(defaults, key=lambda c: c.value) if defaults else None


def admit_priority(parsed, classes: dict[str, PriorityClassInfo]) -> list[tuple[str, str]]:
    """As the Priority admission plugin on a pod's creation (plugin/pkg/admission/priority, admitPod): (path,
    message) problems, or none and the pod's manifest and spec carry the priority and preemptionPolicy computed.

    A pod naming a class takes its value and policy (the system classes too, in any namespace: master has no
    namespace rule, a cluster limits them with a ResourceQuota); an unknown class is refused. A pod naming none
    takes the globalDefault class (its name too), or with no such class priority 0 and PreemptLowerPriority
    (getDefaultPriority). A spec.priority or spec.preemptionPolicy that differs from what was computed is
    refused with the plugin's words."""
    spec_m = parsed.manifest.setdefault("spec", {})
    name = spec_m.get("priorityClassName") or ""
    all_classes = {**SYSTEM_CLASSES, **classes}
    if name:
        cls = all_classes.get(name)
        if cls is None:
            return [("spec.priorityClassName", f"no PriorityClass with name {name} was found")]
    else:
        cls = default_class(classes)
    value = cls.value if cls is not None else DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS
    policy = cls.preemption_policy if cls is not None else PREEMPT_LOWER_PRIORITY
    given = spec_m.get("priority")
    if given is not None and given != value:
        return [("spec.priority", f"the integer value of priority ({given}) must not be provided in pod spec; "
                                  f"priority admission controller computed {value} from the given PriorityClass name")]
    given_policy = spec_m.get("preemptionPolicy")
    if given_policy and given_policy != policy:
        return [("spec.preemptionPolicy", f"the string value of PreemptionPolicy ({given_policy}) must not be provided "
                                          f"in pod spec; priority admission controller computed {policy} from the "
                                          "given PriorityClass name")]
    if cls is not None:
        spec_m["priorityClassName"] = cls.name
    spec_m["priority"] = value
    spec_m["preemptionPolicy"] = policy
    parsed.spec = dataclasses.replace(parsed.spec, priority=value, preemption_policy=policy)
    return []


def keep_priority(parsed, stored: dict) -> None:
    """An update of an existing pod: what admission set at its creation stays (priority is immutable),
    so a file that leaves those fields out applies as unchanged."""
    old = stored.get("spec") or {}
    spec_m = parsed.manifest.setdefault("spec", {})
    for key in ("priorityClassName", "priority", "preemptionPolicy"):
        if key in old and key not in spec_m:
            spec_m[key] = old[key]
    parsed.spec = dataclasses.replace(parsed.spec, priority=int(spec_m.get("priority") or 0),
                                      preemption_policy=spec_m.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY)
