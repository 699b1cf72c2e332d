"""A latency histogram with fixed log buckets: bounded in size whatever the batch, merged by addition,
so per-batch histograms from many workers fold into one frame's p50 / p99."""

from __future__ import annotations

import math

# Bucket i holds values in (FLOOR * FACTOR**(i-1), FLOOR * FACTOR**i] ms; bucket 0 everything <= FLOOR.
# Factor 1.15 keeps a quantile within 15 % of the truth; 150 buckets reach past 10 minutes.
FLOOR_MS = 0.01
FACTOR = 1.15
BUCKETS = 150
_LOG = math.log(FACTOR)


def bucket_of(ms: float) -> int:
    if ms <= FLOOR_MS:
        return 0
    return min(BUCKETS - 1, math.ceil(math.log(ms / FLOOR_MS) / _LOG - 1e-9))


def upper_bound(i: int) -> float:
    return FLOOR_MS * FACTOR ** i


def observe(hist: dict[int, int], values) -> dict[int, int]:
    for v in values:
        if v is not None:
            b = bucket_of(float(v))
            hist[b] = hist.get(b, 0) + 1
    return hist


def merge(into: dict[int, int], pairs) -> dict[int, int]:
    """Add [[bucket, count], ...] (the wire form: msgpack maps want string keys) into a histogram."""
    for b, n in pairs:
        into[int(b)] = into.get(int(b), 0) + int(n)
    return into


def pairs(hist: dict[int, int]) -> list[list[int]]:
    return [[b, n] for b, n in sorted(hist.items())]


def quantile(hist: dict[int, int], q: float) -> float | None:
    """The upper bound of the bucket holding the q-quantile (as Prometheus' histogram_quantile, without interpolation)."""
    total = sum(hist.values())
    if not total:
        return None
    rank = q * total
    seen = 0
    for b in sorted(hist):
        seen += hist[b]
        if seen >= rank:
            return round(upper_bound(b), 3)
    return round(upper_bound(max(hist)), 3)
