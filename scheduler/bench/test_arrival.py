"""`bench --arrival-rate R --duration S`: a steady feed through real workers, Redis and Postgres; every fed pod
is bound and the report's figures are there (no speed asserted), and bad input is refused naming the option."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

BASE_DIR = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_arrival_binds_every_fed_pod_and_reports_the_sli():
    env = dict(os.environ)
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "REDIS_URL": settings.REDIS_URL,
                "DJANGO_SECRET_KEY": "bench-test", "SCHEDBOARD_EAGER": "0",
                # A database of its own: the bench drops and recreates "<name>_bench" next to this one.
                "DATABASE_URL": (os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/"
                                 + os.environ.get("SCHEDBOARD_TEST_DB", "test_schedboard") + "_arrival")})
    result = subprocess.run([sys.executable, "manage.py", "bench", "--arrival-rate", "40", "--duration", "2",
                             "--nodes", "50", "--placed", "10", "--workers", "1", "--json"],
                            cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)
    assert figures["offered_pods_per_s"] == 40 and figures["duration_s"] == 2
    assert figures["fed_pods"] == 80 and figures["bound_pods"] == 80
    assert figures["attempts"] == 80 and figures["overcommitted_nodes"] == 0
    assert 0 <= figures["sli_p50_ms"] <= figures["sli_p99_ms"] <= figures["sli_max_ms"]
    assert figures["queue_wait_p50_ms"] is not None and figures["attempt_end_to_bound_p99_ms"] is not None
    assert figures["binding_p50_ms"] is not None and figures["worker_peak_rss_mb"] > 0
    assert figures["feed_ticks"] > 0 and figures["feed_pods_per_s"] > 0 and figures["achieved_pods_per_s"] > 0
    assert figures["cpu_ms_per_pod_workers"] > 0
    assert 1 <= figures["scheduling_batches"] <= 80 and 1 <= figures["batch_pods_p50"] <= figures["batch_pods_p99"]
    assert "frame_p99_ms" not in figures and "profile_switch_ms" not in figures


@pytest.mark.parametrize("args, option", [
    (["--arrival-rate", "0"], "--arrival-rate"),
    (["--arrival-rate", "-5"], "--arrival-rate"),
    (["--arrival-rate", "inf"], "--arrival-rate"),
    (["--duration", "5"], "--arrival-rate"),  # a duration without a rate
    (["--arrival-rate", "10", "--duration", "0"], "--duration"),
    (["--arrival-rate", "10", "--duration", "-1"], "--duration"),
])
def test_bench_arrival_refuses_a_rate_or_duration_not_above_zero(args, option):
    with pytest.raises(CommandError, match=option):
        call_command("bench", *args)
