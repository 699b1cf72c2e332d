"""JSON for the replica's hot paths (watch events, list replies, the manifests the mirror writes) through orjson,
with exactly the standard library's results.

orjson decodes a watch event in about a third of json.loads' time and encodes a manifest in a tenth of
json.dumps'. Where the two would differ, the standard library decides, so nothing changes but the CPU:
- orjson refuses what json takes (NaN, Infinity, numbers past a double's range, lone surrogate escapes, invalid
  UTF-8 that json reads after a decode, a byte order mark, UTF-16/32 bytes): json.loads then reads it, giving
  today's value or today's error;
- orjson reads an integer outside [-2**63, 2**64) as a float where json gives the int: any run of 19 digits
  (wherever it is, a string's too; such an integer has at least 19) sends the text to json;
- an object whose encoding orjson refuses (an integer past 64 bits, a string with a lone surrogate, a type it
  does not know) is encoded by json.dumps. (Non-finite floats, which orjson would write as null, cannot reach
  `dumps_text`: the parsed manifests it encodes hold them as strings, manifests.objects._jsonable.)
Duplicate keys keep the last value at the first key's place in both; floats are read to the same double
(test_kube_jsoncodec.py compares them on random ones).
"""

from __future__ import annotations

import json

import orjson

# Every digit as "0", everything else as "x": a run of 19 digits is then a substring search (memchr-fast; a
# regular expression scanning for the run cost twice orjson's whole parse).
_DIGITS_TO_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x78 for b in range(256))
_LONG_RUN = b"0" * 19


def _may_hold_a_big_int(data: bytes) -> bool:
    """Whether orjson could read a number of `data` as a float where json reads an int: a run of 19 digits (no
    integer of 18 or fewer is outside 64 bits)."""
    return _LONG_RUN in data.translate(_DIGITS_TO_ZERO)


def loads(data: bytes | str):
    """json.loads(data): the same value, or the same error."""
    if type(data) is str:
        try:
            raw = data.encode()
        except UnicodeEncodeError:  # a lone surrogate: json's to read
            return json.loads(data)
    else:
        raw = data
    if not _may_hold_a_big_int(raw):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # what orjson refuses, json may take (see the module's docstring): it says
    return json.loads(data)


# What loads_line gives for a line of only whitespace (a JSON line may well be null).
BLANK = object()


def loads_line(line: bytes):
    """One watch line as the reflector read it before: decoded as UTF-8 (invalid bytes replaced), BLANK when that
    leaves only whitespace, else json.loads of the text (its value, or its error)."""
    if not _may_hold_a_big_int(line):
        try:
            return orjson.loads(line)  # valid UTF-8, so the text decoded is these bytes: the same value
        except orjson.JSONDecodeError:
            pass
    text = line.decode("utf-8", errors="replace")
    if not text.strip():
        return BLANK
    return json.loads(text)


# Subclasses, datetimes and dataclasses go to json.dumps (orjson would encode them its own way).
_DUMPS_OPTIONS = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def dumps_text(value) -> str:
    """A value of JSON's types (dict, list, str, int, float, bool, None) as text that reads back (json.loads, or
    a jsonb column) to what json.dumps' text would; what orjson will not encode, json.dumps does (or raises).
    Not for values that may hold non-finite floats (see the module's docstring)."""
    try:
        return orjson.dumps(value, option=_DUMPS_OPTIONS).decode()
    except TypeError:  # an integer past 64 bits, a lone surrogate, a key not a string, another type
        return json.dumps(value)


def dumps_body(value) -> bytes:
    """A request's body: json.dumps(value).encode() as the API server reads it (the same values; orjson writes
    non-ASCII as UTF-8 where json escapes it, which a JSON reader takes as the same string)."""
    try:
        out = orjson.dumps(value, option=_DUMPS_OPTIONS)
    except TypeError:
        return json.dumps(value).encode()
    if b"null" in out:  # orjson writes NaN and the infinities as null, json as NaN and Infinity: json's bytes then
        return json.dumps(value).encode()
    return out
