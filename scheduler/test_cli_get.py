"""`manage.py get` end to end: kubectl's table layouts and the -o json shape, after real attempts of the loop."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler.models import Event, Node, Pod
from scheduler.testing.cli import cli, manage, write
from scheduler.testing.loop import drain

# The shared Redis queue on a hand-moved clock (the `clock` fixture) for every test here.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]

CLUSTER = """\
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {node-role.kubernetes.io/control-plane: "", topology.kubernetes.io/zone: eu-west-1a}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  addresses: [{type: InternalIP, address: 10.0.1.11}, {type: Hostname, address: node-a}]
  conditions: [{type: Ready, status: "True"}]
  nodeInfo: {kubeletVersion: v1.30.0, osImage: Ubuntu 22.04.4 LTS, kernelVersion: 6.5.0-1017-aws,
             containerRuntimeVersion: "containerd://1.7.13"}
---
apiVersion: v1
kind: Node
metadata: {name: node-b, labels: {kubernetes.io/role: worker}}
spec:
  unschedulable: true
  taints: [{key: dedicated, value: batch, effect: NoSchedule}]
status:
  allocatable: {cpu: 2500m, memory: 1536Mi, pods: "10"}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers: [{name: web, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: default}
spec:
  readinessGates: [{conditionType: example.com/ready}]
  containers: [{name: big, image: nginx, resources: {requests: {cpu: "8"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: api, namespace: shop}
spec:
  nodeName: node-a
  initContainers: [{name: proxy, image: envoy, restartPolicy: Always}]
  containers: [{name: api, image: api, resources: {requests: {cpu: 500m, memory: 512Mi}}}]
"""

UNSCHEDULABLE = ("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable. "
                 "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """The cluster above after the loop has run: web bound to node-a, big unschedulable, api bound
    by its manifest; every object and event made 3 hours (and a few seconds) old."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "cluster.yaml", CLUSTER)
    assert cli("apply", "-f", "cluster.yaml").code == 0
    drain()
    then = timezone.now() - timedelta(hours=3, seconds=5)
    Pod.objects.update(created_at=then)
    Node.objects.update(created_at=then)
    Event.objects.update(first_timestamp=then, last_timestamp=then)
    return tmp_path


def test_get_pods_prints_kubectls_default_columns(cluster):
    r = cli("get", "pods")
    assert (r.code, r.err) == (0, "")
    assert r.out == (
        "NAME   READY   STATUS    RESTARTS   AGE\n"
        "big    0/1     Pending   0          3h\n"
        "web    1/1     Running   0          3h\n"
    )


def test_get_pods_all_namespaces_adds_namespace_first_and_counts_sidecars(cluster):
    r = cli("get", "pods", "-A")
    assert r.out == (
        "NAMESPACE   NAME   READY   STATUS    RESTARTS   AGE\n"
        "default     big    0/1     Pending   0          3h\n"
        "default     web    1/1     Running   0          3h\n"
        "shop        api    2/2     Running   0          3h\n"
    )


def test_get_pods_wide_adds_ip_node_nominated_node_and_readiness_gates(cluster):
    r = cli("get", "pods", "-A", "-o", "wide")
    assert r.out == (
        "NAMESPACE   NAME   READY   STATUS    RESTARTS   AGE   IP       NODE     NOMINATED NODE   READINESS GATES\n"
        "default     big    0/1     Pending   0          3h    <none>   <none>   <none>           0/1\n"
        "default     web    1/1     Running   0          3h    <none>   node-a   <none>           <none>\n"
        "shop        api    2/2     Running   0          3h    <none>   node-a   <none>           <none>\n"
    )


def test_get_pods_in_a_namespace_and_by_name(cluster):
    assert cli("get", "pods", "-n", "shop").out.splitlines()[1].startswith("api    2/2     Running")
    r = cli("get", "pod", "web", "nope")
    assert r.code == 1
    assert r.out == "NAME   READY   STATUS    RESTARTS   AGE\nweb    1/1     Running   0          3h\n"
    assert r.err == 'Error from server (NotFound): pods "nope" not found\n'


def test_no_resources_found_goes_to_stderr(cluster):
    r = cli("get", "pods", "-n", "empty")
    assert (r.code, r.out, r.err) == (0, "", "No resources found in empty namespace.\n")
    r = cli("get", "events", "-n", "shop")
    assert (r.code, r.out, r.err) == (0, "", "No resources found in shop namespace.\n")


def test_get_nodes_shows_status_roles_version_and_requested_over_allocatable(cluster):
    r = cli("get", "nodes")
    assert r.out == (
        "NAME     STATUS                     ROLES           AGE   VERSION   CPU(REQ/ALLOC)   MEMORY(REQ/ALLOC)   PODS(REQ/ALLOC)\n"
        "node-a   Ready                      control-plane   3h    v1.30.0   1500m/4          1536Mi/8Gi          2/110\n"
        "node-b   Ready,SchedulingDisabled   worker          3h              0/2500m          0/1536Mi            0/10\n"
    )


def test_get_nodes_wide_adds_kubectls_wide_columns_then_taints_and_zone(cluster):
    r = cli("get", "nodes", "-o", "wide")
    assert r.out.splitlines() == [
        "NAME     STATUS                     ROLES           AGE   VERSION   INTERNAL-IP   EXTERNAL-IP   OS-IMAGE             "
        "KERNEL-VERSION   CONTAINER-RUNTIME     CPU(REQ/ALLOC)   MEMORY(REQ/ALLOC)   PODS(REQ/ALLOC)   TAINTS                       ZONE",
        "node-a   Ready                      control-plane   3h    v1.30.0   10.0.1.11     <none>        Ubuntu 22.04.4 LTS   "
        "6.5.0-1017-aws   containerd://1.7.13   1500m/4          1536Mi/8Gi          2/110             <none>                       eu-west-1a",
        "node-b   Ready,SchedulingDisabled   worker          3h              <none>        <none>        <unknown>            "
        "<unknown>        <unknown>             0/2500m          0/1536Mi            0/10              dedicated=batch:NoSchedule   <none>",
    ]


def test_a_node_whose_ready_condition_is_false_reads_not_ready(cluster):
    node = Node.objects.get(name="node-a")
    node.manifest["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    node.save()
    assert cli("get", "nodes", "node-a").out.splitlines()[1].split()[1] == "NotReady"


def test_get_events_prints_type_reason_object_message(cluster):
    r = cli("get", "events")
    assert r.out == (
        "LAST SEEN   TYPE      REASON             OBJECT    MESSAGE\n"
        f"3h          Warning   FailedScheduling   pod/big   {UNSCHEDULABLE}\n"
        "3h          Normal    Scheduled          pod/web   Successfully assigned default/web to node-a\n"
    ) or r.out == (
        "LAST SEEN   TYPE      REASON             OBJECT    MESSAGE\n"
        "3h          Normal    Scheduled          pod/web   Successfully assigned default/web to node-a\n"
        f"3h          Warning   FailedScheduling   pod/big   {UNSCHEDULABLE}\n"
    )
    wide = cli("get", "events", "-A", "-o", "wide").out.splitlines()
    failed, scheduled = Event.objects.get(reason="FailedScheduling"), Event.objects.get(reason="Scheduled")
    width = len(UNSCHEDULABLE) + 3  # the MESSAGE column: its longest cell and tabwriter's padding
    assert wide[0] == ("NAMESPACE   LAST SEEN   TYPE      REASON             OBJECT    SUBOBJECT   SOURCE              "
                       + "MESSAGE".ljust(width) + "FIRST SEEN   COUNT   NAME")
    # SUBOBJECT is empty (no fieldPath) but its column keeps its width, as tabwriter pads it.
    assert sorted(wide[1:]) == sorted([
        "default     3h          Warning   FailedScheduling   pod/big               default-scheduler   "
        f"{UNSCHEDULABLE}   3h           1       big.{failed.pk:x}",
        "default     3h          Normal    Scheduled          pod/web               default-scheduler   "
        f"{'Successfully assigned default/web to node-a'.ljust(width)}3h           1       web.{scheduled.pk:x}",
    ])


def test_get_pods_json_is_a_v1_list_with_what_kube_scheduler_leaves(cluster):
    r = cli("get", "pods", "-A", "-o", "json")
    assert r.code == 0
    assert r.out.startswith('{\n    "apiVersion": "v1",\n    "items": [\n')  # kubectl's 4-space indent
    listing = json.loads(r.out)
    assert listing["apiVersion"] == "v1" and listing["kind"] == "List"
    assert listing["metadata"] == {"resourceVersion": ""}
    pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in listing["items"]}
    assert set(pods) == {("default", "big"), ("default", "web"), ("shop", "api")}
    for p in pods.values():
        assert p["apiVersion"] == "v1" and p["kind"] == "Pod" and p["metadata"]["uid"]

    web = pods["default", "web"]
    assert web["spec"]["nodeName"] == "node-a"
    assert web["spec"]["schedulerName"] == "default-scheduler"
    assert web["status"]["phase"] == "Running"
    [scheduled] = web["status"]["conditions"]
    assert scheduled["type"] == "PodScheduled" and scheduled["status"] == "True"
    assert scheduled["lastProbeTime"] is None and scheduled["lastTransitionTime"].endswith("Z")
    assert "reason" not in scheduled and "message" not in scheduled

    big = pods["default", "big"]
    assert "nodeName" not in big["spec"]
    assert big["status"]["phase"] == "Pending"
    assert big["status"]["conditions"] == [{
        "type": "PodScheduled", "status": "False", "lastProbeTime": None,
        "lastTransitionTime": big["status"]["conditions"][0]["lastTransitionTime"],
        "reason": "Unschedulable", "message": UNSCHEDULABLE,
    }]
    assert big["status"]["conditions"][0]["lastTransitionTime"].endswith("Z")


def test_get_one_pod_by_name_as_json_prints_the_pod_itself(cluster):
    pod = json.loads(cli("get", "pod", "web", "-o", "json").out)
    assert pod["kind"] == "Pod" and pod["metadata"]["name"] == "web"


def test_get_nodes_and_events_as_json(cluster):
    nodes = json.loads(cli("get", "nodes", "-o", "json").out)
    assert nodes["kind"] == "List" and [n["metadata"]["name"] for n in nodes["items"]] == ["node-a", "node-b"]
    assert nodes["items"][1]["spec"]["unschedulable"] is True
    events = json.loads(cli("get", "events", "-o", "json").out)
    failed = next(e for e in events["items"] if e["reason"] == "FailedScheduling")
    assert failed["involvedObject"]["kind"] == "Pod" and failed["involvedObject"]["name"] == "big"
    assert failed["type"] == "Warning" and failed["message"] == UNSCHEDULABLE and failed["count"] >= 1
    assert failed["metadata"]["namespace"] == "default"


def test_unknown_resource_type_and_names_across_namespaces_are_errors(cluster):
    assert cli("get", "daemonsets").code == 1
    assert cli("get", "pods", "web", "-A").code == 1


def test_through_manage_py(cluster):
    r = manage("get", "pods", "-o", "wide", cwd=cluster)
    assert (r.code, r.err) == (0, ""), r
    assert r.out == (
        "NAME   READY   STATUS    RESTARTS   AGE   IP       NODE     NOMINATED NODE   READINESS GATES\n"
        "big    0/1     Pending   0          3h    <none>   <none>   <none>           0/1\n"
        "web    1/1     Running   0          3h    <none>   node-a   <none>           <none>\n"
    )
    r = manage("get", "pods", "big", "-o", "json", cwd=cluster)
    assert r.code == 0 and json.loads(r.out)["status"]["conditions"][0]["message"] == UNSCHEDULABLE
    r = manage("get", "pods", "nope", cwd=cluster)
    assert (r.code, r.out, r.err) == (1, "", 'Error from server (NotFound): pods "nope" not found\n'), r
    r = manage("get", "daemonsets", cwd=cluster)
    assert (r.code, r.out, r.err) == (1, "", 'error: the server doesn\'t have a resource type "daemonsets"\n'), r
