"""`make run SCENARIO=…`: the embedded service (SQLite, in-memory queue, one process) plays a scenario in the
background while its loop schedules and runs the controllers; a bad scenario stops it before it starts."""

import re
import subprocess
import sys
import time

import pytest

from scheduler.testing.embedded import BASE_DIR, embedded_env, manage

pytestmark = pytest.mark.slow


def test_make_run_passes_the_scenario_and_its_time_scale_to_manage_py_run():
    out = subprocess.run(["make", "-n", "run", "SCENARIO=scenarios/node-loss.yaml", "TIME_SCALE=10"], cwd=BASE_DIR,
                         capture_output=True, text=True, check=True).stdout
    assert "manage.py run --scenario scenarios/node-loss.yaml --time-scale 10" in out
    assert re.search(r"manage\.py run\s*$", subprocess.run(["make", "-n", "run"], cwd=BASE_DIR, capture_output=True,
                                                           text=True, check=True).stdout, re.M)


def test_the_embedded_service_plays_a_scenario_to_its_end_state(tmp_path):
    env = embedded_env(tmp_path)
    assert manage(env, "migrate", "--verbosity", "0").returncode == 0
    proc = subprocess.Popen([sys.executable, "manage.py", "run", "--no-web", "--scenario", "scenarios/rolling-drain.yaml",
                             "--time-scale", "20"], cwd=BASE_DIR, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(2)
            deps = manage(env, "get", "deployments").stdout
            nodes = manage(env, "get", "nodes").stdout
            # Three nodes drained and uncordoned, every workload back at its count.
            if re.search(r"^web\s+6/6\s", deps, re.M) and "SchedulingDisabled" not in nodes and _drained_three(env):
                break
        else:
            pytest.fail(f"the scenario did not reach its end state:\n{deps}\n{nodes}")
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert "playing scenario rolling-drain (9 steps over 120s, time scale 20)" in out
    assert "seeded" not in out  # the scenario brings its own cluster
    assert re.search(r"^db\s+3/3\s", manage(env, "get", "sts").stdout, re.M)
    assert re.search(r"^legacy\s+2\s+2\s+2\s", manage(env, "get", "rc").stdout, re.M)


DRAINED = ("from scheduler.models import DeletedPod; "
           "print(len({d.node_name for d in DeletedPod.objects.all() "
           "if any(c.get('reason') == 'EvictionByEvictionAPI' for c in (d.manifest.get('status') or {}).get('conditions') or [])}))")


def _drained_three(env) -> bool:
    out = manage(env, "shell", "-c", DRAINED).stdout.split()
    return bool(out) and out[-1] == "3"


def test_a_bad_scenario_stops_the_service_before_it_starts(tmp_path):
    env = embedded_env(tmp_path)
    assert manage(env, "migrate", "--verbosity", "0").returncode == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps:\n- {at: 1s, fail: nowhere}\n")
    r = manage(env, "run", "--no-web", "--scenario", str(bad))
    assert r.returncode == 1
    assert f'{bad}: steps[0].fail: node "nowhere" not found' in r.stderr
    assert "schedboard is running" not in r.stdout
