"""SchedulingGates (upstream framework/plugins/schedulinggates and the queue's PreEnqueue): a gated pod is
validated as the API server does, never attempted, shown as SchedulingGated, and queued once its last gate
is removed; adding a gate to an existing pod is refused."""

import json

import pytest
import yaml

from scheduler.manifests.errors import ManifestError
from scheduler.manifests.files import parse_documents
from scheduler.models import Attempt, Event, Pod
from scheduler.queue import queues
from scheduler.state.gated import gated_count
from scheduler.testing.loop import apply, drain, node, pod

MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def gates(*names):
    return [{"name": n} for n in names]


def problems(obj) -> list[str]:
    try:
        parse_documents(yaml.safe_dump(obj), "pods.yaml")
    except ManifestError as exc:
        return [f"{p.path}: {p.message}" for p in exc.problems]
    return []


@pytest.mark.parametrize("obj, expected", [
    (pod("ok", schedulingGates=gates("example.com/foo", "bar")), []),
    (pod("dup", schedulingGates=gates("foo", "foo")), ['spec.schedulingGates[1]: Duplicate value: "foo"']),
    (pod("bad", schedulingGates=gates("a b")),
     ['spec.schedulingGates[0]: Invalid value: "a b": name part must consist of alphanumeric characters, \'-\', \'_\' '
      "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
      "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
    (pod("empty", schedulingGates=gates("")), ['spec.schedulingGates[0]: Invalid value: "": name part must be non-empty',
                                               'spec.schedulingGates[0]: Invalid value: "": name part must consist of '
                                               "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                                               "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
                                               "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
    (pod("bound", schedulingGates=gates("foo"), nodeName="node-a"),
     ["spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"]),
])
def test_scheduling_gates_are_validated_as_the_api_server_does(obj, expected):
    assert problems(obj) == expected


pytestmark_db = pytest.mark.django_db(transaction=True)


@pytestmark_db
@pytest.mark.usefixtures("clock")
def test_a_gated_pod_is_never_attempted_and_binds_once_its_last_gate_is_removed():
    apply(node("node-a"), pod("gated", schedulingGates=gates("example.com/a", "example.com/b")))
    assert queues.get_queue().lengths().get("active", 0) == 0  # SchedulingGates' PreEnqueue: never queued
    drain()
    gated = Pod.objects.get(name="gated")
    assert (gated.node_name, gated.scheduled_status, gated.scheduled_reason, gated.scheduled_message) == (
        "", "False", "SchedulingGated", MESSAGE)
    assert gated.attempts == 0 and not Attempt.objects.exists() and not Event.objects.exists()
    assert gated_count() == 1
    apply(pod("gated", schedulingGates=gates("example.com/b")))  # one gate left: still held
    drain()
    assert Pod.objects.get(name="gated").scheduled_reason == "SchedulingGated" and not Attempt.objects.exists()
    apply(pod("gated"))  # the last gate removed: queued at once
    assert queues.get_queue().lengths().get("active", 0) == 1
    drain()
    gated = Pod.objects.get(name="gated")
    assert gated.node_name == "node-a" and gated.scheduled_status == "True" and gated_count() == 0
    assert Attempt.objects.get(pod_name="gated").number == 1
    assert not Event.objects.filter(reason="FailedScheduling").exists()


@pytestmark_db
@pytest.mark.usefixtures("clock")
def test_a_gated_pod_queued_by_another_path_is_held_by_the_loop_without_an_attempt():
    # The kubernetes mirror queues every pending pod: the loop's PreEnqueue check holds a gated one.
    apply(node("node-a"), pod("gated", schedulingGates=gates("foo")))
    queues.get_queue().add("default/gated", 0)
    drain()
    gated = Pod.objects.get(name="gated")
    assert gated.scheduled_reason == "SchedulingGated" and gated.node_name == "" and not Attempt.objects.exists()
    assert queues.get_queue().lengths().get("active", 0) == 0


@pytestmark_db
def test_adding_a_gate_to_an_existing_pod_is_refused_with_the_api_servers_words():
    apply(pod("p", schedulingGates=gates("a")))
    with pytest.raises(ManifestError) as exc:
        apply(pod("p", schedulingGates=gates("a", "b")))
    assert [f"{p.path}: {p.message}" for p in exc.value.problems] == [
        "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'b'"]
    assert [g["name"] for g in Pod.objects.get(name="p").manifest["spec"]["schedulingGates"]] == ["a"]
    apply(pod("q"))
    with pytest.raises(ManifestError):
        apply(pod("q", schedulingGates=gates("late")))


@pytestmark_db
@pytest.mark.usefixtures("clock")
def test_get_pods_shows_a_gated_pod_as_kubectl_does():
    from scheduler.testing.cli import cli

    apply(node("node-a"), pod("gated", schedulingGates=gates("foo")))
    drain()
    lines = cli("get", "pods").out.splitlines()
    assert lines[0].split()[:3] == ["NAME", "READY", "STATUS"] and lines[1].split()[:3] == ["gated", "0/1", "SchedulingGated"]
    (item,) = json.loads(cli("get", "pods", "-o", "json").out)["items"]
    (condition,) = item["status"]["conditions"]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "PodScheduled", "status": "False", "reason": "SchedulingGated", "message": MESSAGE}
    assert item["status"]["phase"] == "Pending" and item["spec"]["schedulingGates"] == [{"name": "foo"}]


@pytestmark_db
@pytest.mark.usefixtures("clock")
def test_why_says_a_gated_pod_waits_for_its_gates():
    from scheduler.testing.cli import cli

    apply(node("node-a"), pod("gated", schedulingGates=gates("foo", "bar")))
    drain()
    out = cli("why", "default/gated").out
    assert "Scheduling gates: foo, bar: it is not attempted until the last is removed." in out.splitlines()[1]
    assert json.loads(cli("why", "default/gated", "--json").out)["gates"] == ["foo", "bar"]


def test_explain_names_a_pods_scheduling_gates_and_runs_the_cycle_that_follows_their_removal(tmp_path):
    from scheduler.testing.cli import cli

    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(node("node-a")))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pod("gated", schedulingGates=gates("foo"))))
    out = json.loads(cli("explain", "--cluster", str(tmp_path / "cluster.yaml"), "--pod", str(tmp_path / "pod.yaml")).out)
    assert out["gates"] == ["foo"] and out["selected"] == "node-a"
