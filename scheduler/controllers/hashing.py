"""The short hashes the controllers put in names and labels (pod-template-hash, controller-revision-hash):
FNV-1a 32 of the template, printed in decimal, each digit mapped onto rand.SafeEncodeString's alphabet
(no vowels, no 0/1/3, so a hash never spells a word). Upstream hashes Go's printout of the template
struct (hashutil.DeepHashObject); we hash its canonical JSON, so the strings differ from a real
cluster's for the same template but behave the same: stable while the template is, new when it changes,
and a collision count changes them."""

from __future__ import annotations

import json

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


def template_hash(template: dict, collision_count: int | None = None) -> str:
    """As controller.ComputeHash: the collision count, when set, is hashed after the template."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += collision_count.to_bytes(4, "little")
    return safe_encode(str(fnv32a(data)))
