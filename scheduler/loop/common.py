"""What the loop's schedule, bind and reconcile modules share: how an exception reads in an event, and
milliseconds as they are stored."""

from __future__ import annotations


def why(exc: BaseException) -> str:
    """An exception as one line for an event: its type and the first line of its text."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)
