"""YAML and JSON decoded to plain JSON values, refusing what no manifest or scheduler configuration needs.

kubectl and kube-scheduler read YAML through sigs.k8s.io/yaml: YAML becomes JSON, then Go structs.
Whatever JSON cannot hold has no meaning there, and some of it is hostile here: an alias bomb expands
a few hundred bytes into gigabytes, deep nesting exhausts Python's stack, a 5,000-digit integer
raises deep inside int(). So the loader refuses, with the field path and the line, before building
anything: anchors and aliases (at the first one, before any expansion), nesting deeper than
MAX_DEPTH, integers past Python's 4,300-digit limit, numbers that are not finite, tags that are not
JSON types (!!binary, !!set, !!omap, custom tags), merge keys, duplicate keys (as Go's strict YAML
decoding: `key "x" already set in map`), null, float and collection map keys, and NUL characters
(Postgres cannot store them). Integer and boolean keys become strings and timestamps stay the text
they were written as, as sigs.k8s.io/yaml does. Pure Python: the manifest and config loaders share it.
"""

from __future__ import annotations

import json
import math
import re

import yaml
from yaml.events import AliasEvent, CollectionStartEvent, MappingStartEvent, SequenceStartEvent
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from .field import child_path

MAX_DEPTH = 100  # nested lists and maps; a Pod needs about 10
MAX_INT_DIGITS = 4300  # sys.int_info.default_max_str_digits: int() and str() refuse longer numbers
_MAX_INT = 10**MAX_INT_DIGITS  # a hex or octal literal must not convert to more digits either

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_TAG + t for t in ("str", "int", "float", "bool", "null"))
_SEQ, _MAP = _TAG + "seq", _TAG + "map"
_SCALAR_TAGS = {_STR, _INT, _FLOAT, _BOOL, _NULL}
# Resolved implicitly by YAML 1.1 but plain strings to sigs.k8s.io/yaml (go-yaml v2 keeps a timestamp
# decoded into interface{} as its text, and has no "=" value key).
_AS_TEXT = {_TAG + "timestamp", _TAG + "value"}


class DecodeProblem(Exception):
    """Input refused while decoding: the field path ("" for the document), what is wrong, and where (1-based)."""

    def __init__(self, path: str, message: str, line: int | None = None, column: int | None = None):
        self.path, self.message, self.line, self.column = path, message, line, column
        super().__init__(f"{path}: {message}{self.where}" if path else f"{message}{self.where}")

    @property
    def where(self) -> str:
        return f" (line {self.line}, column {self.column})" if self.line is not None else ""


def _go_key(value) -> str:
    """A key as go-yaml prints it with %#v in `key %#v already set in map`."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _text_problem(value: str) -> str | None:
    if "\x00" in value:
        return "NUL characters (\\0) are not supported"
    return None


def _go_string(value: str) -> str:
    # Go decodes a lone UTF-16 surrogate as U+FFFD; Python would keep it and fail to encode it later.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in value)
    return value


# ---- YAML ----------------------------------------------------------------------------------------
_KEY = object()  # on the path stack while a map key is composed: its problems belong to the map


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that checks every event and node while the document is composed, before construction."""

    def __init__(self, stream):
        super().__init__(stream)
        self._stack: list = []  # path components of the nodes being composed, root first

    def _path(self) -> str:
        path = ""
        for comp in self._stack[1:]:
            if comp is _KEY:
                break
            path = child_path(path, comp)
        return path

    def _refuse(self, message: str, mark) -> DecodeProblem:
        return DecodeProblem(self._path(), message, mark.line + 1 if mark else None, mark.column + 1 if mark else None)

    def compose_node(self, parent, index):
        event = self.peek_event()
        if parent is None:
            comp = None
        elif isinstance(index, int):
            comp = index
        elif index is None:
            comp = _KEY
        else:
            comp = index.value if isinstance(index, ScalarNode) else "?"
        self._stack.append(comp)
        try:
            # Refuse at the first anchor or alias: nothing is expanded, so a bomb costs nothing.
            if isinstance(event, AliasEvent):
                raise self._refuse(f"YAML aliases are not allowed (*{event.anchor})", event.start_mark)
            if event.anchor is not None:
                raise self._refuse(f"YAML anchors are not allowed (&{event.anchor})", event.start_mark)
            if isinstance(event, CollectionStartEvent) and len(self._stack) > MAX_DEPTH:
                raise self._refuse(f"nested more than {MAX_DEPTH} levels deep", event.start_mark)
            explicit = event.tag not in (None, "!")
            node = super().compose_node(parent, index)
            self._check(node, explicit, event)
            return node
        finally:
            self._stack.pop()

    def _check(self, node, explicit: bool, event) -> None:
        mark = event.start_mark
        if isinstance(node, ScalarNode):
            self._check_scalar(node, explicit, mark)
        elif isinstance(node, SequenceNode):
            if node.tag != _SEQ:
                raise self._refuse(_tag_message(node.tag), mark)
        elif isinstance(node, MappingNode):
            if node.tag != _MAP:
                raise self._refuse(_tag_message(node.tag), mark)
            self._check_keys(node)

    def _check_scalar(self, node: ScalarNode, explicit: bool, mark) -> None:
        if node.tag in _AS_TEXT and not explicit:
            node.tag = _STR
        elif node.tag in (_INT, _FLOAT) and not explicit and ":" in node.value:
            node.tag = _STR  # YAML 1.1 base 60 (1:30); go-yaml reads it as a string
        if node.tag == _TAG + "merge":
            raise self._refuse("YAML merge keys (<<) are not allowed", mark)
        if node.tag not in _SCALAR_TAGS:
            raise self._refuse(_tag_message(node.tag), mark)
        if node.tag == _STR:
            node.value = _go_string(node.value)
            problem = _text_problem(node.value)
            if problem:
                raise self._refuse(problem, mark)
            return
        if node.tag == _INT and sum(ch.isdigit() for ch in node.value) > MAX_INT_DIGITS:
            raise self._refuse(f"integer with more than {MAX_INT_DIGITS} digits", mark)
        try:
            value = self.construct_object(node)
        except (ValueError, KeyError, TypeError, yaml.YAMLError):
            kind = {_INT: "an integer", _FLOAT: "a number", _BOOL: "a boolean", _NULL: "null"}[node.tag]
            raise self._refuse(f"cannot read {json.dumps(node.value)} as {kind}", mark) from None
        if node.tag == _INT and abs(value) >= _MAX_INT:
            raise self._refuse(f"integer with more than {MAX_INT_DIGITS} digits", mark)
        if node.tag == _FLOAT and not math.isfinite(value):
            raise self._refuse(f"{node.value}: not a finite number (JSON has no infinity or NaN)", mark)

    def _check_keys(self, node: MappingNode) -> None:
        seen: set[str] = set()
        for key_node, _ in node.value:
            mark = key_node.start_mark
            if not isinstance(key_node, ScalarNode) or key_node.tag not in (_STR, _INT, _BOOL):
                what = key_node.value if isinstance(key_node, ScalarNode) else "a list or map"
                if isinstance(key_node, ScalarNode) and key_node.tag == _NULL:
                    what = "null"
                raise self._refuse(f"map key {what} is not a string", mark)
            text, shown = self._key(key_node)
            if text in seen:
                raise self._refuse(f"key {shown} already set in map", mark)
            seen.add(text)

    def _key(self, key_node: ScalarNode) -> tuple[str, str]:
        """The key as JSON will hold it (sigs.k8s.io/yaml turns int and bool keys into strings), and as Go shows it."""
        if key_node.tag == _STR:
            return key_node.value, _go_key(key_node.value)
        value = self.construct_object(key_node)
        text = str(value).lower() if isinstance(value, bool) else str(value)
        return text, _go_key(value)

    def construct_mapping(self, node, deep=False):
        # Keys were checked while composing; merge keys were refused, so there is nothing to flatten.
        return {self._key(k)[0]: self.construct_object(v, deep=deep) for k, v in node.value}


def _tag_message(tag: str) -> str:
    shown = "!!" + tag[len(_TAG):] if tag.startswith(_TAG) else tag
    return f"YAML tag {shown} is not allowed: only strings, numbers, booleans, null, lists and maps"


def load_yaml(text: str):
    """One YAML document as JSON values; DecodeProblem for what is refused, yaml.YAMLError for bad syntax."""
    loader = _StrictLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


# ---- JSON ----------------------------------------------------------------------------------------
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class _Refused:
    """A value json.loads' hooks could not accept; found with its path after decoding."""

    def __init__(self, message: str):
        self.message = message


class _RefusedMap(dict):
    refused: str = ""


def _json_depth(text: str) -> None:
    # json.loads recurses once per level: check the nesting before it runs.
    depth = 0
    for m in _JSON_TOKEN.finditer(text):
        ch = m.group()
        if ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, m.start()) + 1
                column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
                raise DecodeProblem("", f"nested more than {MAX_DEPTH} levels deep", line, column)
        elif ch in "]}":
            depth -= 1


def _pairs(pairs: list) -> dict:
    out = _RefusedMap()
    for key, value in pairs:
        if key in out and not out.refused:
            out.refused = f"key {_go_key(key)} already set in map"
        out[key] = value
    return out


def _int(text: str):
    if sum(ch.isdigit() for ch in text) > MAX_INT_DIGITS:
        return _Refused(f"integer with more than {MAX_INT_DIGITS} digits")
    return int(text)


def _float(text: str):
    value = float(text)
    if not math.isfinite(value):
        return _Refused(f"{text}: not a finite number (JSON has no infinity or NaN)")
    return value


def _constant(name: str):
    return _Refused(f"{name}: not a finite number (JSON has no infinity or NaN)")


def _finish(value, path: str):
    """The decoded value as plain dicts and lists, or DecodeProblem for the first refused part."""
    if isinstance(value, _Refused):
        raise DecodeProblem(path, value.message)
    if isinstance(value, dict):
        if getattr(value, "refused", ""):
            raise DecodeProblem(path, value.refused)
        out = {}
        for k, v in value.items():
            key = _go_string(k)
            problem = _text_problem(key)
            if problem:
                raise DecodeProblem(path, problem)
            out[key] = _finish(v, child_path(path, key))
        return out
    if isinstance(value, list):
        return [_finish(v, child_path(path, i)) for i, v in enumerate(value)]
    if isinstance(value, str):
        value = _go_string(value)
        problem = _text_problem(value)
        if problem:
            raise DecodeProblem(path, problem)
    return value


def load_json(text: str):
    """A JSON document as plain values; DecodeProblem for what is refused, json.JSONDecodeError for bad syntax."""
    _json_depth(text)
    doc = json.loads(text, object_pairs_hook=_pairs, parse_int=_int, parse_float=_float, parse_constant=_constant)
    return _finish(doc, "")
