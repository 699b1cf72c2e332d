"""`manage.py why ns/name`: a pending pod's nearest nodes, what each lacks and the single change, after real attempts."""

import json

import pytest

from scheduler.testing.cli import cli, write
from scheduler.testing.loop import drain

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]

CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: gpu-1, labels: {topology.kubernetes.io/zone: a}}
spec:
  taints: [{key: gpu, value: "true", effect: NoSchedule}]
status:
  allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata: {name: small-1, labels: {topology.kubernetes.io/zone: b}}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "110"}
---
apiVersion: v1
kind: Pod
metadata: {name: filler, namespace: default}
spec:
  nodeName: small-1
  containers: [{name: c, image: nginx, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ml}
spec:
  containers: [{name: c, image: trainer, resources: {requests: {cpu: "3", memory: 4Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m}}}]
"""


@pytest.fixture
def cluster(tmp_path, clock):
    assert cli("apply", "-f", str(tmp_path / write(tmp_path, "cluster.yaml", CLUSTER))).code == 0
    drain(clock)


def test_it_names_the_nearest_nodes_what_they_lack_and_the_change(cluster):
    result = cli("why", "ml/trainer")

    assert result.code == 0, result
    lines = result.out.splitlines()
    assert lines[0] == "Pod ml/trainer: 2 node(s) in the cluster."
    # Each node fails one filter; gpu-1 has room for the requests, so it comes first. small-1 also runs web (100m).
    assert lines[2:4] == ["  gpu-1 (1 failing):",
                          '    TaintToleration: taint gpu=true:NoSchedule not tolerated -> tolerations '
                          '{key: "gpu", operator: "Equal", value: "true", effect: "NoSchedule"}']
    assert ("NodeResourcesFit: needs 1.6 more CPU and 1 GiB: the pod asks more than the node's whole allocatable "
            "(2 CPU); no eviction can make room" in result.out)
    assert ('  add the toleration(s) {key: "gpu", operator: "Equal", value: "true", effect: "NoSchedule"}  (fits gpu-1)'
            in lines)


def test_json_is_the_engine_answer_with_the_configuration_version(cluster):
    result = cli("why", "ml/trainer", "--json", "--nearest", "1")

    answer = json.loads(result.out)
    assert answer["pod"] == "ml/trainer" and answer["version"] == 0 and answer["fits"] == []
    assert [e["node"] for e in answer["nearest"]] == ["gpu-1"]
    assert answer["failing_per_plugin"] == {"TaintToleration": 1, "NodeResourcesFit": 1}
    assert answer["message"].startswith("0/2 nodes are available")
    assert {c["kind"] for c in answer["changes"]} >= {"toleration", "request"}


def test_a_placed_pod_is_not_pending(cluster):
    result = cli("why", "default/web")
    assert result.code == 0 and result.out.strip() == "Pod default/web is not pending: it is placed on small-1."


@pytest.mark.parametrize("args,error", [
    (("nope",), "pod: 'nope' is not NAMESPACE/NAME"),
    (("ml/none",), "pod ml/none not found"),
    (("ml/trainer", "--nearest", "0"), "--nearest: 0 is not a positive number"),
])
def test_bad_input_is_named(cluster, args, error):
    with pytest.raises(Exception) as info:
        from django.core.management import call_command
        call_command("why", *args)
    assert str(info.value) == error
