"""The text upstream's pod-template-hash is computed over: hashutil.DeepHashObject prints the Go value of the
v1.PodTemplateSpec with go-spew (`%#v`, SortKeys, DisableMethods, SpewKeys) and fnv32a hashes that printout.
This prints the same text from a template's JSON, reading it as the deployment controller's informer holds it:

- the layout of every struct is k8s.io/api's (data/pod_template_types.json, made by
  scripts/gen_pod_template_types.py from the sources): every field, set or not, in declaration order, each
  value prefixed by its Go type as reflect names it ("(*int64)30", "([]v1.Container)[...]"), nil pointers,
  slices and maps as "<nil>";
- the value is what a protobuf round trip leaves (the controller's informer decodes protobuf): empty lists
  and maps are nil, a pointer to an empty struct is not;
- quantities are the canonical strings the API server stored, parsed again as resource.ParseQuantity does
  (its int64Amount, infDecAmount and the cached string spew prints, all unexported);
- the template is first defaulted as the API server defaults it (template_defaults.py).

What cannot be printed as upstream does raises Unprintable: a timestamp in the template's metadata (Go
prints a time.Location, which depends on the controller's time zone) and managedFields (their raw bytes are
not the JSON given)."""

from __future__ import annotations

import json
import re
from decimal import ROUND_CEILING, ROUND_UP, Decimal, localcontext
from functools import lru_cache
from pathlib import Path

from kubernetes.utils import parse_quantity

from ..quantities import BINARY_SI, DECIMAL_EXPONENT, DECIMAL_SI, format_of, go_string

LAYOUT_FILE = Path(__file__).resolve().parent / "data" / "pod_template_types.json"
_DISPLAY = {"core": "v1", "meta": "v1"}  # our package keys -> the Go package names reflect prints
_INTS = {"int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64"}


class Unprintable(ValueError):
    """A template whose Go printout depends on what its JSON does not say."""


@lru_cache(maxsize=4)
def layout(path: str = str(LAYOUT_FILE)) -> dict:
    return json.loads(Path(path).read_text())["types"]


def type_name(expr: str) -> str:
    """reflect.Type.String() of a type expression: core.PodSpec -> v1.PodSpec, []core.Container -> []v1.Container."""
    return re.sub(r"\b(core|meta)\.", lambda m: _DISPLAY[m.group(1)] + ".", expr)


def _split_map(expr: str) -> tuple[str, str]:
    depth, i = 1, 4
    while depth:
        depth += {"[": 1, "]": -1}.get(expr[i], 0)
        i += 1
    return expr[4:i - 1], expr[i:]


# ---- quantities -------------------------------------------------------------------------------------

_NANO = Decimal("1e-9")
_SUFFIX = {"": (10, 0), "n": (10, -9), "u": (10, -6), "m": (10, -3), "k": (10, 3), "M": (10, 6), "G": (10, 9),
           "T": (10, 12), "P": (10, 15), "E": (10, 18), "Ki": (2, 10), "Mi": (2, 20), "Gi": (2, 30), "Ti": (2, 40),
           "Pi": (2, 50), "Ei": (2, 60)}
_INT64_MAX = 2**63 - 1


def canonical_quantity(value, milli: bool = False) -> str:
    """The string the API server stores for a quantity written as `value` (Quantity.String after its parse
    rounded it up to nano precision; `milli`: SetDefaults_ResourceList's RoundUp to milli first)."""
    text = value if isinstance(value, str) else str(value)
    with localcontext() as ctx:
        ctx.prec = 80
        amount = parse_quantity(text.strip())
        amount = amount.quantize(_NANO, rounding=ROUND_UP) if amount != amount.quantize(_NANO) else amount
        if milli:
            amount = amount.quantize(Decimal("0.001"), rounding=ROUND_CEILING) \
                if amount != amount.quantize(Decimal("0.001")) else amount
        fmt = format_of(text)
        if fmt == BINARY_SI and 0 < abs(amount) < 1:
            fmt = DECIMAL_SI
        return go_string(amount, fmt)


def _parse_quantity_string(s: str) -> tuple[bool, str, str, str, str]:
    """parseQuantityString: (positive, value, num, denom, suffix)."""
    positive, pos, end = True, 0, len(s)
    if pos < end and s[0] in "+-":
        positive = s[0] != "-"
        pos += 1
    while pos < end and s[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and s[pos].isdigit():
        pos += 1
    num = s[start:pos] or "0"
    denom = ""
    if pos < end and s[pos] == ".":
        pos += 1
        start = pos
        while pos < end and s[pos].isdigit():
            pos += 1
        denom = s[start:pos]
    return positive, s[:pos], num, denom, s[pos:]


def _suffix(suffix: str) -> tuple[int, int, str]:
    if suffix in _SUFFIX:
        base, exponent = _SUFFIX[suffix]
        return base, exponent, BINARY_SI if base == 2 else DECIMAL_SI
    return 10, int(suffix[1:]), DECIMAL_EXPONENT  # e3, E-2


def _nat(n: int) -> str:
    """A big.nat (little-endian 64-bit words) as spew prints it."""
    words = []
    while n:
        words.append(str(n & (2**64 - 1)))
        n >>= 64
    return "(big.nat)[" + " ".join(words) + "]" if words else "(big.nat)<nil>"


def quantity_fields(canonical: str) -> str:
    """The fields of the resource.Quantity ParseQuantity makes of a canonical string, as spew prints them."""
    def fields(value: int, scale: int, cached: str, fmt: str, dec: str = "(*inf.Dec)<nil>") -> str:
        return (f"{{i:(resource.int64Amount){{value:(int64){value} scale:(resource.Scale){scale}}} "
                f"d:(resource.infDecAmount){{Dec:{dec}}} s:(string){cached} Format:(resource.Format){fmt}}}")
    if canonical == "0":
        return fields(0, 0, "0", DECIMAL_SI)
    positive, value, num, denom, suffix = _parse_quantity_string(canonical)
    base, exponent, fmt = _suffix(suffix)
    mantissa, precision, scale = 1, -1, 0
    if fmt in (DECIMAL_EXPONENT, DECIMAL_SI):
        scale = exponent
        precision = 18 - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        mantissa = 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1  # int(float32(exponent)*3/10): exact here
    if precision >= 0:
        scale -= len(denom)
        if scale >= -9:
            shifted = num + denom
            number = int(shifted)
            result = number * mantissa
            if abs(result) <= _INT64_MAX:
                if not positive:
                    result = -result
                if fmt == BINARY_SI:
                    canonical_form = exponent % 10 == 0 and (number & 0x07) != 0
                else:
                    canonical_form = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return fields(result, scale, canonical if canonical_form else "", fmt)
    # The slow path: an inf.Dec rounded up to nano scale (its big.Int printed word by word).
    with localcontext() as ctx:
        ctx.prec = 200
        amount = Decimal(value) * (Decimal(10) ** exponent if base == 10 else Decimal(2) ** exponent)
        if amount != 0:
            amount = amount.quantize(_NANO, rounding=ROUND_UP)
        dec_scale = 9
        if fmt == BINARY_SI and abs(amount) > _INT64_MAX:
            amount, dec_scale = Decimal(_INT64_MAX).copy_sign(amount), 0
        if fmt == BINARY_SI and 0 < abs(amount) < 1:
            fmt = DECIMAL_SI
        unscaled = int(amount.scaleb(dec_scale))
    dec = (f"(*inf.Dec){{unscaled:(big.Int){{neg:(bool){'true' if unscaled < 0 else 'false'} "
           f"abs:{_nat(abs(unscaled))}}} scale:(inf.Scale){dec_scale}}}")
    return fields(0, 0, "", fmt, dec)


# ---- the printer --------------------------------------------------------------------------------------

def _is_nil(value) -> bool:
    return value is None or value == [] or value == {}


class Printer:
    def __init__(self, types: dict):
        self.types = types

    def kind(self, expr: str) -> str:
        """The reflect.Kind family: ptr, slice, map, struct, or the basic type's name."""
        while True:
            if expr.startswith("*"):
                return "ptr"
            if expr.startswith("[]"):
                return "slice"
            if expr.startswith("map["):
                return "map"
            if expr in ("resource.Quantity", "intstr.IntOrString", "time.Time"):
                return "struct"
            t = self.types.get(expr)
            if t is None:
                return expr
            if t["kind"] == "struct":
                return "struct"
            expr = t["underlying"]

    def underlying(self, expr: str) -> str:
        while expr in self.types and self.types[expr]["kind"] == "named":
            expr = self.types[expr]["underlying"]
        return expr

    def format(self, expr: str, value, ignore_type: bool = False) -> str:
        if expr.startswith("*"):
            return self._pointer(expr, value, ignore_type)
        prefix = "" if ignore_type else f"({type_name(expr)})"
        kind = self.kind(expr)
        base = self.underlying(expr)
        if kind == "slice":
            if _is_nil(value):
                return prefix + "<nil>"
            elem = base[2:]
            return prefix + "[" + " ".join(self.format(elem, v, True) for v in value) + "]"
        if kind == "map":
            if _is_nil(value):
                return prefix + "<nil>"
            key, elem = _split_map(base)
            items = sorted(value.items(), key=lambda kv: str(kv[0]).encode())
            return prefix + "map[" + " ".join(f"{self.format(key, k, True)}:{self.format(elem, v, True)}"
                                                for k, v in items) + "]"
        if kind == "struct":
            return prefix + self._struct(expr, value)
        if kind == "string":
            return prefix + ("" if value is None else str(value))
        if kind == "bool":
            return prefix + ("true" if value else "false")
        if kind in _INTS:
            return prefix + str(int(value or 0))
        raise Unprintable(f"no printer for the Go kind {kind!r} ({expr})")

    def _pointer(self, expr: str, value, ignore_type: bool) -> str:
        elem = expr[1:]
        if value is None:
            return "<nil>" if ignore_type else f"({type_name(expr)})<nil>"
        head = "<*>" if ignore_type else f"(*{type_name(elem)})"
        return head + self.format(elem, value, True)

    def _struct(self, expr: str, value) -> str:
        if expr == "resource.Quantity":
            return quantity_fields(str(value))
        if expr == "intstr.IntOrString":
            if isinstance(value, str):
                return f"{{Type:(intstr.Type)1 IntVal:(int32)0 StrVal:(string){value}}}"
            return f"{{Type:(intstr.Type)0 IntVal:(int32){int(value or 0)} StrVal:(string)}}"
        if expr == "time.Time":
            if value:
                raise Unprintable("a time in the template (Go prints its time.Location, the controller's time zone)")
            return "{wall:(uint64)0 ext:(int64)0 loc:(*time.Location)<nil>}"
        if expr == "meta.FieldsV1" and value is not None:
            raise Unprintable("managedFields in the template (Go prints their raw bytes)")
        obj = value if isinstance(value, dict) else {}
        parts = []
        for name, json_name, inline, ftype, _default in self.types[expr]["fields"]:
            if expr == "meta.Time":  # its JSON is the time itself
                parts.append(f"{name}:{self.format(ftype, value, False)}")
                continue
            fvalue = obj if inline else (obj.get(json_name) if json_name else None)
            parts.append(f"{name}:{self.format(ftype, fvalue, False)}")
        return "{" + " ".join(parts) + "}"


def printout(template: dict, types: dict | None = None) -> str:
    """DeepHashObject's text for a template (already defaulted, quantities canonical): `%#v` of the value."""
    return Printer(types or layout()).format("core.PodTemplateSpec", template)
