"""Kubernetes v1 Node and Pod manifests (YAML or JSON) parsed into the engine's NodeSpec and PodSpec.

Accepts what `kubectl get -o yaml|json` prints, applies the API server's defaulting that the
scheduler depends on, and checks what the API server's validation would reject, so a file is
either loaded whole or refused with every problem listed (file, document, object, field path).
Imports nothing from Django: the CLI and the models both call it.
"""

from __future__ import annotations

import copy
import datetime
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple

import yaml
from kubernetes.utils import parse_quantity

from scheduler.engine.k8s_validation import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
)
from scheduler.engine.nodes import ImageState, NodeSpec
from scheduler.engine.pods import (
    NO_EXECUTE,
    NO_SCHEDULE,
    OP_DOES_NOT_EXIST,
    OP_EXISTS,
    OP_GT,
    OP_IN,
    OP_LT,
    OP_NOT_IN,
    PREFER_NO_SCHEDULE,
    Container,
    HostPort,
    NodeSelectorTerm,
    PodSpec,
    PreferredTerm,
    Requirement,
    Taint,
    Toleration,
    is_supported_pod_level_resource,
)
from scheduler.engine.resources import CPU, EPHEMERAL_STORAGE, MEMORY, is_extended_resource
from scheduler.engine.yaml_safe import DecodeProblem, child_path, load_json, load_yaml
from scheduler.quantities import format_of, go_string

STDIN = "-"
STDIN_NAME = "<stdin>"
DEFAULT_NAMESPACE = "default"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
INT64_MAX = (1 << 63) - 1
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
UID_MAX_LENGTH = 64  # Pod.uid and the uid columns of the audit tables

LIST_KINDS = {"List": None, "NodeList": "Node", "PodList": "Pod"}  # list kind -> implied item kind
TAINT_EFFECTS = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)
PROTOCOLS = ("TCP", "UDP", "SCTP")
# As IsStandardContainerResourceName: the unprefixed names a container may request.
STANDARD_CONTAINER_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE)


# ---- problems --------------------------------------------------------------------------------
@dataclass
class Problem:
    file: str
    doc: int  # 1-based document number in the file; 0 for the file as a whole
    kind: str
    ns_name: str  # "default/web" for pods, "node-a" for nodes, "" if unknown
    path: str  # "spec.containers[0].resources.requests[cpu]"; "" for the document as a whole
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.doc:
            where += f": doc {self.doc}"
        if self.kind:
            where += f" ({self.kind} {self.ns_name})" if self.ns_name else f" ({self.kind})"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class ManifestError(Exception):
    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


@dataclass
class ParsedNode:
    spec: NodeSpec
    manifest: dict  # the object as given, made JSON-safe and with API-server defaults applied
    origin: tuple[str, int, str] = ("", 0, "")  # (file, doc, "items[K]" prefix) for error messages


@dataclass
class ParsedPod:
    spec: PodSpec
    manifest: dict
    origin: tuple[str, int, str] = ("", 0, "")


# ---- field paths and typed access ---------------------------------------------------------------
_child = child_path  # the decoder's field paths and ours read the same


def _describe(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {json.dumps(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a map"
    return type(value).__name__


class _Object:
    """Problems found in one object, and typed getters that record a problem instead of raising."""

    def __init__(self, prefix: str = "", from_user: bool = False):
        self.prefix = prefix  # "items[3]" for an object inside a List
        # A file a user applies, rather than an object the API server already accepted (the kube
        # mirror) or one we stored: schedboard's own, stricter rules apply to it.
        self.from_user = from_user
        self.kind = ""
        self.ns_name = ""
        self.found: list[tuple[str, str]] = []  # (path, message)
        self.ident = ""  # "ns/name" or "name" once read, for the duplicate check

    def add(self, path: str, message: str) -> None:
        if self.prefix:
            path = f"{self.prefix}.{path}" if path else self.prefix
        self.found.append((path, message))

    def _typed(self, value, path, check: Callable[[object], bool], what: str, default):
        if value is None:
            return default
        if not check(value):
            self.add(path, f"expected {what}, got {_describe(value)}")
            return default
        return value

    def map(self, value, path: str) -> dict:
        return self._typed(value, path, lambda v: isinstance(v, dict), "a map", {})

    def list(self, value, path: str) -> list:
        return self._typed(value, path, lambda v: isinstance(v, list), "a list", [])

    def str(self, value, path: str, default: str = "") -> str:
        return self._typed(value, path, lambda v: isinstance(v, str), "a string", default)

    def required_str(self, value, path: str, detail: str = "") -> str:
        if value is None or value == "":
            self.add(path, _required(detail))
            return ""
        return self.str(value, path)

    def bool(self, value, path: str) -> bool:
        return self._typed(value, path, lambda v: isinstance(v, bool), "a boolean", False)

    def int(self, value, path: str, default: int | None = None, lo: int = INT32_MIN, hi: int = INT32_MAX) -> int | None:
        # Go's decoder takes neither "5" nor 5.0 nor true for an int32 field.
        got = self._typed(value, path, lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer", None)
        if got is None:
            return default
        if not lo <= got <= hi:
            self.add(path, f"{got} is out of range for this field ({lo} to {hi})")
            return default
        return got

    def string_map(self, value, path: str, go_field: str) -> dict[str, str]:
        """A map[string]string such as labels or nodeSelector, decoded as the API server's JSON decoder does.

        `go_field` names the Go struct field for its type errors ("ObjectMeta.metadata.labels"); a null
        value decodes to "" (a no-op on a Go string), anything else that is not a string is refused.
        """
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.add(path, _unmarshal(value, go_field, "map[string]string"))
            return {}
        out: dict[str, str] = {}
        for k, v in value.items():
            if v is None:
                out[k] = value[k] = ""  # and so in the stored manifest, as the API server would return it
            elif not isinstance(v, str):
                self.add(_child(path, k), _unmarshal(v, go_field, "string"))
            else:
                out[k] = v
        return out

    def item(self, seq: list, i: int, path: str) -> dict | None:
        value = seq[i]
        if not isinstance(value, dict):
            self.add(_child(path, i), f"expected a map, got {_describe(value)}")
            return None
        return value


# ---- field errors (names and labels are checked by engine.k8s_validation) -------------------------
_INT64_TEXT = re.compile(r"[+-]?[0-9]+")  # used with fullmatch: Go's ParseInt takes no trailing newline


# As field.Error's ErrorBody: the error type's words, the rejected value (strings quoted as Go's %q,
# numbers and quantities bare), then the detail.
def _go_value(value) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)


def _invalid(value, detail: str) -> str:
    """As field.Invalid."""
    return f"Invalid value: {_go_value(value)}: {detail}"


def _unsupported(value, supported: tuple[str, ...]) -> str:
    """As field.NotSupported."""
    return f"Unsupported value: {_go_value(value)}: supported values: " + ", ".join(json.dumps(v) for v in supported)


def _required(detail: str = "") -> str:
    """As field.Required."""
    return f"Required value: {detail}" if detail else "Required value"


def _forbidden(detail: str) -> str:
    """As field.Forbidden."""
    return f"Forbidden: {detail}"


def _duplicate(value, detail: str = "") -> str:
    """As field.Duplicate."""
    return f"Duplicate value: {_go_value(value)}" + (f": {detail}" if detail else "")


def _too_long(max_bytes: int) -> str:
    """As field.TooLong."""
    return f"Too long: must have at most {max_bytes} bytes"


_GO_JSON_KIND = {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object"}


def _unmarshal(value, go_field: str, go_type: str) -> str:
    """As encoding/json's UnmarshalTypeError inside a struct, which the API server returns for a wrong type."""
    return f"cannot unmarshal {_GO_JSON_KIND.get(type(value), 'value')} into Go struct field {go_field} of type {go_type}"


def _check(o: _Object, path: str, value: str, errors: list[str]) -> None:
    for e in errors:
        o.add(path, _invalid(value, e))


def _labels(o: _Object, value, path: str, go_field: str) -> dict[str, str]:
    """As ValidateLabels: qualified-name keys and label values, both reported on the map's path."""
    labels = o.string_map(value, path, go_field)
    for k, v in labels.items():
        _check(o, path, k, is_qualified_name(k))
        _check(o, path, v, is_valid_label_value(v))
    return labels


TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * (1 << 10)  # apimachinery's TotalAnnotationSizeLimitB


def _annotations(o: _Object, value, path: str) -> dict[str, str]:
    """As ValidateAnnotations: keys are qualified names whatever their case; keys and values 256 KiB at most."""
    annotations = o.string_map(value, path, "ObjectMeta.metadata.annotations")
    for k in annotations:
        _check(o, path, k, is_qualified_name(k.lower()))
    # Go's len(string): UTF-8 bytes (a lone surrogate, which Go reads as U+FFFD, counts 3 as well).
    size = sum(len(k.encode("utf-8", "surrogatepass")) + len(v.encode("utf-8", "surrogatepass"))
               for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT_B:
        o.add(path, _too_long(TOTAL_ANNOTATION_SIZE_LIMIT_B))
    return annotations


# ---- quantities (as k8s.io/apimachinery/pkg/api/resource) ----------------------------------------
# As ParseQuantity: sign, digits with an optional fraction, then a binary suffix (Ki..Ei), a decimal
# one (n u m k M G T P E) or a decimal exponent (e3, E-2). parse_quantity alone is laxer ("1K", " 1").
_QUANTITY = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_NANO = Decimal("1e-9")
# Past this many integer digits no quantity fits an int64 even in units, so "too large" is known from
# the exponent alone, before any integer arithmetic: "1e999999999" would be a billion-digit int.
_MAX_QUANTITY_DIGITS = 20


class Qty(NamedTuple):
    """A parsed quantity: its exact amount and the Format its suffix gives it (for printing it as Go does)."""

    amount: Decimal
    fmt: str

    def __str__(self) -> str:
        return go_string(self.amount, self.fmt)


def _quantity(o: _Object, value, path: str) -> Qty | None:
    """A quantity, or None after recording why not."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        o.add(path, f"invalid quantity: expected a string or a number, got {_describe(value)}")
        return None
    text = value if isinstance(value, str) else str(value)
    if not _QUANTITY.match(text):
        o.add(path, f"invalid quantity {json.dumps(text)}")
        return None
    try:
        amount = parse_quantity(text)
    except ValueError:
        o.add(path, f"invalid quantity {json.dumps(text)}")
        return None
    if 0 < amount.copy_abs() < _NANO:
        amount = _NANO.copy_sign(amount)  # as ParseQuantity: precision below 1n rounds up to 1n
    return Qty(amount, format_of(text))


def _scaled(resource: str, amount: Decimal) -> int:
    """kube-scheduler's units: cpu as Quantity.MilliValue, everything else as Quantity.Value (both round up)."""
    return math.ceil(amount * 1000) if resource == CPU else math.ceil(amount)


def _is_integer_resource(name: str) -> bool:
    # As helper.IsIntegerResourceName, for the names that can appear on pods and nodes.
    return name == "pods" or is_extended_resource(name)


def _is_overcommit_allowed(name: str) -> bool:
    # As helper.IsOvercommitAllowed: native resources except hugepages.
    native = "/" not in name or "kubernetes.io/" in name
    return native and not name.startswith("hugepages-")


# As helper.IsStandardResourceName: the unprefixed names the API knows (compute and quota).
STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services", "replicationcontrollers",
    "resourcequotas", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers",
})


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _resource_name(name: str) -> list[str]:
    """As validateResourceName. A ResourceName is a Stringer: upstream prints it unquoted."""
    errors = [f"Invalid value: {name}: {e}" for e in is_qualified_name(name)]
    if not errors and "/" not in name and name not in STANDARD_RESOURCES and not _is_hugepages(name):
        errors.append(f"Invalid value: {name}: must be a standard resource type or fully qualified")
    return errors


def _container_resource_name(name: str) -> list[str]:
    """As validateContainerResourceName: the problems with a resource name in a container's requests or limits."""
    errors = _resource_name(name)
    if is_qualified_name(name):
        return errors
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            errors.append(f"Invalid value: {name}: must be a standard resource for containers")
    elif "kubernetes.io/" not in name and not is_extended_resource(name):
        errors.append(f"Invalid value: {name}: doesn't follow extended resource name standard")
    return errors


# As resource.SupportedPodLevelResources, sorted as sets.List prints them.
SUPPORTED_POD_LEVEL_RESOURCES = ("cpu", "hugepages-", "memory")


def _pod_resource_name(name: str) -> list[str]:
    """As validatePodResourceName: a valid resource name that PodLevelResources supports."""
    errors = _resource_name(name)
    if not errors and not is_supported_pod_level_resource(name):
        errors.append(f"Unsupported value: {name}: supported values: "
                      + ", ".join(json.dumps(v) for v in SUPPORTED_POD_LEVEL_RESOURCES))
    return errors


def _resource_list(o: _Object, value, path: str, name_check: Callable[[str], list[str]] | None = None
                   ) -> dict[str, Qty]:
    """A ResourceList checked as ValidateResourceQuantityValue, names by `name_check` (problems, value shown bare).

    Without a name check (a node's capacity) only prefixed names must be qualified names.
    """
    out: dict[str, Qty] = {}
    for name, raw in o.map(value, path).items():
        qpath = f"{path}[{name}]"  # a ResourceList is a map: upstream's field.Path.Key, always in brackets
        if name_check:
            name_errors = name_check(name)
        else:
            name_errors = [f"Invalid value: {name}: {e}" for e in is_qualified_name(name)] if "/" in name else []
        if name_errors:
            for e in name_errors:
                o.add(qpath, e)
            continue
        q = _quantity(o, raw, qpath)
        if q is None:
            continue
        # ValidateNonnegativeQuantity and the integer check print the Quantity itself, unquoted.
        if q.amount < 0:
            o.add(qpath, f"Invalid value: {q}: must be greater than or equal to 0")
            continue
        if q.amount.adjusted() >= _MAX_QUANTITY_DIGITS or _scaled(name, q.amount) > INT64_MAX:
            o.add(qpath, _invalid(str(raw), "too large"))
            continue
        # As ValidateResourceQuantityValue: MilliValue() % 1000 for integer resources.
        if _is_integer_resource(name) and math.ceil(q.amount * 1000) % 1000:
            o.add(qpath, f"Invalid value: {q}: must be an integer")
            continue
        out[name] = q
    return out


def _units(resources: dict[str, Qty]) -> dict[str, int]:
    return {name: _scaled(name, q.amount) for name, q in resources.items()}


def _requirements(o: _Object, resources: dict, rpath: str, name_check: Callable[[str], list[str]]
                  ) -> tuple[dict[str, Qty], dict[str, Qty]]:
    """A ResourceRequirements' (requests, limits), names and quantities checked; see _within_limits."""
    requests = _resource_list(o, resources.get("requests"), _child(rpath, "requests"), name_check)
    limits = _resource_list(o, resources.get("limits"), _child(rpath, "limits"), name_check)
    return requests, limits


def _within_limits(o: _Object, rpath: str, requests: dict[str, Qty], limits: dict[str, Qty]) -> None:
    """As validateResourceRequirements: each request against its limit, and hugepages only with cpu or memory."""
    req_path, lim_path = _child(rpath, "requests"), _child(rpath, "limits")
    for res, q in requests.items():
        limit = limits.get(res)
        # Upstream reports these on the requests (and limits) map, not on the resource's key.
        if limit is not None:
            if q.amount != limit.amount and not _is_overcommit_allowed(res):
                o.add(req_path, _invalid(str(q), f"must be equal to {res} limit of {limit}"))
            elif q.amount > limit.amount:
                o.add(req_path, _invalid(str(q), f"must be less than or equal to {res} limit of {limit}"))
        elif not _is_overcommit_allowed(res):
            o.add(lim_path, _required("Limit must be set for non overcommitable resources"))
    names = set(requests) | set(limits)
    if any(_is_hugepages(n) for n in names) and not names & {CPU, MEMORY}:
        o.add(rpath, _forbidden("HugePages require cpu or memory"))


# ---- pod-level resources (PodLevelResources: beta and on by default since 1.34) ---------------------
def _qadd(into: dict[str, Qty], more: dict[str, Qty]) -> None:
    # As addResourceList with Quantity.Add: the sum keeps the first non-zero operand's format.
    for name, q in more.items():
        have = into.get(name)
        into[name] = q if have is None else Qty(have.amount + q.amount, have.fmt if have.amount else q.fmt)


def _qmax(into: dict[str, Qty], other: dict[str, Qty]) -> None:
    for name, q in other.items():
        if name not in into or q.amount > into[name].amount:
            into[name] = q


def _aggregate(regular: list[dict[str, Qty]], init: list[tuple[dict[str, Qty], bool]]) -> dict[str, Qty]:
    """As AggregateContainerRequests / AggregateContainerLimits (sidecars count in both phases), exactly."""
    total: dict[str, Qty] = {}
    for res in regular:
        _qadd(total, res)
    sidecars: dict[str, Qty] = {}
    init_max: dict[str, Qty] = {}
    for res, sidecar in init:
        if sidecar:
            _qadd(total, res)
            _qadd(sidecars, res)
            need = dict(sidecars)
        else:
            need = dict(res)
            _qadd(need, sidecars)
        _qmax(init_max, need)
    _qmax(total, init_max)
    return total


@dataclass
class _ContainerResources:
    requests: dict[str, Qty]  # after SetDefaults_Pod (a limit without a request requests the limit)
    limits: dict[str, Qty]
    sidecar: bool = False


def _pod_level_resources(o: _Object, spec: dict, regular: list[_ContainerResources],
                         init: list[_ContainerResources]) -> dict[str, int]:
    """spec.resources: defaulted as SetDefaults_Pod, validated as validatePodResources; the pod-level
    requests in kube-scheduler's units (empty when the pod sets none), which replace the containers' sum."""
    if spec.get("resources") is None:
        return {}
    rpath = "spec.resources"
    resources = o.map(spec.get("resources"), rpath)
    if resources.get("claims") is not None:
        o.add(_child(rpath, "claims"), _forbidden("claims cannot be set for Resources at pod-level"))
    requests, limits = _requirements(o, resources, rpath, _pod_resource_name)
    agg_requests = _aggregate([c.requests for c in regular], [(c.requests, c.sidecar) for c in init])
    agg_limits = _aggregate([c.limits for c in regular], [(c.limits, c.sidecar) for c in init])
    everyone = regular + init

    # Defaulting first, as the API server decodes then validates: defaultHugePagePodLimits, defaultPodRequests,
    # defaultPodLimits (pkg/apis/core/v1/defaults.go).
    if requests or limits:
        for name, agg in agg_limits.items():
            if _is_hugepages(name) and name not in requests and name not in limits:
                limits[name] = agg
    if limits:
        for name, agg in agg_requests.items():
            if name not in requests and is_supported_pod_level_resource(name) and _is_overcommit_allowed(name):
                requests[name] = agg
        for name, limit in limits.items():
            requests.setdefault(name, limit)
    if not any(is_supported_pod_level_resource(n) for n in limits) and any(is_supported_pod_level_resource(n) for n in requests):
        for name, agg in agg_limits.items():
            if (name not in limits and is_supported_pod_level_resource(name) and _is_overcommit_allowed(name)
                    and all(name in c.limits for c in everyone)):
                limits[name] = agg
    if isinstance(spec.get("resources"), dict):
        # The stored manifest says what the API server would: the defaulted requests and limits.
        for key, values in (("requests", requests), ("limits", limits)):
            given = spec["resources"].get(key) if isinstance(spec["resources"].get(key), dict) else {}
            if values and set(values) != set(given):
                spec["resources"][key] = {**{n: str(q) for n, q in values.items()}, **given}

    _within_limits(o, rpath, requests, limits)
    # As validatePodResourceConsistency: the pod's requests cover what its containers ask for together,
    # its hugepage limits what they may use together, and no container may exceed the pod's limits.
    for name, agg in agg_requests.items():
        if name in requests and agg.amount > requests[name].amount:
            o.add(f"{rpath}.requests[{name}]",
                  _invalid(str(requests[name]), f"must be greater than or equal to aggregate container requests of {agg}"))
    for name, agg in agg_limits.items():
        if _is_hugepages(name) and name in limits and agg.amount > limits[name].amount:
            o.add(f"{rpath}.limits[{name}]",
                  _invalid(str(limits[name]), f"must be greater than or equal to aggregate container limits of {agg}"))
    for i, c in enumerate(regular):
        for name, limit in c.limits.items():
            if name in limits and limit.amount > limits[name].amount:
                # Upstream builds this path from the pod-level resources path, so it reads like this.
                o.add(f"{rpath}.containers[{i}][{name}].limits",
                      _invalid(str(limit), f"must be less than or equal to pod limits of {limits[name]}"))
    return {name: _scaled(name, q.amount) for name, q in requests.items() if is_supported_pod_level_resource(name)}


# ---- pods ---------------------------------------------------------------------------------------
def _container(o: _Object, c: dict, path: str, init: bool, host_network: bool
               ) -> tuple[Container, _ContainerResources]:
    name = o.required_str(c.get("name"), _child(path, "name"))
    if name:
        _check(o, _child(path, "name"), name, is_dns1123_label(name))
    image = o.required_str(c.get("image"), _child(path, "image"))  # as validateContainers
    rpath = _child(path, "resources")
    resources = o.map(c.get("resources"), rpath)
    requests, limits = _requirements(o, resources, rpath, _container_resource_name)
    _within_limits(o, rpath, requests, limits)
    # As SetDefaults_Pod: a resource with a limit and no request requests its limit.
    effective = {**limits, **requests}
    ports = []
    ppath = _child(path, "ports")
    plist = o.list(c.get("ports"), ppath)
    for i in range(len(plist)):
        p = o.item(plist, i, ppath)
        if p is None:
            continue
        ipath = _child(ppath, i)
        container_port = o.int(p.get("containerPort"), _child(ipath, "containerPort"), 0)
        if not 1 <= container_port <= 65535:
            o.add(_child(ipath, "containerPort"), _required()
                  if not container_port else _invalid(container_port, "must be between 1 and 65535, inclusive"))
        host_port = o.int(p.get("hostPort"), _child(ipath, "hostPort"), 0)
        if host_port and not 1 <= host_port <= 65535:
            o.add(_child(ipath, "hostPort"), _invalid(host_port, "must be between 1 and 65535, inclusive"))
            host_port = 0
        if host_network and not host_port:
            host_port = container_port  # as defaultHostNetworkPorts
        protocol = o.str(p.get("protocol"), _child(ipath, "protocol")) or "TCP"
        if protocol not in PROTOCOLS:
            o.add(_child(ipath, "protocol"), _unsupported(protocol, ("SCTP", "TCP", "UDP")))
        host_ip = o.str(p.get("hostIP"), _child(ipath, "hostIP")) or "0.0.0.0"
        if host_port > 0:
            ports.append(HostPort(port=host_port, protocol=protocol, ip=host_ip))
    restart_policy = None
    if init:
        restart_policy = o.str(c.get("restartPolicy"), _child(path, "restartPolicy")) or None
        if restart_policy not in (None, "Always"):
            o.add(_child(path, "restartPolicy"), _unsupported(restart_policy, ("Always",)))
            restart_policy = None
    container = Container(name=name, image=image, requests=_units(effective), ports=tuple(ports),
                          restart_policy=restart_policy)
    return container, _ContainerResources(effective, limits, sidecar=restart_policy == "Always")


def _requirement(o: _Object, r: dict, path: str, field_selector: bool) -> Requirement:
    key = o.str(r.get("key"), _child(path, "key"))
    op = o.str(r.get("operator"), _child(path, "operator"))
    vpath = _child(path, "values")
    raw_values = o.list(r.get("values"), vpath)
    values = []
    for i, v in enumerate(raw_values):
        if isinstance(v, str):
            values.append(v)
        else:
            o.add(_child(vpath, i), f"expected a string, got {_describe(v)}")
    if field_selector:
        # As ValidateNodeFieldSelectorRequirement.
        if op in (OP_IN, OP_NOT_IN):
            if len(raw_values) != 1:
                o.add(vpath, _required("must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
        else:
            o.add(_child(path, "operator"), _invalid(op, "not a valid selector operator"))
        if key != "metadata.name":
            o.add(_child(path, "key"), _invalid(key, "not a valid field selector key"))
        else:
            for i, v in enumerate(values):
                _check(o, _child(vpath, i), v, is_dns1123_subdomain(v))
        return Requirement(key=key, operator=op, values=tuple(values))
    # As ValidateNodeSelectorRequirement.
    if op in (OP_IN, OP_NOT_IN):
        if not raw_values:
            o.add(vpath, _required("must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in (OP_EXISTS, OP_DOES_NOT_EXIST):
        if raw_values:
            o.add(vpath, _forbidden("may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif op in (OP_GT, OP_LT):
        if len(raw_values) != 1:
            o.add(vpath, _required("must be specified single value when `operator` is 'Lt' or 'Gt'"))
        elif values and not (_INT64_TEXT.fullmatch(values[0]) and -INT64_MAX - 1 <= int(values[0]) <= INT64_MAX):
            # As labels.NewRequirement, which the scheduler's node affinity matching goes through.
            o.add(_child(vpath, 0), _invalid(values[0], "for 'Gt', 'Lt' operators, the value must be an integer"))
    else:
        o.add(_child(path, "operator"), _invalid(op, "not a valid selector operator"))
    _check(o, _child(path, "key"), key, is_qualified_name(key))
    return Requirement(key=key, operator=op, values=tuple(values))


def _term(o: _Object, t: dict, path: str) -> NodeSelectorTerm:
    parts = {}
    for field_name, is_field in (("matchExpressions", False), ("matchFields", True)):
        fpath = _child(path, field_name)
        seq = o.list(t.get(field_name), fpath)
        reqs = []
        for i in range(len(seq)):
            r = o.item(seq, i, fpath)
            if r is not None:
                reqs.append(_requirement(o, r, _child(fpath, i), is_field))
        parts[field_name] = tuple(reqs)
    return NodeSelectorTerm(match_expressions=parts["matchExpressions"], match_fields=parts["matchFields"])


def _node_affinity(o: _Object, spec: dict, path: str):
    apath = _child(path, "affinity")
    napath = _child(apath, "nodeAffinity")
    na = o.map(o.map(spec.get("affinity"), apath).get("nodeAffinity"), napath)
    required = None
    rpath = _child(napath, "requiredDuringSchedulingIgnoredDuringExecution")
    if na.get("requiredDuringSchedulingIgnoredDuringExecution") is not None:
        selector = o.map(na["requiredDuringSchedulingIgnoredDuringExecution"], rpath)
        tpath = _child(rpath, "nodeSelectorTerms")
        seq = o.list(selector.get("nodeSelectorTerms"), tpath)
        if not seq:
            o.add(tpath, _required("must have at least one node selector term"))
        terms = []
        for i in range(len(seq)):
            t = o.item(seq, i, tpath)
            if t is not None:
                terms.append(_term(o, t, _child(tpath, i)))
        required = tuple(terms)
    preferred = []
    ppath = _child(napath, "preferredDuringSchedulingIgnoredDuringExecution")
    seq = o.list(na.get("preferredDuringSchedulingIgnoredDuringExecution"), ppath)
    for i in range(len(seq)):
        p = o.item(seq, i, ppath)
        if p is None:
            continue
        ipath = _child(ppath, i)
        weight = o.int(p.get("weight"), _child(ipath, "weight"), 0)
        if not 1 <= weight <= 100:
            o.add(_child(ipath, "weight"), _invalid(weight, "must be in the range 1-100"))
        pref = o.map(p.get("preference"), _child(ipath, "preference"))
        preferred.append(PreferredTerm(weight=weight, preference=_term(o, pref, _child(ipath, "preference"))))
    return required, tuple(preferred)


def _tolerations(o: _Object, value, path: str) -> tuple[Toleration, ...]:
    out = []
    seq = o.list(value, path)
    for i in range(len(seq)):
        t = o.item(seq, i, path)
        if t is None:
            continue
        ipath = _child(path, i)
        key = o.str(t.get("key"), _child(ipath, "key"))
        op = o.str(t.get("operator"), _child(ipath, "operator")) or "Equal"  # as SetDefaults: "" means Equal
        val = o.str(t.get("value"), _child(ipath, "value"))
        effect = o.str(t.get("effect"), _child(ipath, "effect"))
        seconds = o.int(t.get("tolerationSeconds"), _child(ipath, "tolerationSeconds"), None, -INT64_MAX - 1, INT64_MAX)
        # As ValidateTolerations.
        if key:
            _check(o, _child(ipath, "key"), key, is_qualified_name(key))
        elif op != "Exists":
            o.add(_child(ipath, "operator"), _invalid(
                op, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'))
        if seconds is not None and effect != NO_EXECUTE:
            o.add(_child(ipath, "effect"), _invalid(effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if op == "Equal":
            _check(o, _child(ipath, "value"), val, is_valid_label_value(val))
        elif op == "Exists":
            if val:
                o.add(_child(ipath, "value"), _invalid(val, "value must be empty when `operator` is 'Exists'"))
        else:
            o.add(_child(ipath, "operator"), _unsupported(op, ("Equal", "Exists")))
        if effect and effect not in TAINT_EFFECTS:
            o.add(_child(ipath, "effect"), _unsupported(effect, TAINT_EFFECTS))
        out.append(Toleration(key=key, operator=op, value=val, effect=effect, toleration_seconds=seconds))
    return tuple(out)


def _metadata(o: _Object, obj: dict, namespaced: bool) -> tuple[dict, str, str]:
    meta = o.map(obj.get("metadata"), "metadata")
    if obj.get("metadata") is None or isinstance(obj.get("metadata"), dict):
        name = o.required_str(meta.get("name"), "metadata.name", "name or generateName is required")
    else:
        name = ""  # the metadata problem already says it all
    namespace = ""
    if namespaced:
        namespace = o.str(meta.get("namespace"), "metadata.namespace") or DEFAULT_NAMESPACE
        _check(o, "metadata.namespace", namespace, is_dns1123_label(namespace))
    if name:
        _check(o, "metadata.name", name, is_dns1123_subdomain(name))
    o.ns_name = f"{namespace}/{name}" if namespaced and name else name
    o.ident = o.ns_name
    return meta, namespace, name


def _pod(o: _Object, obj: dict) -> PodSpec:
    meta, namespace, name = _metadata(o, obj, namespaced=True)
    _labels(o, meta.get("labels"), "metadata.labels", "ObjectMeta.metadata.labels")
    _annotations(o, meta.get("annotations"), "metadata.annotations")
    uid = o.str(meta.get("uid"), "metadata.uid")
    if len(uid) > UID_MAX_LENGTH:  # our column's size; the API server's uids are 36-character UUIDs
        o.add("metadata.uid", _too_long(UID_MAX_LENGTH))
    deleting = meta.get("deletionTimestamp") is not None
    spec = o.map(obj.get("spec"), "spec")
    spec_is_map = obj.get("spec") is None or isinstance(obj.get("spec"), dict)  # else that is the one problem
    host_network = o.bool(spec.get("hostNetwork"), "spec.hostNetwork")
    containers, init_containers = [], []
    exact: dict[bool, list[_ContainerResources]] = {False: [], True: []}  # per container, for spec.resources
    for field_name, into, init in (("containers", containers, False), ("initContainers", init_containers, True)):
        cpath = _child("spec", field_name)
        seq = o.list(spec.get(field_name), cpath)
        if not init and not spec.get(field_name) and spec_is_map:
            o.add(cpath, _required())
        for i in range(len(seq)):
            c = o.item(seq, i, cpath)
            if c is not None:
                container, resources = _container(o, c, _child(cpath, i), init, host_network)
                into.append(container)
                exact[init].append(resources)
    seen: dict[str, str] = {}
    for field_name, group in (("initContainers", init_containers), ("containers", containers)):
        for i, c in enumerate(group):
            if c.name and c.name in seen:
                o.add(f"spec.{field_name}[{i}].name", _duplicate(c.name))
            elif c.name:
                seen[c.name] = f"spec.{field_name}[{i}]"
    overhead = _units(_resource_list(o, spec.get("overhead"), "spec.overhead", _container_resource_name))
    pod_level_requests = _pod_level_resources(o, spec, exact[False], exact[True])
    node_selector = _labels(o, spec.get("nodeSelector"), "spec.nodeSelector", "PodSpec.spec.nodeSelector")
    required, preferred = _node_affinity(o, spec, "spec")
    tolerations = _tolerations(o, spec.get("tolerations"), "spec.tolerations")
    # Without the PriorityClass objects we cannot resolve spec.priorityClassName: a pod that names a
    # class but carries no spec.priority (the admission plugin would have set it) gets priority 0.
    priority = o.int(spec.get("priority"), "spec.priority", 0)
    class_name = o.str(spec.get("priorityClassName"), "spec.priorityClassName")
    if class_name:
        _check(o, "spec.priorityClassName", class_name, is_dns1123_subdomain(class_name))
    scheduler_name = o.str(spec.get("schedulerName"), "spec.schedulerName") or DEFAULT_SCHEDULER_NAME
    if o.from_user:
        # The API server takes any string here; schedboard does not: the name keys a profile, labels
        # metrics and events, and is shown and exported on every page. A profile name is a DNS-1123
        # subdomain in practice, so the same rule and upstream's words for it. Pods mirrored from a
        # cluster are taken as the API server took them.
        _check(o, "spec.schedulerName", scheduler_name, is_dns1123_subdomain(scheduler_name))
    node_name = o.str(spec.get("nodeName"), "spec.nodeName")
    if node_name:
        _check(o, "spec.nodeName", node_name, is_dns1123_subdomain(node_name))
    return PodSpec(
        namespace=namespace, name=name, uid=uid, scheduler_name=scheduler_name, priority=priority,
        node_name=node_name, node_selector=node_selector, required_terms=required, preferred_terms=preferred,
        tolerations=tolerations, containers=tuple(containers), init_containers=tuple(init_containers),
        overhead=overhead, pod_level_requests=pod_level_requests, deleting=deleting,
    )


def _default_pod_manifest(m: dict) -> None:
    """Write into a (valid) pod manifest the API-server defaults the spec was built with."""
    meta = m.setdefault("metadata", {})
    meta["namespace"] = meta.get("namespace") or DEFAULT_NAMESPACE
    spec = m.setdefault("spec", {})
    spec["schedulerName"] = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
    for field_name in ("containers", "initContainers"):
        for c in spec.get(field_name) or ():
            resources = c.get("resources") or {}
            if resources.get("limits"):
                c["resources"] = resources
                resources["requests"] = {**resources["limits"], **(resources.get("requests") or {})}
            for p in c.get("ports") or ():
                p["protocol"] = p.get("protocol") or "TCP"
                if spec.get("hostNetwork") and not p.get("hostPort"):
                    p["hostPort"] = p.get("containerPort")


# ---- nodes --------------------------------------------------------------------------------------
def _node(o: _Object, obj: dict) -> NodeSpec:
    meta, _, name = _metadata(o, obj, namespaced=False)
    labels = _labels(o, meta.get("labels"), "metadata.labels", "ObjectMeta.metadata.labels")
    _annotations(o, meta.get("annotations"), "metadata.annotations")
    spec = o.map(obj.get("spec"), "spec")
    unschedulable = o.bool(spec.get("unschedulable"), "spec.unschedulable")
    taints = []
    tpath = "spec.taints"
    seq = o.list(spec.get("taints"), tpath)
    seen: set[tuple[str, str]] = set()
    for i in range(len(seq)):
        t = o.item(seq, i, tpath)
        if t is None:
            continue
        ipath = _child(tpath, i)
        # As ValidateNodeTaints.
        key = o.str(t.get("key"), _child(ipath, "key"))  # an empty key fails the name rules, as upstream
        _check(o, _child(ipath, "key"), key, is_qualified_name(key))
        value = o.str(t.get("value"), _child(ipath, "value"))
        _check(o, _child(ipath, "value"), value, is_valid_label_value(value))
        effect = o.required_str(t.get("effect"), _child(ipath, "effect"))
        if effect and effect not in TAINT_EFFECTS:
            o.add(_child(ipath, "effect"), _unsupported(effect, TAINT_EFFECTS))
        if (key, effect) in seen:
            o.add(ipath, _duplicate(f"{key}:{effect}", "taints must be unique by key and effect pair"))
            continue
        seen.add((key, effect))
        taints.append(Taint(key=key, value=value, effect=effect))
    status = o.map(obj.get("status"), "status")
    # The kubelet reports both; allocatable is what the scheduler uses, capacity the fallback.
    source = "allocatable" if status.get("allocatable") is not None else "capacity"
    allocatable = _units(_resource_list(o, status.get(source), f"status.{source}"))
    images = []
    ipath = "status.images"
    seq = o.list(status.get("images"), ipath)
    for i in range(len(seq)):
        img = o.item(seq, i, ipath)
        if img is None:
            continue
        names = []
        npath = _child(_child(ipath, i), "names")
        for j, n in enumerate(o.list(img.get("names"), npath)):
            if isinstance(n, str):
                names.append(n)
            else:
                o.add(_child(npath, j), f"expected a string, got {_describe(n)}")
        size = o.int(img.get("sizeBytes"), _child(_child(ipath, i), "sizeBytes"), 0, 0, INT64_MAX)
        images.append(ImageState(names=tuple(names), size=size))
    return NodeSpec(name=name, labels=labels, taints=tuple(taints), allocatable=allocatable,
                    unschedulable=unschedulable, images=tuple(images))


# ---- objects, documents, files ------------------------------------------------------------------
def _jsonable(value):
    """The object as JSON would hold it: YAML timestamps become RFC 3339 strings, keys strings."""
    if isinstance(value, dict):
        return {k if isinstance(k, str) else _jsonable_key(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return value.isoformat() + "Z"
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _jsonable_key(key) -> str:
    if isinstance(key, bool):
        return str(key).lower()
    return str(key)


def _parse_object(obj, prefix: str = "", implied_kind: str | None = None, *, from_user: bool = False
                  ) -> tuple[_Object, ParsedNode | ParsedPod | None]:
    """One Node or Pod object: its problems, and the parsed result when there are none."""
    o = _Object(prefix, from_user)
    if not isinstance(obj, dict):
        o.add("", f"expected a Kubernetes object (a map with apiVersion and kind), got {_describe(obj)}")
        return o, None
    obj = _jsonable(obj)
    if implied_kind:  # items of a PodList/NodeList read from the API carry no kind or apiVersion
        obj.setdefault("kind", implied_kind)
        obj.setdefault("apiVersion", "v1")
    kind = o.str(obj.get("kind"), "kind")
    api_version = o.str(obj.get("apiVersion"), "apiVersion")
    if "kind" not in obj or obj.get("kind") == "":
        o.add("kind", _required())
    if "apiVersion" not in obj or obj.get("apiVersion") == "":
        o.add("apiVersion", _required())
    if kind and kind not in ("Node", "Pod"):
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        name, ns = meta.get("name"), meta.get("namespace")
        o.kind = kind
        o.ns_name = (f"{ns}/{name}" if isinstance(ns, str) and ns else name) if isinstance(name, str) else ""
        o.found = [(p, m) for p, m in o.found if not p.endswith("apiVersion")]
        o.add("kind", f"unsupported kind {json.dumps(kind)} (only v1 Node and Pod)")
        return o, None
    if not kind:
        return o, None
    o.kind = kind
    if api_version and api_version != "v1":
        o.add("apiVersion", f"unsupported apiVersion {json.dumps(api_version)} for {kind} (only v1)")
    spec = _pod(o, obj) if kind == "Pod" else _node(o, obj)
    if o.found:
        return o, None
    if kind == "Pod":
        _default_pod_manifest(obj)
        return o, ParsedPod(spec=spec, manifest=obj)
    return o, ParsedNode(spec=spec, manifest=obj)


@dataclass
class _Located:
    file: str
    doc: int
    prefix: str  # "items[2]" inside a List
    kind: str
    ident: str
    parsed: ParsedNode | ParsedPod | None  # None when the object has problems


def _problems_of(o: _Object, file: str, doc: int) -> list[Problem]:
    return [Problem(file, doc, o.kind, o.ns_name, path, message) for path, message in o.found]


_DOCUMENT_START = re.compile(r"^---(?=\s|$)")
_EMPTY = object()  # a document with nothing in it


def _split_documents(text: str) -> list[tuple[int, str]]:
    """The YAML stream cut at its '---' lines: (first line number, 0-based; the document's text).

    Each document is loaded on its own, so a syntax error in one does not hide the problems of the
    others, and numbering follows YAML's: text before the first '---' is a document only if it holds
    more than comments and blank lines.
    """
    docs: list[tuple[int, list[str]]] = [(0, [])]
    for i, line in enumerate(text.splitlines()):
        if _DOCUMENT_START.match(line):
            docs.append((i, ["   " + line[3:]]))  # keep columns for error positions
        else:
            docs[-1][1].append(line)
    first_lines = docs[0][1]
    if len(docs) > 1 and all(not ln.strip() or ln.lstrip().startswith("#") for ln in first_lines):
        docs.pop(0)
    return [(start, "\n".join(lines) + "\n") for start, lines in docs]


def _load_documents(text: str, filename: str) -> tuple[list, list[Problem]]:
    """The file's documents in order (_EMPTY for an empty one, None for a syntax error) and those errors."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")) or filename.endswith(".json"):
        try:
            return [load_json(text)], []
        except DecodeProblem as e:
            return [None], [Problem(filename, 1, "", "", e.path, e.message + e.where)]
        except json.JSONDecodeError as e:
            if filename.endswith(".json") or stripped.startswith("["):
                message = f"invalid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
                return [None], [Problem(filename, 1, "", "", "", message)]
            # Not JSON after all: YAML flow style such as {kind: Pod, ...} is still fine.
    docs: list = []
    problems: list[Problem] = []
    for n, (first_line, chunk) in enumerate(_split_documents(text), start=1):
        try:
            doc = load_yaml(chunk)
            docs.append(_EMPTY if doc is None else doc)
        except DecodeProblem as e:
            where = f" (line {first_line + e.line}, column {e.column})" if e.line is not None else ""
            problems.append(Problem(filename, n, "", "", e.path, e.message + where))
            docs.append(None)
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            where = f" (line {first_line + mark.line + 1}, column {mark.column + 1})" if mark else ""
            what = f"{e.context}: {e.problem}" if e.context and e.problem else (e.problem or e.context or "syntax error")
            problems.append(Problem(filename, n, "", "", "", f"invalid YAML: {what}{where}"))
            docs.append(None)
        except yaml.YAMLError as e:
            problems.append(Problem(filename, n, "", "", "", f"invalid YAML: {e}"))
            docs.append(None)
    return docs, problems


def _parse_text(text: str, filename: str) -> tuple[list[_Located], list[Problem]]:
    docs, problems = _load_documents(text, filename)
    located: list[_Located] = []
    for n, doc in enumerate(docs, start=1):
        if doc is None or doc is _EMPTY:
            continue  # a syntax error (already reported) or an empty document, which keeps its number
        if isinstance(doc, dict) and isinstance(doc.get("kind"), str) and doc["kind"] in LIST_KINDS:
            lo = _Object()
            lo.kind = doc["kind"]
            items = lo.list(doc.get("items"), "items")
            if not doc.get("apiVersion"):
                lo.add("apiVersion", _required())
            elif doc.get("apiVersion") != "v1":
                lo.add("apiVersion", f"unsupported apiVersion {json.dumps(doc.get('apiVersion'))} for {lo.kind} (only v1)")
            problems += _problems_of(lo, filename, n)
            for k, item in enumerate(items):
                o, parsed = _parse_object(item, f"items[{k}]", LIST_KINDS[doc["kind"]], from_user=True)
                problems += _problems_of(o, filename, n)
                located.append(_Located(filename, n, f"items[{k}]", o.kind, o.ident, parsed))
            continue
        o, parsed = _parse_object(doc, from_user=True)
        problems += _problems_of(o, filename, n)
        located.append(_Located(filename, n, "", o.kind, o.ident, parsed))
    return located, problems


def _duplicates(located: list[_Located]) -> list[Problem]:
    """A problem on every later object that repeats an earlier kind + namespace + name."""
    first: dict[tuple[str, str], _Located] = {}
    problems = []
    for loc in located:
        kind, ident = loc.kind, loc.ident
        if kind not in ("Node", "Pod") or not ident:
            continue
        earlier = first.setdefault((kind, ident), loc)
        if earlier is loc:
            continue
        where = f"doc {earlier.doc}" if earlier.file == loc.file else f"{earlier.file} doc {earlier.doc}"
        if earlier.prefix:
            where += f", {earlier.prefix}"
        path = f"{loc.prefix}.metadata.name" if loc.prefix else "metadata.name"
        problems.append(Problem(loc.file, loc.doc, kind, ident, path, f"duplicate {kind} {ident} (also {where})"))
    # Two pods with one uid would both be bound under it: the audit's one-binding-per-uid rule refuses
    # the second, forever. The API server gives every pod its own uid; a file that repeats one is wrong.
    owners: dict[str, _Located] = {}
    for loc in located:
        uid = loc.parsed.spec.uid if isinstance(loc.parsed, ParsedPod) else ""
        if not uid:
            continue
        earlier = owners.setdefault(uid, loc)
        if earlier is loc or earlier.ident == loc.ident:
            continue  # the same pod twice is reported above
        path = f"{loc.prefix}.metadata.uid" if loc.prefix else "metadata.uid"
        problems.append(Problem(loc.file, loc.doc, "Pod", loc.ident, path, uid_taken(uid, earlier.ident)))
    return problems


def uid_taken(uid: str, owner: str) -> str:
    """The problem with a pod whose metadata.uid is already another pod's."""
    return _duplicate(uid, f"already the uid of Pod {owner}")


def _result(located: list[_Located], problems: list[Problem], files: list[str]) -> list[ParsedNode | ParsedPod]:
    problems = problems + _duplicates(located)
    if problems:
        order = {f: i for i, f in enumerate(files)}
        problems.sort(key=lambda p: (order.get(p.file, -1), p.doc))  # stable: keeps field order within a doc
        raise ManifestError(problems)
    for loc in located:
        if loc.parsed is not None:
            loc.parsed.origin = (loc.file, loc.doc, loc.prefix)
    return [loc.parsed for loc in located if loc.parsed is not None]


def parse_documents(text: str, filename: str) -> list[ParsedNode | ParsedPod]:
    """Every Node and Pod in one file, in order; ManifestError lists every problem if there is any."""
    located, problems = _parse_text(text, filename)
    return _result(located, problems, [filename])


def _expand(path: str) -> list[str]:
    # As kubectl -f DIR: the directory's .yaml, .yml and .json files (not recursive).
    if os.path.isdir(path):
        return [os.path.join(path, f) for f in sorted(os.listdir(path))
                if f.endswith((".yaml", ".yml", ".json")) and os.path.isfile(os.path.join(path, f))]
    return [path]


def parse_files(paths: list[str], stdin_text: str | None = None) -> list[ParsedNode | ParsedPod]:
    """Every Node and Pod in the files ('-' is stdin), all or nothing: problems across files are raised together."""
    located: list[_Located] = []
    problems: list[Problem] = []
    names: list[str] = []
    for path in paths:
        for filename in ([path] if path == STDIN else _expand(path)):
            if filename == STDIN:
                name, text = STDIN_NAME, stdin_text if stdin_text is not None else ""
                names.append(name)
            else:
                name = filename
                names.append(name)
                try:
                    with open(filename, encoding="utf-8") as f:
                        text = f.read()
                except (OSError, UnicodeDecodeError) as e:
                    problems.append(Problem(name, 0, "", "", "", f"cannot read: {getattr(e, 'strerror', None) or e}"))
                    continue
            found, file_problems = _parse_text(text, name)
            located += found
            problems += file_problems
    return _result(located, problems, names)


def _single(obj: dict, kind: str) -> ParsedNode | ParsedPod:
    o, parsed = _parse_object(copy.deepcopy(obj))
    if parsed is None or o.kind != kind:
        if not o.found:
            o.add("kind", f"expected {kind}, got {json.dumps(o.kind)}")
        raise ManifestError(_problems_of(o, "<manifest>", 1))
    return parsed


def node_from_manifest(obj: dict) -> NodeSpec:
    """Rebuild a NodeSpec from a stored manifest (as parse_documents made it)."""
    return _single(obj, "Node").spec


def pod_from_manifest(obj: dict) -> PodSpec:
    """Rebuild a PodSpec from a stored manifest (as parse_documents made it)."""
    return _single(obj, "Pod").spec
