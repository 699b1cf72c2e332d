"""`make run`'s embedded service (SQLite, an in-memory queue, no Postgres or Redis), for tests: its
environment, its management commands and `run` itself as real processes, and a poll of what they show."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import TypeVar

import pytest

BASE_DIR = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def embedded_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY",
                                                              "SCHEDBOARD_EAGER", "SCHEDBOARD_QUEUE_PREFIX")}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "SCHEDBOARD_SQLITE_PATH": str(tmp_path / "db.sqlite3"),
                "PYTHONUNBUFFERED": "1"})
    return env


def manage(env, *args, timeout=120):
    return subprocess.run([sys.executable, "manage.py", *args], cwd=BASE_DIR, env=env, capture_output=True,
                          text=True, timeout=timeout)


def migrated_env(tmp_path):
    """embedded_env with its SQLite file migrated."""
    env = embedded_env(tmp_path)
    assert manage(env, "migrate", "--verbosity", "0").returncode == 0
    return env


@contextmanager
def embedded_run(env, *args: str) -> Iterator[SimpleNamespace]:
    """`manage.py run ARGS` as a real process for the block; then stopped with Ctrl-C as a user stops it (killed
    if it has not ended 20 s later). The handle's `out` is everything it printed, once the block has ended."""
    proc = subprocess.Popen([sys.executable, "manage.py", "run", *args], cwd=BASE_DIR, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    handle = SimpleNamespace(proc=proc, out="")
    try:
        yield handle
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            handle.out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            handle.out, _ = proc.communicate()


def poll(read: Callable[[], T], done: Callable[[T], bool], what: str, timeout: float = 120, interval: float = 2) -> T:
    """read() every `interval` seconds until done(its result), which is returned; after `timeout` the test fails
    saying `what` and the last result."""
    deadline = time.monotonic() + timeout
    state = None
    while time.monotonic() < deadline:
        time.sleep(interval)
        state = read()
        if done(state):
            return state
    pytest.fail(f"{what}:\n{state}")
