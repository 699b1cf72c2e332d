"""`make run`'s embedded service (SQLite, an in-memory queue, no Postgres or Redis), for tests: its
environment and its management commands as real processes."""

import os
import subprocess
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]


def embedded_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY",
                                                              "SCHEDBOARD_EAGER", "SCHEDBOARD_QUEUE_PREFIX")}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "SCHEDBOARD_SQLITE_PATH": str(tmp_path / "db.sqlite3"),
                "PYTHONUNBUFFERED": "1"})
    return env


def manage(env, *args, timeout=120):
    return subprocess.run([sys.executable, "manage.py", *args], cwd=BASE_DIR, env=env, capture_output=True,
                          text=True, timeout=timeout)
