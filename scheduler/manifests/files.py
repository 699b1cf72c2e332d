"""Kubernetes v1 Node and Pod manifests (YAML or JSON files, kubectl's -f) parsed into the engine's NodeSpec
and PodSpec: a file is either loaded whole or refused with every problem listed (file, document, object,
field path). Imports nothing from Django: the CLI and the models both call it."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

import yaml

from scheduler.engine import field
from scheduler.engine.yaml_safe import DecodeProblem, load_json, load_yaml

from .decode import ObjectDecoder
from .errors import ManifestError, Problem, uid_taken
from .cluster_objects import KINDS as CLUSTER_OBJECT_KINDS
from .cluster_objects import LIST_KINDS as CLUSTER_OBJECT_LISTS
from .objects import ParsedNode, ParsedPod, parse_object, problems_of

STDIN = "-"
STDIN_NAME = "<stdin>"
# list kind -> implied item kind
LIST_KINDS = {"List": None, "NodeList": "Node", "PodList": "Pod", **CLUSTER_OBJECT_LISTS}


@dataclass
class _Located:
    file: str
    doc: int
    prefix: str  # "items[2]" inside a List
    kind: str
    ident: str
    parsed: ParsedNode | ParsedPod | None  # None when the object has problems


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


def _list_api_version(kind: str) -> str:
    item = LIST_KINDS.get(kind)
    return CLUSTER_OBJECT_KINDS[item][0] if item in CLUSTER_OBJECT_KINDS else "v1"


def _parse_text(text: str, filename: str) -> tuple[list[_Located], list[Problem]]:
    docs, problems = _load_documents(text, filename)
    located: list[_Located] = []
    for n, doc in enumerate(docs, start=1):
        if doc is None or doc is _EMPTY:
            continue  # a syntax error (already reported) or an empty document, which keeps its number
        if isinstance(doc, dict) and isinstance(doc.get("kind"), str) and doc["kind"] in LIST_KINDS:
            lo = ObjectDecoder()
            lo.kind = doc["kind"]
            items = lo.list(doc.get("items"), "items")
            if not doc.get("apiVersion"):
                lo.add("apiVersion", field.required())
            elif doc.get("apiVersion") != _list_api_version(lo.kind):
                lo.add("apiVersion", f"unsupported apiVersion {json.dumps(doc.get('apiVersion'))} for {lo.kind} "
                                     f"(only {_list_api_version(lo.kind)})")
            problems += problems_of(lo, filename, n)
            for k, item in enumerate(items):
                o, parsed = parse_object(item, f"items[{k}]", LIST_KINDS[doc["kind"]], from_user=True)
                problems += problems_of(o, filename, n)
                located.append(_Located(filename, n, f"items[{k}]", o.kind, o.ident, parsed))
            continue
        o, parsed = parse_object(doc, from_user=True)
        problems += problems_of(o, filename, n)
        located.append(_Located(filename, n, "", o.kind, o.ident, parsed))
    return located, problems


def _duplicates(located: list[_Located]) -> list[Problem]:
    """A problem on every later object that repeats an earlier kind + namespace + name."""
    first: dict[tuple[str, str], _Located] = {}
    problems = []
    for loc in located:
        kind, ident = loc.kind, loc.ident
        if kind not in ("Node", "Pod", *CLUSTER_OBJECT_KINDS) or not ident:
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
