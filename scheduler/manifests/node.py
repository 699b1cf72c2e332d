"""A v1 Node decoded into the engine's NodeSpec, checked as the API server's validation would."""

from __future__ import annotations

from scheduler.engine import field
from scheduler.engine.field import INT64_MAX, child_path
from scheduler.engine.k8s_validation import is_qualified_name, is_valid_label_value
from scheduler.engine.nodes import ImageState, NodeSpec
from scheduler.engine.pods import Taint

from .decode import ObjectDecoder, decode_annotations, decode_labels, decode_metadata, describe
from .pod import TAINT_EFFECTS
from .resources import resource_list, units


def decode_node(o: ObjectDecoder, obj: dict) -> NodeSpec:
    meta, _, name = decode_metadata(o, obj, namespaced=False)
    labels = decode_labels(o, meta.get("labels"), "metadata.labels", "ObjectMeta.metadata.labels")
    decode_annotations(o, meta.get("annotations"), "metadata.annotations")
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
        ipath = child_path(tpath, i)
        # As ValidateNodeTaints.
        key = o.str(t.get("key"), child_path(ipath, "key"))  # an empty key fails the name rules, as upstream
        o.check(child_path(ipath, "key"), key, is_qualified_name(key))
        value = o.str(t.get("value"), child_path(ipath, "value"))
        o.check(child_path(ipath, "value"), value, is_valid_label_value(value))
        effect = o.required_str(t.get("effect"), child_path(ipath, "effect"))
        if effect and effect not in TAINT_EFFECTS:
            o.add(child_path(ipath, "effect"), field.not_supported(effect, TAINT_EFFECTS))
        if (key, effect) in seen:
            o.add(ipath, field.duplicate(f"{key}:{effect}", "taints must be unique by key and effect pair"))
            continue
        seen.add((key, effect))
        taints.append(Taint(key=key, value=value, effect=effect))
    status = o.map(obj.get("status"), "status")
    # The kubelet reports both; allocatable is what the scheduler uses, capacity the fallback.
    source = "allocatable" if status.get("allocatable") is not None else "capacity"
    allocatable = units(resource_list(o, status.get(source), f"status.{source}"))
    images = []
    ipath = "status.images"
    seq = o.list(status.get("images"), ipath)
    for i in range(len(seq)):
        img = o.item(seq, i, ipath)
        if img is None:
            continue
        names = []
        npath = child_path(child_path(ipath, i), "names")
        for j, n in enumerate(o.list(img.get("names"), npath)):
            if isinstance(n, str):
                names.append(n)
            else:
                o.add(child_path(npath, j), f"expected a string, got {describe(n)}")
        size = o.int(img.get("sizeBytes"), child_path(child_path(ipath, i), "sizeBytes"), 0, 0, INT64_MAX)
        images.append(ImageState(names=tuple(names), size=size))
    return NodeSpec(name=name, labels=labels, taints=tuple(taints), allocatable=allocatable,
                    unschedulable=unschedulable, images=tuple(images))
