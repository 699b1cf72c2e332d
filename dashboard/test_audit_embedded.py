"""The audit's keyset pages on SQLite too (the embedded `make run` mode), where times are stored as text."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from django.conf import settings

SCRIPT = textwrap.dedent("""
    import django
    django.setup()
    from datetime import datetime, timedelta, timezone
    from django.core.management import call_command
    from dashboard import audit
    from scheduler.models import Attempt

    call_command("migrate", verbosity=0)
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for i in range(7):  # pairs of equal start times: the id breaks the tie
        Attempt.objects.create(namespace="d", pod_name=f"p{i}", number=1, result="scheduled",
                               started_at=t0 + timedelta(seconds=i // 2))
    page = audit.page(audit.filtered({}), limit=3)
    seen = [a.pk for a in page.rows]
    for _ in range(5):
        if not page.older:
            break
        page = audit.page(audit.filtered({}), after=audit.Cursor.decode(page.older), limit=3)
        seen += [a.pk for a in page.rows]
    back = audit.page(audit.filtered({}), before=audit.Cursor.decode(page.newer), limit=3)
    print(seen == sorted(seen, reverse=True), len(seen), [a.pk for a in back.rows] == seen[3:6])
""")


def test_keyset_pages_walk_every_row_once_on_sqlite(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_DEBUG", "DJANGO_HTTPS")}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "SCHEDBOARD_SQLITE_PATH": str(tmp_path / "db.sqlite3"),
                "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")})
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=Path(settings.BASE_DIR), env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "7", "True"]
