"""Quantities printed as apimachinery's Quantity.String() prints them, for messages that quote a quantity.

The API server's errors show the canonical form, not the text written: "0.5" is "500m", "1536Mi"
stays "1536Mi", "1.5Gi" is "1536Mi", 1024 bytes written as "1Ki" is "1Ki" but 1000 written as "1k" is "1k".
"""

from __future__ import annotations

import re
from decimal import Decimal, localcontext

_BINARY_SUFFIX = re.compile(r"[KMGTPE]i$")
_EXPONENT_SUFFIX = re.compile(r"[eE][+-]?[0-9]+$")
_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIXES = {0: "", 10: "Ki", 20: "Mi", 30: "Gi", 40: "Ti", 50: "Pi", 60: "Ei"}

DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"


def format_of(text: str) -> str:
    """The Format ParseQuantity gives a quantity written as `text`."""
    if _BINARY_SUFFIX.search(text):
        return BINARY_SI
    if _EXPONENT_SUFFIX.search(text):
        return DECIMAL_EXPONENT
    return DECIMAL_SI


def go_string(amount: Decimal, fmt: str) -> str:
    """As Quantity.String (CanonicalizeBytes) for an amount already rounded to nano precision."""
    if amount == 0:
        return "0"
    if fmt == BINARY_SI:
        # As upstream: small or fractional values would round in base 1024, so they print as DecimalSI.
        if -1024 < amount < 1024 or amount != amount.to_integral_value():
            fmt = DECIMAL_SI
        else:
            mantissa, exponent = int(amount), 0
            while mantissa % 1024 == 0 and exponent < 60:
                mantissa //= 1024
                exponent += 10
            return f"{mantissa}{_BINARY_SUFFIXES[exponent]}"
    with localcontext() as ctx:
        ctx.prec = 60  # nano precision on values up to int64: no rounding here
        sign, digits, exponent = amount.normalize().as_tuple()
    mantissa = int("".join(map(str, digits)))
    # As AsCanonicalBytes: trailing zeros removed, then the exponent lowered to a multiple of 3.
    shift = exponent % 3
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    number = f"-{mantissa}" if sign else str(mantissa)
    if fmt == DECIMAL_SI and exponent in _DECIMAL_SUFFIXES:
        return number + _DECIMAL_SUFFIXES[exponent]
    return number + (f"e{exponent}" if exponent else "")
