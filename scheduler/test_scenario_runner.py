"""Playing a scenario in-process: whatever fell due on the scenario clock before a step happens before it, even
when the clock outruns the control plane's ticks (a high time scale on a loaded machine)."""

import time

import pytest
import yaml

from scheduler.controllers.scenario.runner import play
from scheduler.controllers.scenario.spec import load
from scheduler.models import DeletedPod, Node
from scheduler.testing.loop import node, pod

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_eviction_due_before_the_recovery_happens_before_it_however_sparse_the_ticks(tmp_path):
    path = tmp_path / "outage.yaml"
    path.write_text(yaml.safe_dump({"steps": [
        {"at": "0s", "apply": [node("n1"), pod("web", nodeName="n1")]},
        {"at": "1s", "fail": "n1", "unreachable": True},
        {"at": "400s", "recover": "n1"}]}))
    # 400 scenario seconds in 4 wall seconds, the control plane asked to tick every 10 wall seconds: only the
    # tick before the recovery can see the 300 s toleration run out.
    results = play(load(str(path)), time_scale=100, tick_seconds=10)
    assert [r.ok for r in results] == [True, True, True]
    gone = DeletedPod.objects.get(name="web")
    assert [c["reason"] for c in gone.manifest["status"]["conditions"] if c["type"] == "DisruptionTarget"] == [
        "DeletionByTaintManager"]
    assert not Node.objects.get(name="n1").manifest["spec"].get("taints")


def test_the_schedule_slips_by_what_a_wait_held_so_the_steps_after_it_keep_their_distance(tmp_path):
    path = tmp_path / "held.yaml"
    # No workers run: the pod stays pending and the wait holds until its timeout, two wall seconds.
    path.write_text(yaml.safe_dump({"steps": [
        {"at": "0s", "apply": [node("n1"), pod("web")]},
        {"at": "1s", "wait": "scheduled", "timeout": "2s"},
        {"at": "2s", "fail": "n1"}]}))
    results = play(load(str(path)), time_scale=1, tick_seconds=0.05)
    assert [r.ok for r in results] == [True, False, True]
    # The wait held 2 s: the fail, 1 s after the wait in the schedule, runs 1 s after the hold ended, not at
    # once (the clock already read 3 s when the hold ended).
    assert results[2].at - results[1].at == pytest.approx(3.0, abs=0.3)


def test_a_step_that_starts_late_moves_the_rest_of_the_schedule_so_no_gap_shrinks(tmp_path):
    path = tmp_path / "late.yaml"
    path.write_text(yaml.safe_dump({"steps": [
        {"at": "0s", "apply": [node("n1"), pod("web", nodeName="n1")]},
        {"at": "1s", "fail": "n1", "unreachable": True},
        {"at": "341s", "recover": "n1"}]}))
    # At 300x every wall tenth of a second is 30 scenario seconds: the first step's report holding the runner a
    # tenth of a second (as a slow apply would; a real apply's time depends on the machine) makes the fail late.
    held = []
    results = play(load(str(path)), time_scale=300, tick_seconds=0.01,
                   report=lambda r: held or held.append(time.sleep(0.1)))
    assert results[1].at > 10
    assert results[2].at - results[1].at >= 340
    assert DeletedPod.objects.filter(name="web").exists()  # the 300 s toleration ran out before the recovery
