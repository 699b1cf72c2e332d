"""Playing a scenario in-process: whatever fell due on the scenario clock before a step happens before it, even
when the clock outruns the control plane's ticks (a high time scale on a loaded machine)."""

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
