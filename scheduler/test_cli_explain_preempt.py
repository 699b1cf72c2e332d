"""`manage.py explain --preempt`: a pod that fits nowhere runs the profile's PostFilter (DefaultPreemption) as a dry
run; the JSON names the nominated node and the victims, the message ends with upstream's "preemption: ..." part,
and nothing is written or evicted."""

import json

import pytest

from scheduler.models import Event, Pod
from scheduler.testing.cli import cli

pytestmark = pytest.mark.django_db(transaction=True)

NODES = "".join(f"""---
apiVersion: v1
kind: Node
metadata: {{name: n{i}}}
status: {{allocatable: {{cpu: "1", memory: 1Gi, pods: "10"}}}}
""" for i in range(3))
# The classes the pods name, as a cluster's dump holds them (Priority admission resolves the pods against them).
NODES += "".join(f"""---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: p{value}{"-never" if never else ""}}}
value: {value}{chr(10) + "preemptionPolicy: Never" if never else ""}
""" for value, never in ((1, False), (5, False), (10, False), (50, False), (50, True), (100, False)))


def bound(name: str, node: str, priority: int, cpu: str = "900m", start: str = "2026-12-01T10:00:00Z") -> str:
    # As `kubectl get -o yaml` prints an admitted pod: its class and the priority resolved from it.
    return f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  nodeName: {node}
  priorityClassName: p{priority}
  priority: {priority}
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: {cpu}}}}}}}]
status: {{startTime: "{start}"}}
"""


def incoming(priority: int, policy: str = "") -> str:
    extra = f"\n  preemptionPolicy: {policy}" if policy else ""
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: vip, namespace: default}}
spec:
  priorityClassName: p{priority}{"-never" if policy == "Never" else ""}{extra}
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: 500m}}}}}}]
"""


def test_a_file_pod_with_a_priority_but_no_class_is_refused_as_the_priority_admission_plugin_does(files):
    # No class named and none globalDefault: admission computes 0, and a pod saying otherwise is refused.
    cluster, pod = files(NODES, incoming(50).replace("priorityClassName: p50", "priority: 50"))
    r = cli("explain", "--cluster", cluster, "--pod", pod, "--preempt")
    assert r.code == 1 and ("spec.priority: the integer value of priority (50) must not be provided in pod spec; "
                            "priority admission controller computed 0 from the given PriorityClass name") in r.err, r


@pytest.fixture
def files(tmp_path):
    def write(cluster: str, pod: str) -> tuple[str, str]:
        (tmp_path / "cluster.yaml").write_text(cluster)
        (tmp_path / "pod.yaml").write_text(pod)
        return str(tmp_path / "cluster.yaml"), str(tmp_path / "pod.yaml")
    return write


def explain(cluster: str, pod: str, *extra: str) -> dict:
    r = cli("explain", "--cluster", cluster, "--pod", pod, "--seed", "1", *extra)
    assert (r.code, r.err) == (0, ""), r
    return json.loads(r.out)


def test_it_nominates_the_node_whose_victims_matter_least_and_names_them(files):
    cluster, pod = files(NODES + bound("a", "n0", 100) + bound("b", "n1", 5) + bound("c", "n2", 10), incoming(50))
    out = explain(cluster, pod, "--preempt")
    assert out["selected"] is None
    assert out["nominated"] == "n1" and out["victims"] == ["default/b"]
    assert out["message"] == "0/3 nodes are available: 3 Insufficient cpu."
    assert out["preemption"]["candidates"][0] == {"node": "n1", "victims": ["default/b"], "pdb_violations": 0}
    assert not Pod.objects.exists() and not Event.objects.exists()  # a dry run


def test_without_preempt_the_output_is_unchanged(files):
    cluster, pod = files(NODES + bound("a", "n0", 100) + bound("b", "n1", 5) + bound("c", "n2", 10), incoming(50))
    out = explain(cluster, pod)
    assert set(out) == {"pod", "feasible", "filtered", "scores", "selected", "message"}


def test_when_nothing_can_be_preempted_the_message_is_upstreams(files):
    cluster, pod = files(NODES + bound("a", "n0", 100) + bound("b", "n1", 100) + bound("c", "n2", 100), incoming(50))
    out = explain(cluster, pod, "--preempt")
    assert out["nominated"] is None and out["victims"] == []
    assert out["message"] == ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
                              "3 No preemption victims found for incoming pod.")


def test_a_pod_that_never_preempts_is_not_helped(files):
    cluster, pod = files(NODES + bound("a", "n0", 1) + bound("b", "n1", 1) + bound("c", "n2", 1), incoming(50, "Never"))
    out = explain(cluster, pod, "--preempt")
    assert out["nominated"] is None and out["victims"] == []
    assert out["message"].endswith("preemption: not eligible due to preemptionPolicy=Never.")


def test_a_pod_that_fits_has_no_preemption(files):
    cluster, pod = files(NODES + bound("a", "n0", 1), incoming(50))
    out = explain(cluster, pod, "--preempt")
    assert out["selected"] in ("n1", "n2") and out["nominated"] is None and out["preemption"] is None


def test_a_bad_preemption_policy_is_refused_naming_file_and_field(files):
    cluster, pod = files(NODES, incoming(50, "Sometimes"))
    r = cli("explain", "--cluster", cluster, "--pod", pod, "--preempt")
    assert r.code == 1 and "spec.preemptionPolicy: Unsupported value: \"Sometimes\": supported values: " \
        "\"Never\", \"PreemptLowerPriority\"" in r.err and pod in r.err
