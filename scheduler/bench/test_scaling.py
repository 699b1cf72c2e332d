"""`bench --workers 1,2,4`: the list is validated, the series runs end to end once per count through real workers,
and each run's reservation conflicts are read from what its worker processes counted (no timing asserted)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from scheduler.bench.counters import RunCounters
from scheduler.bench.scaling import FIGURES, MAX_WORKERS, parse_workers

BASE_DIR = Path(__file__).resolve().parents[2]


def _env(**extra) -> dict:
    env = dict(os.environ)
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "REDIS_URL": settings.REDIS_URL,
                "DJANGO_SECRET_KEY": "bench-test", "SCHEDBOARD_EAGER": "0", **extra})
    # A database name of this test session's own: the run drops and recreates "<name>_bench" next to it.
    env["DATABASE_URL"] = (os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/"
                           + os.environ.get("SCHEDBOARD_TEST_DB", "test_schedboard") + "_scaling")
    return env


@pytest.mark.parametrize("value, counts", [("2", [2]), (2, [2]), ("1,2,4", [1, 2, 4]), (" 4, 1 ", [4, 1]),
                                           ("3,", None), (f"1,{MAX_WORKERS}", [1, MAX_WORKERS])])
def test_workers_is_one_count_or_a_comma_list_of_counts(value, counts):
    if counts is None:  # a trailing comma leaves an empty count
        with pytest.raises(ValueError, match="--workers"):
            parse_workers(value)
    else:
        assert parse_workers(value) == counts


@pytest.mark.parametrize("value", ["0", "-1", "x", "1,,2", "1.5", "", f"1,{MAX_WORKERS + 1}", "2,2"])
def test_a_bad_workers_value_is_a_command_error_naming_the_option_and_the_value(value):
    with pytest.raises(CommandError) as err:
        call_command("bench", workers=value, skip_e2e=True)
    assert "--workers" in str(err.value) and repr(value) in str(err.value)


def test_a_series_is_refused_with_another_mode():
    with pytest.raises(CommandError, match="--workers"):
        call_command("bench", workers="1,2", growth=True)


def test_from_the_command_line_a_bad_list_fails_with_the_error_not_a_traceback():
    result = subprocess.run([sys.executable, "manage.py", "bench", "--workers", "1,0"], cwd=BASE_DIR, env=_env(),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "CommandError: --workers: '1,0'" in result.stderr and "Traceback" not in result.stderr


def test_the_run_counts_what_its_worker_processes_counted(tmp_path):
    counters = RunCounters(redis=None, redis_db=0, metrics_dir=str(tmp_path))
    assert counters.metrics() == {"conflicts": 0.0, "scheduled": 0.0}
    script = ("from scheduler.telemetry import metrics; metrics.reservation_conflicts.inc(3); "
              "metrics.schedule_attempts.labels('scheduled', 'default-scheduler').inc(5); "
              "metrics.schedule_attempts.labels('unschedulable', 'default-scheduler').inc(7)")
    for _ in range(2):  # two processes, as two workers: their files are summed
        subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=BASE_DIR, check=True, timeout=120,
                       env=_env(**counters.env()))
    assert counters.metrics() == {"conflicts": 6.0, "scheduled": 10.0}


@pytest.mark.slow
def test_a_small_series_reports_each_count_with_its_conflicts_and_overcommits_nothing():
    pods = 200
    result = subprocess.run([sys.executable, "manage.py", "bench", "--workers", "1,2", "--nodes", "50", "--pods",
                             str(pods), "--placed", "10", "--json"],
                            cwd=BASE_DIR, env=_env(SCHEDBOARD_BATCH_SIZE="16"), capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)
    assert figures["workers"] == [1, 2] and figures["scaling_base_workers"] == 1
    assert [run["workers"] for run in figures["series"]] == [1, 2]
    for run in figures["series"]:
        assert set(FIGURES) <= set(run)
        assert run["overcommitted_nodes"] == 0 and run["attempts"] == pods
        conflicts = run["reservation_conflicts"]
        assert isinstance(conflicts, int) and conflicts >= 0
        # Every measured pod scheduled once; each refused placement was placed again.
        assert run["placements_attempted"] == pods + conflicts
        assert run["reservation_conflict_rate"] == round(conflicts / (pods + conflicts), 4)
        assert run["e2e_pods_per_s"] > 0 and run["postgres_commits_per_pod"] > 0
        assert run["postgres_rows_written_per_pod"] > 0 and run["redis_commands_per_pod"] > 0
    assert figures["series"][0]["scaling"] == 1.0
