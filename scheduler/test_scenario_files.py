"""Scenario files are checked whole before anything runs: each problem names the file, the step, the field and
what is wrong, and a bad file changes nothing. The shipped scenarios check clean."""

from pathlib import Path

import pytest

from scheduler.controllers.scenario.spec import load, parse_duration
from scheduler.models import ClusterObject, Node, Pod
from scheduler.testing.cli import cli
from scheduler.testing.loop import apply, node

pytestmark = pytest.mark.django_db(transaction=True)

SHIPPED = sorted(Path(__file__).resolve().parents[1].joinpath("scenarios").glob("*.yaml"))

GOOD_NODE = "- {at: 0s, apply: {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: '4'}}}}\n"


@pytest.mark.parametrize("text, problems", [
    pytest.param("steps: []\n", ["steps: expected a non-empty list of steps, got []"], id="no-steps"),
    pytest.param("steps:\n- {at: 1s}\n", ["steps[0]: expected exactly one action of fail, recover, cordon, uncordon, "
                                          "drain, scale, apply, delete, wait, got none"], id="no-action"),
    pytest.param("steps:\n- {at: soon, cordon: a}\n",
                 ['steps[0].at: Invalid value: "soon": expected a duration >= 0 such as 10s or 1m30s'], id="bad-at"),
    pytest.param("steps:\n- {cordon: a}\n",
                 ["steps[0].at: Required value (when the step runs: 10s, 1m30s, or seconds)"], id="no-at"),
    pytest.param("steps:\n- {at: 1s, fail: nope}\n",
                 ['steps[0].fail: node "nope" not found (not in the cluster, nor applied by an earlier step)'],
                 id="unknown-node"),
    pytest.param("steps:\n- {at: 1s, fail: a, unreachable: yes please}\n",
                 ['steps[0].unreachable: expected true or false, got "yes please"'], id="bad-flag"),
    pytest.param("steps:\n- {at: 1s, cordon: a, replicas: 3}\n",
                 ["steps[0].replicas: unknown field for a cordon step (allowed: at, cordon)"], id="stray-field"),
    pytest.param("steps:\n- {at: 1s, scale: deployment/web}\n",
                 ['steps[0].scale: Deployment "default/web" not found (not in the cluster, nor applied by an earlier step)',
                  "steps[0].replicas: Required value"], id="scale-missing"),
    pytest.param("steps:\n- {at: 1s, scale: pod/web, replicas: -2}\n",
                 ['steps[0].scale: expected KIND/NAME of a deployment, replicaset, statefulset or replicationcontroller, '
                  'got "pod/web"', "steps[0].replicas: Invalid value: -2: must be an integer >= 0"], id="scale-bad"),
    pytest.param("steps:\n- {at: 1s, delete: web}\n",
                 ['steps[0].delete: expected KIND/NAME (pod, node, deployment, replicaset, statefulset, '
                  'replicationcontroller, service), got "web"'], id="delete-bad"),
    pytest.param("steps:\n- {at: 1s, apply: nowhere.yaml}\n",
                 ["steps[0].apply: cannot read {dir}/nowhere.yaml: No such file or directory"], id="apply-missing-file"),
    pytest.param("steps:\n- at: 1s\n  apply: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: "
                 "[{name: c, image: x, resources: {requests: {cpu: lots}}}]}}\n",
                 ['steps[0].apply: {path}#steps[0].apply: doc 1 (Pod default/p): '
                  'spec.containers[0].resources.requests[cpu]: invalid quantity "lots"'], id="apply-bad-object"),
    pytest.param("duration: 5s\nsteps:\n- {at: 10s, cordon: a}\n",
                 ['duration: Invalid value: "5s": ends before the last step (at 10s)'], id="short-duration"),
    pytest.param("steps:\n- {at: 5s, cordon: n1}\n" + GOOD_NODE + "- {at: 1s, fail: n2}\n- {at: 9s, delete: node/n1}\n"
                 "- {at: 10s, uncordon: n1}\n",
                 ['steps[2].fail: node "n2" not found (not in the cluster, nor applied by an earlier step)',
                  'steps[4].uncordon: node "n1" not found (not in the cluster, nor applied by an earlier step)'],
                 id="steps-see-what-earlier-steps-apply-and-delete-in-time-order"),
    pytest.param("steps:\n- {at: 1s, wait: forever, timeout: -1}\n",
                 ['steps[0].wait: Unsupported value: "forever": supported values: "scheduled"',
                  "steps[0].timeout: Invalid value: -1: expected a duration > 0 such as 2m"], id="bad-wait"),
    pytest.param("steps:\n- {at: 1s, cordon: a}\nspeed: 3\n",
                 ["speed: unknown field (allowed: duration, name, steps)"], id="unknown-top-level-field"),
])
def test_a_bad_scenario_names_file_step_field_and_problem_and_changes_nothing(tmp_path, text, problems):
    apply(node("a"))
    objects = ClusterObject.objects.count()  # the system PriorityClasses every cluster has
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    want = [f"{path}: " + p.format(dir=tmp_path, path=path) for p in problems]
    r = cli("scenario", str(path), "--time-scale", "1000")
    assert (r.code, r.out, r.err) == (1, "", "\n".join(want) + "\n")
    assert list(Node.objects.values_list("name", "unschedulable")) == [("a", False)]
    assert not Pod.objects.exists() and ClusterObject.objects.count() == objects


def test_bad_yaml_is_one_problem_with_its_place(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("steps:\n\t- at: 1s\n")
    r = cli("scenario", str(path))
    assert r.code == 1 and r.err.startswith(f"{path}: invalid YAML: ") and "(line 2, column 1)" in r.err


@pytest.mark.parametrize("value, seconds", [("10s", 10), ("1m30s", 90), ("6m", 360), ("500ms", 0.5), ("1h", 3600),
                                            (12, 12), (0, 0), ("", None), ("ten", None), (True, None), ("5x", None)])
def test_durations_as_go_writes_them_or_plain_seconds(value, seconds):
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_each_shipped_scenario_checks_clean(path):
    scenario = load(str(path))
    assert scenario.steps and scenario.duration >= max(s.at for s in scenario.steps)
    r = cli("scenario", str(path), "--check")
    assert r.code == 0 and r.out.endswith(", ok\n")
    assert not Node.objects.exists()  # --check changes nothing


def test_a_scenario_plays_its_steps_in_time_order_and_prints_them(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("steps:\n- {at: 2s, cordon: n1}\n" + GOOD_NODE + "- {at: 3s, fail: n1, unreachable: true}\n")
    r = cli("scenario", str(path), "--time-scale", "100")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "scenario s: 3 steps over 3s (time scale 100)"
    assert [l.split("] ", 1)[1] for l in lines if l.startswith("[")] == [
        f"steps[1] apply -f {path}#steps[1].apply", "steps[0] cordon n1", "steps[2] fail n1"]
    assert "    node/n1 created" in lines and "    node/n1 cordoned" in lines and "    node/n1 unreachable" in lines
    taints = Node.objects.get(name="n1").manifest["spec"]["taints"]
    assert {t["key"] for t in taints} == {"node.kubernetes.io/unschedulable", "node.kubernetes.io/unreachable"}
