"""Celery tasks sent by name, so that nothing in scheduler/ imports the Celery face (tasks.py), which
imports the loop: the loop, the backends and the replays send their tasks by name to whichever worker
takes them. config/apps.py registers the tasks when Django is ready."""

from __future__ import annotations

from celery import current_app

SCHEDULE = "scheduler.schedule"  # run one schedule batch (tasks.schedule)
BIND = "scheduler.bind"  # bind a batch of placed pods (tasks.bind)
REPLAY = "scheduler.replay"  # run a replay started from the dashboard (tasks.replay_run)
PREEMPT = "scheduler.preempt"  # evict one preemption's victims (tasks.preempt), as upstream's async preemption


ARGSREPR_LIMIT = 1024  # as Celery's argsrepr_maxsize


def send(name: str, *args) -> None:
    """As the task's delay(*args): inline where tasks run eagerly (tests, embedded), else through the broker."""
    current_app.tasks[name].apply_async(args, argsrepr=argsrepr(args))


def argsrepr(args: tuple, limit: int = ARGSREPR_LIMIT) -> str:
    """The message's argsrepr header (what monitors show of the arguments): repr(args), a list argument cut
    after the items that pass `limit` characters ("..." in their place). Celery's own, saferepr, walks every
    token in Python: 0.42 ms for a bind task's five items, a fifth of the send; repr is C's, item by item so
    that a 512-item list is not written out whole."""
    parts, size = [], 0
    for arg in args:
        if size > limit:
            parts.append("...")
            break
        if not isinstance(arg, list):
            text = repr(arg)
        else:
            shown = []
            for item in arg:
                if size > limit:
                    shown.append("...")
                    break
                shown.append(repr(item))
                size += len(shown[-1]) + 2
            text = "[" + ", ".join(shown) + "]"
        parts.append(text)
        size += len(text) + 2
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
