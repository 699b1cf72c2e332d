"""One v1 Node or Pod object, whatever its source (a file, the kube mirror, a stored manifest): its
problems, or the parsed result with its API-server defaults written into the manifest."""

from __future__ import annotations

import copy
import dataclasses
import datetime
import json
import math
from dataclasses import dataclass

from scheduler.engine import field
from scheduler.engine.nodes import NodeSpec
from scheduler.engine.pods import PodSpec, with_label_keys_merged

from scheduler.engine.k8s_validation import is_dns1123_label

from .cluster_objects import KINDS as CLUSTER_OBJECT_KINDS
from .cluster_objects import NAMESPACE, ParsedObject, parse_cluster_object
from .decode import ObjectDecoder, decode_annotations, decode_labels, decode_metadata, describe
from .errors import ManifestError, Problem
from .node import decode_node
from .admission import default_toleration_seconds
from .pod import decode_pod, default_pod_manifest
from .topology import merge_label_keys_into_manifest


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


def parse_object(obj, prefix: str = "", implied_kind: str | None = None, *, from_user: bool = False
                  ) -> tuple[ObjectDecoder, ParsedNode | ParsedPod | None]:
    """One Node or Pod object: its problems, and the parsed result when there are none."""
    o = ObjectDecoder(prefix, from_user)
    if not isinstance(obj, dict):
        o.add("", f"expected a Kubernetes object (a map with apiVersion and kind), got {describe(obj)}")
        return o, None
    obj = _jsonable(obj)
    if implied_kind:  # items of a PodList/NodeList read from the API carry no kind or apiVersion
        obj.setdefault("kind", implied_kind)
        obj.setdefault("apiVersion", CLUSTER_OBJECT_KINDS[implied_kind][0] if implied_kind in CLUSTER_OBJECT_KINDS else "v1")
    kind = o.str(obj.get("kind"), "kind")
    api_version = o.str(obj.get("apiVersion"), "apiVersion")
    if "kind" not in obj or obj.get("kind") == "":
        o.add("kind", field.required())
    if "apiVersion" not in obj or obj.get("apiVersion") == "":
        o.add("apiVersion", field.required())
    if kind in CLUSTER_OBJECT_KINDS:
        return o, _cluster_object(o, obj, kind, api_version)
    if kind and kind not in ("Node", "Pod"):
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        name, ns = meta.get("name"), meta.get("namespace")
        o.kind = kind
        o.ns_name = (f"{ns}/{name}" if isinstance(ns, str) and ns else name) if isinstance(name, str) else ""
        o.problems = [(p, m) for p, m in o.problems if not p.endswith("apiVersion")]
        o.add("kind", f"unsupported kind {json.dumps(kind)} ({SUPPORTED_KINDS})")
        return o, None
    if not kind:
        return o, None
    o.kind = kind
    if api_version and api_version != "v1":
        o.add("apiVersion", f"unsupported apiVersion {json.dumps(api_version)} for {kind} (only v1)")
    spec = decode_pod(o, obj) if kind == "Pod" else decode_node(o, obj)
    if o.problems:
        return o, None
    if kind == "Pod":
        default_pod_manifest(obj)
        if o.from_user:
            # As the API server at creation: matchLabelKeys / mismatchLabelKeys merged into the selectors.
            # A pod read back from the API server (or from our table) has had it done already.
            merge_label_keys_into_manifest(obj)
            spec = with_label_keys_merged(spec)
            added = default_toleration_seconds(obj)
            if added:
                spec = dataclasses.replace(spec, tolerations=spec.tolerations + tuple(added))
        return o, ParsedPod(spec=spec, manifest=obj)
    return o, ParsedNode(spec=spec, manifest=obj)


SUPPORTED_KINDS = ("only v1 Node, Pod, Namespace, Service and ReplicationController, "
                   "apps/v1 ReplicaSet, StatefulSet and Deployment, scheduling.k8s.io/v1 PriorityClass "
                   "and policy/v1 PodDisruptionBudget")


def _cluster_object(o: ObjectDecoder, obj: dict, kind: str, api_version: str) -> ParsedObject | None:
    """A Namespace, Service, ReplicaSet, StatefulSet or ReplicationController (what the scheduler reads of it)."""
    o.kind = kind
    want, namespaced = CLUSTER_OBJECT_KINDS[kind]
    if api_version and api_version != want:
        o.add("apiVersion", f"unsupported apiVersion {json.dumps(api_version)} for {kind} (only {want})")
    meta, namespace, name = decode_metadata(o, obj, namespaced=namespaced)
    if kind == NAMESPACE and name:
        o.check("metadata.name", name, is_dns1123_label(name))  # as ValidateNamespaceName
    labels = decode_labels(o, meta.get("labels"), "metadata.labels", "ObjectMeta.metadata.labels")
    decode_annotations(o, meta.get("annotations"), "metadata.annotations")
    uid = o.str(meta.get("uid"), "metadata.uid")
    parsed = parse_cluster_object(o, obj, kind, namespace, name, labels, uid)
    if o.problems:
        return None
    if namespaced:
        obj.setdefault("metadata", {})["namespace"] = namespace
    return parsed


def problems_of(o: ObjectDecoder, file: str, doc: int) -> list[Problem]:
    return [Problem(file, doc, o.kind, o.ns_name, path, message) for path, message in o.problems]


def _single(obj: dict, kind: str) -> ParsedNode | ParsedPod:
    o, parsed = parse_object(copy.deepcopy(obj))
    if parsed is None or o.kind != kind:
        if not o.problems:
            o.add("kind", f"expected {kind}, got {json.dumps(o.kind)}")
        raise ManifestError(problems_of(o, "<manifest>", 1))
    return parsed


def node_from_manifest(obj: dict) -> NodeSpec:
    """Rebuild a NodeSpec from a stored manifest (as parse_documents made it)."""
    return _single(obj, "Node").spec


def pod_from_manifest(obj: dict) -> PodSpec:
    """Rebuild a PodSpec from a stored manifest (as parse_documents made it)."""
    return _single(obj, "Pod").spec
