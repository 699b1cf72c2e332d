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
    log = tmp_path / "run.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "manage.py", "run", "--no-web", "--scenario",
                                 "scenarios/rolling-drain.yaml", "--time-scale", "20"], cwd=BASE_DIR, env=env,
                                stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.monotonic() + 150
            while time.monotonic() < deadline and proc.poll() is None:
                time.sleep(2)
                if "scenario rolling-drain done" in log.read_text():
                    break
            else:
                pytest.fail(f"the scenario did not finish:\n{log.read_text()[-3000:]}")
            # The loop's part after the last step: every workload back at its count.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not re.search(r"^web\s+6/6\s", manage(env, "get", "deployments").stdout,
                                                                re.M):
                time.sleep(1)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    text = log.read_text()
    assert "playing scenario rolling-drain (9 steps over 120s, time scale 20)" in text
    assert "seeded" not in text  # the scenario brings its own cluster
    for step, node in ((3, "zone-a-0"), (5, "zone-b-0"), (7, "zone-c-0")):
        assert re.search(rf"steps\[{step}\] drain {node}: node/{node} drained \(\d+ pods evicted\)", text), text[-3000:]
        assert f"steps[{step + 1}] uncordon {node}: node/{node} uncordoned" in text
    assert re.search(r"^web\s+6/6\s", manage(env, "get", "deployments").stdout, re.M)
    assert "SchedulingDisabled" not in manage(env, "get", "nodes").stdout
    assert re.search(r"^db\s+3/3\s", manage(env, "get", "sts").stdout, re.M)
    assert re.search(r"^legacy\s+2\s+2\s+2\s", manage(env, "get", "rc").stdout, re.M)


def test_a_bad_scenario_stops_the_service_before_it_starts(tmp_path):
    env = embedded_env(tmp_path)
    assert manage(env, "migrate", "--verbosity", "0").returncode == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps:\n- {at: 1s, fail: nowhere}\n")
    r = manage(env, "run", "--no-web", "--scenario", str(bad))
    assert r.returncode == 1
    assert f'{bad}: steps[0].fail: node "nowhere" not found' in r.stderr
    assert "schedboard is running" not in r.stdout


KEPT = """
import yaml
from scheduler.cluster.services import cluster_apply, pod_delete
from scheduler.manifests.files import parse_documents
from scheduler.models import DeletedPod
cluster_apply(parse_documents(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                             "spec": {"containers": [{"name": "c", "image": "x"}]}}), "p.yaml"))
pod_delete(namespace="default", name="p")
print("kept", DeletedPod.objects.filter(name="p").count())
"""


def test_embedded_a_deleted_pod_is_kept_for_its_page_after_every_migration(tmp_path):
    env = embedded_env(tmp_path)
    assert manage(env, "migrate", "--verbosity", "0").returncode == 0
    assert manage(env, "shell", "-c", KEPT).stdout.split()[-2:] == ["kept", "1"]
