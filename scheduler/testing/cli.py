"""Management commands for tests: in-process through call_command (exit status, stdout, stderr) and as a
real `python manage.py` process on the test database and the test queue."""

import io
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

REPO = Path(__file__).resolve().parents[2]


class Result:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err

    def __repr__(self) -> str:
        return f"Result(code={self.code}, out={self.out!r}, err={self.err!r})"


def cli(*args: str, stdin: str | None = None) -> Result:
    """A command in-process: its exit status (0, or the CommandError's), stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        call_command(*args, stdout=out, stderr=err)
        code = 0
    except CommandError as e:
        code = e.returncode
    finally:
        sys.stdin = old_stdin
    return Result(code, out.getvalue(), err.getvalue())


def manage_env() -> dict[str, str]:
    """The environment of a real `python manage.py ...` process on the test database and the test queue."""
    db = connection.settings_dict
    env = dict(os.environ)
    env.update({
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "REDIS_URL": settings.REDIS_URL,
        "SCHEDBOARD_QUEUE_PREFIX": settings.SCHEDBOARD_QUEUE_PREFIX,
        "SCHEDBOARD_EAGER": "1",
    })
    if db.get("PASSWORD"):
        env["PGPASSWORD"] = db["PASSWORD"]
    return env


def manage(*args: str, stdin: str | None = None, cwd: Path | None = None) -> Result:
    """A real `python manage.py ...` process on the test database and the test queue."""
    proc = subprocess.run([sys.executable, str(REPO / "manage.py"), *args], input=stdin or "", capture_output=True,
                          text=True, cwd=cwd or REPO, env=manage_env(), timeout=120)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def write(directory: Path, name: str, text: str) -> str:
    (directory / name).write_text(text)
    return name
