"""Quantities and resource lists (as k8s.io/apimachinery/pkg/api/resource and the API server's resource
validation), in kube-scheduler's units; pod-level resources (PodLevelResources: beta and on by default
since 1.34)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple

from kubernetes.utils import parse_quantity

from scheduler.engine import field
from scheduler.engine.field import INT64_MAX, GoText, child_path
from scheduler.engine.k8s_validation import is_qualified_name
from scheduler.engine.pods import is_supported_pod_level_resource
from scheduler.engine.resources import CPU, EPHEMERAL_STORAGE, MEMORY, is_extended_resource
from scheduler.quantities import format_of, go_string

from .decode import ObjectDecoder, describe

# As IsStandardContainerResourceName: the unprefixed names a container may request.
STANDARD_CONTAINER_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE)

# As ParseQuantity: sign, digits with an optional fraction, then a binary suffix (Ki..Ei), a decimal
# one (n u m k M G T P E) or a decimal exponent (e3, E-2). parse_quantity alone is laxer ("1K", " 1").
_QUANTITY = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_NANO = Decimal("1e-9")
# Past this many integer digits no quantity fits an int64 even in units, so "too large" is known from
# the exponent alone, before any integer arithmetic: "1e999999999" would be a billion-digit int.
_MAX_QUANTITY_DIGITS = 20

# As helper.IsStandardResourceName: the unprefixed names the API knows (compute and quota).
STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services", "replicationcontrollers",
    "resourcequotas", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers",
})
# As resource.SupportedPodLevelResources, sorted as sets.List prints them.
SUPPORTED_POD_LEVEL_RESOURCES = ("cpu", "hugepages-", "memory")


class Qty(NamedTuple):
    """A parsed quantity: its exact amount and the Format its suffix gives it (for printing it as Go does)."""

    amount: Decimal
    fmt: str

    def __str__(self) -> str:
        return go_string(self.amount, self.fmt)


def _quantity(o: ObjectDecoder, value, path: str) -> Qty | None:
    """A quantity, or None after recording why not."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        o.add(path, f"invalid quantity: expected a string or a number, got {describe(value)}")
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


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _resource_name(name: str) -> list[str]:
    """As validateResourceName. A ResourceName is a Stringer: upstream prints it unquoted."""
    errors = [field.invalid(GoText(name), e) for e in is_qualified_name(name)]
    if not errors and "/" not in name and name not in STANDARD_RESOURCES and not _is_hugepages(name):
        errors.append(field.invalid(GoText(name), "must be a standard resource type or fully qualified"))
    return errors


def container_resource_name(name: str) -> list[str]:
    """As validateContainerResourceName: the problems with a resource name in a container's requests or limits."""
    errors = _resource_name(name)
    if is_qualified_name(name):
        return errors
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            errors.append(field.invalid(GoText(name), "must be a standard resource for containers"))
    elif "kubernetes.io/" not in name and not is_extended_resource(name):
        errors.append(field.invalid(GoText(name), "doesn't follow extended resource name standard"))
    return errors


def _pod_resource_name(name: str) -> list[str]:
    """As validatePodResourceName: a valid resource name that PodLevelResources supports."""
    errors = _resource_name(name)
    if not errors and not is_supported_pod_level_resource(name):
        errors.append(field.not_supported(GoText(name), SUPPORTED_POD_LEVEL_RESOURCES))
    return errors


def resource_list(o: ObjectDecoder, value, path: str, name_check: Callable[[str], list[str]] | None = None
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
            name_errors = [field.invalid(GoText(name), e) for e in is_qualified_name(name)] if "/" in name else []
        if name_errors:
            for e in name_errors:
                o.add(qpath, e)
            continue
        q = _quantity(o, raw, qpath)
        if q is None:
            continue
        # ValidateNonnegativeQuantity and the integer check print the Quantity itself, unquoted.
        if q.amount < 0:
            o.add(qpath, field.invalid(q, "must be greater than or equal to 0"))
            continue
        if q.amount.adjusted() >= _MAX_QUANTITY_DIGITS or _scaled(name, q.amount) > INT64_MAX:
            o.add(qpath, field.invalid(str(raw), "too large"))
            continue
        # As ValidateResourceQuantityValue: MilliValue() % 1000 for integer resources.
        if _is_integer_resource(name) and math.ceil(q.amount * 1000) % 1000:
            o.add(qpath, field.invalid(q, "must be an integer"))
            continue
        out[name] = q
    return out


def units(resources: dict[str, Qty]) -> dict[str, int]:
    return {name: _scaled(name, q.amount) for name, q in resources.items()}


def resource_requirements(o: ObjectDecoder, resources: dict, rpath: str, name_check: Callable[[str], list[str]]
                  ) -> tuple[dict[str, Qty], dict[str, Qty]]:
    """A ResourceRequirements' (requests, limits), names and quantities checked; see _within_limits."""
    requests = resource_list(o, resources.get("requests"), child_path(rpath, "requests"), name_check)
    limits = resource_list(o, resources.get("limits"), child_path(rpath, "limits"), name_check)
    return requests, limits


def within_limits(o: ObjectDecoder, rpath: str, requests: dict[str, Qty], limits: dict[str, Qty]) -> None:
    """As validateResourceRequirements: each request against its limit, and hugepages only with cpu or memory."""
    req_path, lim_path = child_path(rpath, "requests"), child_path(rpath, "limits")
    for res, q in requests.items():
        limit = limits.get(res)
        # Upstream reports these on the requests (and limits) map, not on the resource's key.
        if limit is not None:
            if q.amount != limit.amount and not _is_overcommit_allowed(res):
                o.add(req_path, field.invalid(str(q), f"must be equal to {res} limit of {limit}"))
            elif q.amount > limit.amount:
                o.add(req_path, field.invalid(str(q), f"must be less than or equal to {res} limit of {limit}"))
        elif not _is_overcommit_allowed(res):
            o.add(lim_path, field.required("Limit must be set for non overcommitable resources"))
    names = set(requests) | set(limits)
    if any(_is_hugepages(n) for n in names) and not names & {CPU, MEMORY}:
        o.add(rpath, field.forbidden("HugePages require cpu or memory"))


# ---- pod-level resources ----------------------------------------------------------------------------
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
class ContainerResources:
    requests: dict[str, Qty]  # after SetDefaults_Pod (a limit without a request requests the limit)
    limits: dict[str, Qty]
    sidecar: bool = False


def pod_level_resources(o: ObjectDecoder, spec: dict, regular: list[ContainerResources],
                         init: list[ContainerResources]) -> dict[str, int]:
    """spec.resources: defaulted as SetDefaults_Pod, validated as validatePodResources; the pod-level
    requests in kube-scheduler's units (empty when the pod sets none), which replace the containers' sum."""
    if spec.get("resources") is None:
        return {}
    rpath = "spec.resources"
    resources = o.map(spec.get("resources"), rpath)
    if resources.get("claims") is not None:
        o.add(child_path(rpath, "claims"), field.forbidden("claims cannot be set for Resources at pod-level"))
    requests, limits = resource_requirements(o, resources, rpath, _pod_resource_name)
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

    within_limits(o, rpath, requests, limits)
    # As validatePodResourceConsistency: the pod's requests cover what its containers ask for together,
    # its hugepage limits what they may use together, and no container may exceed the pod's limits.
    for name, agg in agg_requests.items():
        if name in requests and agg.amount > requests[name].amount:
            o.add(f"{rpath}.requests[{name}]",
                  field.invalid(str(requests[name]), f"must be greater than or equal to aggregate container requests of {agg}"))
    for name, agg in agg_limits.items():
        if _is_hugepages(name) and name in limits and agg.amount > limits[name].amount:
            o.add(f"{rpath}.limits[{name}]",
                  field.invalid(str(limits[name]), f"must be greater than or equal to aggregate container limits of {agg}"))
    for i, c in enumerate(regular):
        for name, limit in c.limits.items():
            if name in limits and limit.amount > limits[name].amount:
                # Upstream builds this path from the pod-level resources path, so it reads like this.
                o.add(f"{rpath}.containers[{i}][{name}].limits",
                      field.invalid(str(limit), f"must be less than or equal to pod limits of {limits[name]}"))
    return {name: _scaled(name, q.amount) for name, q in requests.items() if is_supported_pod_level_resource(name)}
