"""A worker's random choices as one counter-based stream: selectHost's pick among equal top scores and
DefaultPreemption's random offset among the candidate nodes (upstream's getOffsetRand).

Each draw takes exactly one 64-bit output of PCG64, so the stream's state is two integers, (seed, position):
a worker records them with each attempt, and a replay seeks there and draws what the live worker drew, even
for a worker that started before the trace or among several workers (each its own position).
"""

from __future__ import annotations

import secrets

import numpy as np

# Seeds are stored in a signed 64-bit column (Attempt.tiebreak_seed).
MAX_SEED = 2**63 - 1


class TieBreak:
    """Seeded (SCHEDBOARD_SEED), or with a seed of its own drawn at random, which it keeps: every run can be
    replayed, seeded or not."""

    def __init__(self, seed: int | None = None, position: int = 0):
        if seed is not None and not 0 <= seed <= MAX_SEED:
            raise ValueError(f"tie-break seed must be between 0 and {MAX_SEED}, got {seed}")
        self.seed = secrets.randbits(63) if seed is None else seed
        self.seek(self.seed, position)

    def seek(self, seed: int, position: int) -> None:
        """Go to draw `position` of `seed`'s stream (where a recorded attempt's worker was)."""
        if (seed, position) == (self.seed, getattr(self, "position", None)):
            return
        self._bits = np.random.PCG64(seed)
        self._bits.advance(position)
        self.seed, self.position = seed, position

    def randrange(self, n: int) -> int:
        """Uniform in [0, n) from one draw (a multiply and shift: the bias is n / 2^64, nothing at node counts)."""
        if n <= 0:
            raise ValueError(f"randrange needs n > 0, got {n}")
        self.position += 1
        return (int(self._bits.random_raw()) * n) >> 64

    def state(self) -> tuple[int, int]:
        return self.seed, self.position
