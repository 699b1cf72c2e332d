"""Generate the Go type layout of v1.PodTemplateSpec that scheduler/controllers/spew.py prints as upstream's
hashutil.DeepHashObject does (the pod-template-hash): every struct reachable from it with its fields in
declaration order (Go name, JSON name, inline or not, Go type) and the named types' underlying types,
read from k8s.io/api's core/v1 and k8s.io/apimachinery's meta/v1 and types packages.

    python scripts/gen_pod_template_types.py --api API --apimachinery APIMACHINERY -o OUT.json

API and APIMACHINERY are checkouts (or `git archive` extracts) of k8s.io/api and k8s.io/apimachinery;
`--api` may also be kubernetes' staging/src/k8s.io/api. resource.Quantity, intstr.IntOrString and
time.Time are laid out by hand in spew.py (their fields are unexported or outside these packages)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

PACKAGES = {"core": "core/v1", "meta": "pkg/apis/meta/v1", "types": "pkg/types"}
# Import names in the sources -> our package keys (and the Go package name reflect prints).
IMPORTS = {"metav1": "meta", "v1": "core", "resource": "resource", "intstr": "intstr", "types": "types",
           "time": "time"}
HAND = {"resource.Quantity", "intstr.IntOrString", "time.Time"}
BUILTIN = {"string", "bool", "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32",
           "uint64", "float32", "float64", "byte", "rune"}

_TYPE_DECL = re.compile(r"^type\s+([A-Z]\w*)\s*(=)?\s*(.+?)\s*(//.*)?$")
_FIELD = re.compile(r"^\s*(?:([A-Za-z_]\w*)\s+)?([*\[\]\w.]+(?:\[[^\]]*\][*\[\]\w.]+)?)\s*(`[^`]*`)?\s*(//.*)?$")


def _strip_block_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def _built(text: str) -> bool:
    """Whether a default build (linux/amd64, no custom tags) compiles the file: its //go:build line evaluated."""
    m = re.search(r"^//go:build (.+)$", text, re.M)
    if not m:
        return True
    expr = re.sub(r"[A-Za-z_][\w.]*", lambda t: str(t.group(0) in ("linux", "amd64", "gc")), m.group(1))
    return bool(eval(expr.replace("&&", " and ").replace("||", " or ").replace("!", " not ")))


def parse_package(directory: Path, package: str) -> dict[str, dict]:
    """Every top-level struct and named type of the package's non-test files a default build compiles."""
    out: dict[str, dict] = {}
    for path in sorted(directory.glob("*.go")):
        if path.name.endswith("_test.go") or path.name.startswith("zz_generated") or path.name.endswith(".pb.go"):
            continue
        if not _built(path.read_text()):
            continue
        lines = _strip_block_comments(path.read_text()).splitlines()
        i = 0
        while i < len(lines):
            line = lines[i].rstrip()
            m = re.match(r"^type\s+([A-Z]\w*)\s+struct\s*\{\s*$", line)
            if m:
                name, fields, comments = m.group(1), [], []
                i += 1
                while not lines[i].startswith("}"):
                    text = lines[i].strip()
                    i += 1
                    if not text:
                        comments = []
                        continue
                    if text.startswith("//"):
                        comments.append(text)
                        continue
                    fields.append(_field(text, package, comments, path, name))
                    comments = []
                out[f"{package}.{name}"] = {"kind": "struct", "fields": fields}
                i += 1
                continue
            m = _TYPE_DECL.match(line)
            if m and re.fullmatch(r"struct\s*\{\s*\}", m.group(3)):
                out[f"{package}.{m.group(1)}"] = {"kind": "struct", "fields": []}
            elif m and not line.rstrip().endswith("{") and "interface" not in line and "func" not in m.group(3):
                out[f"{package}.{m.group(1)}"] = {"kind": "named", "underlying": _qualify(m.group(3), package)}
            i += 1
    return out


def _field(text: str, package: str, comments: list[str], path: Path, struct: str) -> list:
    m = _FIELD.match(text)
    if not m:  # interface{} and the like: an error only if a reachable struct has one (reachable())
        return [text, None, False, f"unparsed:{path.name}", None]
    name, go_type, tag = m.group(1), m.group(2), m.group(3) or ""
    embedded = name is None
    if embedded:
        name = go_type.lstrip("*").rsplit(".", 1)[-1]
    json_tag = re.search(r'json:"([^"]*)"', tag)
    json_name, inline = name, embedded  # encoding/json: an untagged embedded struct's fields are promoted
    if json_tag:
        parts = json_tag.group(1).split(",")
        json_name = parts[0] or name
        inline = "inline" in parts[1:] or (embedded and parts[0] == "")
        if parts[0] == "-":
            json_name = None
    default = None
    for c in comments:
        d = re.match(r"//\s*\+default=(.*)$", c)
        if d:
            default = d.group(1).strip()
    return [name, json_name, inline, _qualify(go_type, package), default]


def _qualify(expr: str, package: str) -> str:
    """A Go type expression with every named type qualified by our package keys: []Container -> []core.Container."""
    out, i = [], 0
    while i < len(expr):
        if expr.startswith("map[", i):
            depth, j = 1, i + 4
            while depth:
                depth += {"[": 1, "]": -1}.get(expr[j], 0)
                j += 1
            out.append("map[" + _qualify(expr[i + 4:j - 1], package) + "]")
            i = j
        elif expr[i] in "*[]":
            out.append(expr[i])
            i += 1
        else:
            m = re.match(r"(\w+)(?:\.(\w+))?", expr[i:])
            ident = m.group(0)
            i += len(ident)
            if m.group(2):
                # A package we do not read (runtime, unique): fails only if reachable() meets it.
                pkg = IMPORTS.get(m.group(1), f"unread:{m.group(1)}")
                out.append(f"{pkg}.{m.group(2)}")
            elif ident in BUILTIN:
                out.append("uint8" if ident == "byte" else ident)
            else:
                out.append(f"{package}.{ident}")
    return "".join(out)


def _named_in(expr: str) -> list[str]:
    return re.findall(r"(?:\bcore|\bmeta|\btypes|\bresource|\bintstr|\btime|unread:\w+)\.\w+", expr)


def reachable(types: dict[str, dict], root: str) -> dict[str, dict]:
    out, todo = {}, [root]
    while todo:
        name = todo.pop()
        if name in out or name in HAND:
            continue
        if name not in types:
            raise SystemExit(f"type {name} not found")
        out[name] = types[name]
        if any(f[3].startswith("unparsed:") for f in types[name].get("fields", ())):
            raise SystemExit(f"{name}: a field this generator cannot read: {types[name]['fields']}")
        exprs = ([f[3] for f in types[name]["fields"]] if types[name]["kind"] == "struct"
                 else [types[name]["underlying"]])
        for expr in exprs:
            todo += _named_in(expr)
    return dict(sorted(out.items()))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--api", required=True, type=Path)
    p.add_argument("--apimachinery", required=True, type=Path)
    p.add_argument("--source", default="", help="what was read (recorded in the output)")
    p.add_argument("-o", "--output", required=True, type=Path)
    args = p.parse_args(argv)
    types: dict[str, dict] = {}
    types.update(parse_package(args.api / PACKAGES["core"], "core"))
    types.update(parse_package(args.apimachinery / PACKAGES["meta"], "meta"))
    types.update(parse_package(args.apimachinery / PACKAGES["types"], "types"))
    layout = reachable(types, "core.PodTemplateSpec")
    args.output.write_text(json.dumps({"source": args.source, "types": layout}, indent=1, sort_keys=True) + "\n")
    print(f"{args.output}: {len(layout)} types", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
