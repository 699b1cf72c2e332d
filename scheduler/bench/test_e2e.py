"""The benchmark command runs end to end and reports every figure the README quotes (no timing asserted)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

BASE_DIR = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

KEYS = {"nodes", "pods", "engine_pods_per_s", "reference_pods_per_s", "e2e_pods_per_s", "attempt_p50_ms",
        "attempt_p99_ms", "sli_p99_ms", "worker_peak_rss_mb", "profile_switch_ms", "profile_switch_late_old_attempts"}


def test_bench_prints_one_json_object_with_every_figure_and_overcommits_nothing(tmp_path):
    env = dict(os.environ)
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": os.environ["DATABASE_URL"],
                "REDIS_URL": settings.REDIS_URL, "DJANGO_SECRET_KEY": "bench-test", "SCHEDBOARD_EAGER": "0",
                # Small batches: pods are still being popped when the bench saves a new version halfway.
                "SCHEDBOARD_BATCH_SIZE": "16"})
    # A database of its own: the bench drops and recreates "<name>_bench" next to this one.
    env["DATABASE_URL"] = env["DATABASE_URL"].rsplit("/", 1)[0] + "/schedboard_benchtest"
    result = subprocess.run([sys.executable, "manage.py", "bench", "--nodes", "100", "--pods", "300", "--placed", "50",
                             "--workers", "1", "--reference-sample", "5", "--engine-runs", "1", "--json"],
                            cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)
    assert KEYS <= set(figures)
    assert figures["nodes"] == 100 and figures["pods"] == 300 and figures["attempts"] == 300
    assert figures["overcommitted_nodes"] == 0
    # The new version saved halfway governs every attempt that started after its first one.
    assert figures["profile_switch_ms"] is not None and figures["profile_switch_late_old_attempts"] == 0
    assert all(figures[k] > 0 for k in ("engine_pods_per_s", "reference_pods_per_s", "e2e_pods_per_s"))


def test_bench_growth_reports_each_tables_rows_and_bytes_per_pod_and_the_capped_trace(tmp_path):
    env = dict(os.environ)
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "REDIS_URL": settings.REDIS_URL,
                "DJANGO_SECRET_KEY": "bench-test", "SCHEDBOARD_EAGER": "0"})
    # A database name of this test session's own: the run drops and recreates "<name>_growth" next to it.
    env["DATABASE_URL"] = (os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/"
                           + os.environ.get("SCHEDBOARD_TEST_DB", "test_schedboard") + "_g")
    result = subprocess.run([sys.executable, "manage.py", "bench", "--growth", "--nodes", "60", "--pods", "120",
                             "--placed", "10", "--failing", "3", "--workers", "1", "--json"],
                            cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)
    tables = figures["tables"]
    # One binding and one Scheduled event per pod, one cluster event per bound pod deleted; the failed
    # attempts of the three pods no node fits share one FailedScheduling event each (counted, not repeated).
    assert tables["bindings"]["rows"] == 120 and tables["cluster events"]["rows"] == 120
    assert tables["events"]["rows"] == 123
    assert figures["attempts_by_result"]["scheduled"]["rows"] == 120
    assert figures["attempts_by_result"]["unschedulable"]["rows"] >= 3
    assert all(t["bytes"] > 0 and t["bytes_compacted"] > 0 for t in tables.values())
    big = figures["failed_trace"]["50000"]
    assert big["capped"]["json_bytes"] < 20_000 < big["uncapped"]["json_bytes"]
