"""The v1 object decoder: typed access that records a problem at its field path instead of raising (on
engine.field's FieldDecoder, shared with the scheduler configuration's loader), and ObjectMeta's fields."""

from __future__ import annotations

import json
from collections.abc import Callable

from scheduler.engine import field
from scheduler.engine.field import INT32_MAX, INT32_MIN, child_path, unmarshal_type_error
from scheduler.engine.k8s_validation import is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value

DEFAULT_NAMESPACE = "default"
TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * (1 << 10)  # apimachinery's TotalAnnotationSizeLimitB


def describe(value) -> str:
    """A value as schedboard's own type errors name it: "null", "a map", 'string "x"'."""
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


class ObjectDecoder(field.FieldDecoder):
    """Problems found in one object (prefixed "items[3]" inside a List), and typed getters that record a
    problem instead of raising."""

    def __init__(self, prefix: str = "", from_user: bool = False):
        super().__init__(prefix)
        # A file a user applies, rather than an object the API server already accepted (the kube
        # mirror) or one we stored: schedboard's own, stricter rules apply to it.
        self.from_user = from_user
        self.kind = ""
        self.ns_name = ""
        self.ident = ""  # "ns/name" or "name" once read, for the duplicate check

    def _typed(self, value, path, check: Callable[[object], bool], what: str, default):
        if value is None:
            return default
        if not check(value):
            self.add(path, f"expected {what}, got {describe(value)}")
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
            self.add(path, field.required(detail))
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
            self.add(path, unmarshal_type_error(value, "map[string]string", go_field))
            return {}
        out: dict[str, str] = {}
        for k, v in value.items():
            if v is None:
                out[k] = value[k] = ""  # and so in the stored manifest, as the API server would return it
            elif not isinstance(v, str):
                self.add(child_path(path, k), unmarshal_type_error(v, "string", go_field))
            else:
                out[k] = v
        return out

    def item(self, seq: list, i: int, path: str) -> dict | None:
        value = seq[i]
        if not isinstance(value, dict):
            self.add(child_path(path, i), f"expected a map, got {describe(value)}")
            return None
        return value


# ---- ObjectMeta ----------------------------------------------------------------------------------
def decode_labels(o: ObjectDecoder, value, path: str, go_field: str) -> dict[str, str]:
    """As ValidateLabels: qualified-name keys and label values, both reported on the map's path."""
    labels = o.string_map(value, path, go_field)
    for k, v in labels.items():
        o.check(path, k, is_qualified_name(k))
        o.check(path, v, is_valid_label_value(v))
    return labels


def decode_annotations(o: ObjectDecoder, value, path: str) -> dict[str, str]:
    """As ValidateAnnotations: keys are qualified names whatever their case; keys and values 256 KiB at most."""
    annotations = o.string_map(value, path, "ObjectMeta.metadata.annotations")
    for k in annotations:
        o.check(path, k, is_qualified_name(k.lower()))
    # Go's len(string): UTF-8 bytes (a lone surrogate, which Go reads as U+FFFD, counts 3 as well).
    size = sum(len(k.encode("utf-8", "surrogatepass")) + len(v.encode("utf-8", "surrogatepass"))
               for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT_B:
        o.add(path, field.too_long(TOTAL_ANNOTATION_SIZE_LIMIT_B))
    return annotations


def decode_metadata(o: ObjectDecoder, obj: dict, namespaced: bool) -> tuple[dict, str, str]:
    meta = o.map(obj.get("metadata"), "metadata")
    if obj.get("metadata") is None or isinstance(obj.get("metadata"), dict):
        name = o.required_str(meta.get("name"), "metadata.name", "name or generateName is required")
    else:
        name = ""  # the metadata problem already says it all
    namespace = ""
    if namespaced:
        namespace = o.str(meta.get("namespace"), "metadata.namespace") or DEFAULT_NAMESPACE
        o.check("metadata.namespace", namespace, is_dns1123_label(namespace))
    if name:
        o.check("metadata.name", name, is_dns1123_subdomain(name))
    o.ns_name = f"{namespace}/{name}" if namespaced and name else name
    o.ident = o.ns_name
    return meta, namespace, name
