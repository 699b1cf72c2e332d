"""The short hashes the controllers put in names and labels (pod-template-hash, controller-revision-hash), as
controller.ComputeHash: fnv32a over hashutil.DeepHashObject's printout of the template (go-spew's `%#v` of
the Go value, spew.py) as the API server stored it (template_defaults.py), then, when the collision count is
set (even to 0), its 4 bytes little-endian and 4 zero bytes, the sum printed in decimal and each digit mapped
onto rand.SafeEncodeString's alphabet (no vowels, no 0/1/3, so a hash never spells a word). The same template
gets the same name as on a cluster running the k8s.io/api the layout was generated from.

A template Go would print with what its JSON does not say (spew.Unprintable: a timestamp in its metadata,
managedFields) is hashed by its canonical JSON instead: stable, changing with it, not upstream's string."""

from __future__ import annotations

import json
from functools import lru_cache

from .spew import Unprintable, printout
from .template_defaults import defaulted

SAFE_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_FNV_OFFSET, _FNV_PRIME = 0x811C9DC5, 0x01000193


def fnv32a(data: bytes) -> int:
    h = _FNV_OFFSET
    for b in data:
        h = ((h ^ b) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """As rand.SafeEncodeString."""
    return "".join(SAFE_ALPHANUMS[ord(c) % len(SAFE_ALPHANUMS)] for c in text)


def template_bytes(template: dict) -> bytes:
    """What DeepHashObject writes into the hasher for this template."""
    try:
        return printout(defaulted(template)).encode("utf-8")
    except Unprintable:
        return json.dumps(template, sort_keys=True, separators=(",", ":")).encode()


def compute_hash(data: bytes, collision_count: int | None = None) -> str:
    """ComputeHash's end: the printout, the collision count's 8 bytes (uint32 little-endian, then 4 zero
    bytes) when it is set, fnv32a, SafeEncodeString of the decimal sum."""
    if collision_count is not None:
        data += (collision_count & 0xFFFFFFFF).to_bytes(4, "little") + bytes(4)
    return safe_encode(str(fnv32a(data)))


@lru_cache(maxsize=1024)
def _hash_of_text(text: str, collision_count: int | None) -> str:
    return compute_hash(template_bytes(json.loads(text)), collision_count)


def template_hash(template: dict, collision_count: int | None = None) -> str:
    """As controller.ComputeHash(&template, collisionCount); a template's hash is computed once per process
    (a controller pass asks for the same ones again and again)."""
    return _hash_of_text(json.dumps(template, sort_keys=True), collision_count)
