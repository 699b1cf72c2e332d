"""The live feed's sending side: the loop says what each batch did once the batch has committed (as
Zulip's "send event on commit"), and each subscriber hears it. The dashboard subscribes when its app
is ready (dashboard/apps.py): the loop never imports the dashboard, and with no subscriber nothing
is sent. A subscriber must return at once (the dashboard's publisher buffers or drops, never waits).
"""

from __future__ import annotations

from typing import Protocol


class LiveSubscriber(Protocol):
    def schedule_batch_done(self, attempts: list, popped: int) -> None: ...

    def bind_batch_done(self, bound: list, refused: list, now) -> None: ...


_subscribers: list[LiveSubscriber] = []


def subscribe(subscriber: LiveSubscriber) -> None:
    """Hear every batch from now on (once, however often it subscribes)."""
    if subscriber not in _subscribers:
        _subscribers.append(subscriber)


def schedule_batch_done(attempts: list, popped: int) -> None:
    """A schedule batch committed: its attempts and how many pods it popped."""
    for subscriber in _subscribers:
        subscriber.schedule_batch_done(attempts, popped)


def bind_batch_done(bound: list, refused: list, now) -> None:
    """A bind batch committed, and when: bound = [(node, Pod row, seconds)], refused = [(node, Pod row, message,
    seconds)]."""
    for subscriber in _subscribers:
        subscriber.bind_batch_done(bound, refused, now)


def pods_disrupted(pods: list[dict]) -> None:
    """Pods a controller took away (evicted, garbage-collected): namespace, name, node, reason, message.
    A subscriber without the hook hears nothing of it."""
    for subscriber in _subscribers:
        hook = getattr(subscriber, "pods_disrupted", None)
        if hook is not None:
            hook(pods)


def preemptions_done(attempts: int, victims: int) -> None:
    """A schedule batch committed with `attempts` DefaultPreemption PostFilter runs that chose `victims` pods in all
    (scheduler_preemption_attempts_total and scheduler_preemption_victims, as they move). A subscriber without the
    hook hears nothing of it."""
    for subscriber in _subscribers:
        hook = getattr(subscriber, "preemptions_done", None)
        if hook is not None:
            hook(attempts, victims)


def nodes_changed(nodes: list[dict]) -> None:
    """Nodes whose state changed as a user sees it: name and state ("NotReady", "Unreachable", "Ready",
    "Deleted"). The dashboard marks them on its charts; a subscriber without the hook hears nothing of it."""
    for subscriber in _subscribers:
        hook = getattr(subscriber, "nodes_changed", None)
        if hook is not None:
            hook(nodes)
