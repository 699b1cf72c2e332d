"""How current the leader's pod mirror is, told to every process through Redis.

A binding mark whose binder died is freed by the reconciler (in any worker) only once the mirror has seen
everything the API server accepted up to the binder's deadline: a binding sent before it and accepted
shows the pod bound there, and freeing its room would hand that room to another pod (an overcommit).
Between leaders (failover, an API server outage) nobody watches, nothing is claimed, and nothing is freed.
"""

from django.conf import settings

# A claim outlives its writer by a few beats only: a leader that stopped writing claims nothing.
CLAIM_TTL_SECONDS = 5


def currency_key() -> str:
    return f"{settings.SCHEDBOARD_QUEUE_PREFIX}:kube:pods-mirror-current-through"


def claim(redis, through: float) -> None:
    """The leader: its pod mirror holds everything the API server accepted up to `through` (epoch seconds)."""
    redis.set(currency_key(), repr(through), ex=CLAIM_TTL_SECONDS)


def withdraw(redis) -> None:
    redis.delete(currency_key())


def current_through(redis) -> float | None:
    raw = redis.get(currency_key())
    return float(raw) if raw is not None else None
