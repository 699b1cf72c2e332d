"""`bench --dashboard`: the e2e run again with headless overview viewers; each viewer is shown every
binding exactly once, and the figures are reported (never asserted as speeds)."""

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

from .viewers import BASE_DIR

pytestmark = pytest.mark.slow


def test_bench_dashboard_reports_bind_to_frame_latency_and_every_viewer_sees_every_binding():
    env = dict(os.environ)
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "REDIS_URL": settings.REDIS_URL,
                "DJANGO_SECRET_KEY": "bench-test", "SCHEDBOARD_EAGER": "0",
                # A database of its own: the bench drops and recreates "<name>_bench" next to this one.
                "DATABASE_URL": os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/schedboard_livebenchtest"})
    result = subprocess.run([sys.executable, "manage.py", "bench", "--nodes", "50", "--pods", "200", "--placed", "10",
                             "--workers", "1", "--reference-sample", "2", "--engine-runs", "1", "--dashboard",
                             "--viewers", "3", "--json"], cwd=BASE_DIR, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)
    assert figures["viewers"] == 3
    assert figures["frame_bindings_seen"] == 200 * 3
    assert figures["frame_p50_ms"] <= figures["frame_p99_ms"] <= figures["frame_max_ms"]
    assert figures["frames_per_s_per_client"] > 0 and figures["bytes_per_s_per_client"] > 0
    assert figures["e2e_pods_per_s_with_viewers"] > 0 and figures["with_viewers_vs_without"] > 0
