"""Field paths and field errors, as apimachinery's pkg/util/validation/field: the one field-path decoder
the KubeSchedulerConfiguration loader (engine/config) and the v1 object loader (scheduler/manifests)
share, so both name a field and word a refusal as the API server and kube-scheduler do.

Each loader adds its own typed getters on top of FieldDecoder (kube-scheduler's strict decoder and the
API server's object decoding refuse a wrong type in different words); the paths, the problem list
and the field.Error vocabulary are this module's.
"""

from __future__ import annotations

import json
import re

# Go's integer bounds: the fields we decode are int32 or int64 on the Go side.
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_INT64_TEXT = re.compile(r"[+-]?[0-9]+")  # used with fullmatch: Go's ParseInt takes no trailing newline

# The JSON kind encoding/json names in an UnmarshalTypeError.
GO_JSON_KIND = {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object",
                type(None): "null"}


def child_path(path: str, key: str | int) -> str:
    """A field path one level down: "spec.containers", "[0]", and map keys in brackets when they need them."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if not _PLAIN_KEY.match(key):
        return f"{path}[{key}]"  # as field.Path.Key: "labels[kubernetes.io/hostname]"
    return f"{path}.{key}" if path else key


def parse_int64(text: str) -> int | None:
    """As strconv.ParseInt(text, 10, 64): optional sign, ASCII digits only, within int64; else None."""
    if not _INT64_TEXT.fullmatch(text):
        return None
    value = int(text)
    return value if INT64_MIN <= value <= INT64_MAX else None


# ---------------------------------------------------------------- Go's printing of values


class GoText(str):
    """A value already printed as Go prints it (a fmt.Stringer, a %#v): field errors show it bare."""


def quote(s: str) -> str:
    """Go's %q, close enough for the strings a manifest or a config holds."""
    return json.dumps(s, ensure_ascii=False)


def go_value(value) -> str:
    """As field.Error's ErrorBody: strings as %q, numbers and Stringers bare."""
    if isinstance(value, GoText):
        return str(value)
    return quote(value) if isinstance(value, str) else str(value)


def go_strings(values: list[str] | tuple[str, ...] | None) -> GoText:
    """Go's %#v of a []string."""
    if values is None:
        return GoText("[]string(nil)")
    return GoText("[]string{" + ", ".join(quote(v) for v in values) + "}")


# ---------------------------------------------------------------- field.Error's types, worded as upstream


def invalid(value, detail: str = "") -> str:
    """As field.Invalid."""
    return f"Invalid value: {go_value(value)}: {detail}" if detail else f"Invalid value: {go_value(value)}"


def not_supported(value, supported: tuple[str, ...] | list[str]) -> str:
    """As field.NotSupported."""
    return f"Unsupported value: {go_value(value)}: supported values: " + ", ".join(quote(v) for v in supported)


def required(detail: str = "") -> str:
    """As field.Required."""
    return f"Required value: {detail}" if detail else "Required value"


def forbidden(detail: str) -> str:
    """As field.Forbidden."""
    return f"Forbidden: {detail}"


def duplicate(value, detail: str = "") -> str:
    """As field.Duplicate."""
    return f"Duplicate value: {go_value(value)}" + (f": {detail}" if detail else "")


def too_long(max_bytes: int) -> str:
    """As field.TooLong."""
    return f"Too long: must have at most {max_bytes} bytes"


def unmarshal_type_error(value, go_type: str, go_field: str = "") -> str:
    """As encoding/json's UnmarshalTypeError, inside a struct field when `go_field` names one."""
    kind = GO_JSON_KIND.get(type(value), type(value).__name__)
    into = f"Go struct field {go_field}" if go_field else "Go value"
    return f"cannot unmarshal {kind} into {into} of type {go_type}"


# ---------------------------------------------------------------- the decoder


class FieldDecoder:
    """Problems found while decoding one object, as (field path, message) in the order found.

    Recording instead of raising is what lets a loader list every problem of a file at once.
    `prefix` places a nested object ("items[3]" inside a List) in its document.
    """

    def __init__(self, prefix: str = ""):
        self.prefix = prefix
        self.problems: list[tuple[str, str]] = []

    def add(self, path: str, message: str) -> None:
        if self.prefix:
            path = f"{self.prefix}.{path}" if path else self.prefix
        self.problems.append((path, message))

    def check(self, path: str, value, errors: list[str]) -> None:
        """One field.Invalid per message of a validator such as engine.k8s_validation's."""
        for e in errors:
            self.add(path, invalid(value, e))
