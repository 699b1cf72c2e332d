"""Where pods and nodes come from and where bindings go."""

from functools import cache


@cache
def get_backend():
    from .simulated import SimulatedBackend

    return SimulatedBackend()
