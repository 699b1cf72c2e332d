"""`bench --nodes-page`: the dashboard's /nodes/ in headless Chromium on a scratch cluster; every node row
arrives and the page's own count says so, and a usage change reaches the page (figures reported, never
asserted as speeds)."""

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

from .viewers import BASE_DIR

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def test_bench_nodes_page_gets_every_node_row_and_every_usage_change_to_the_page():
    env = dict(os.environ)
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "REDIS_URL": settings.REDIS_URL,
                "DJANGO_SECRET_KEY": "bench-test", "SCHEDBOARD_EAGER": "0",
                # A database of its own: the bench drops and recreates "<name>_nodespage" next to this one.
                "DATABASE_URL": os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/schedboard_nodespagetest"})
    result = subprocess.run([sys.executable, "manage.py", "bench", "--nodes-page", "--nodes", "300", "--json"],
                            cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)
    assert figures["rows_received"] == 300
    assert figures["node_count_text"] == "300 of 300 nodes"
    assert figures["changed_nodes"] == 3  # every hundredth node
    assert figures["change_frames"] >= 1 and figures["change_bytes"] > 0
    assert 0 < figures["first_row_ms"] <= figures["all_rows_ms"]
