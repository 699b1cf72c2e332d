"""PodTopologySpread and InterPodAffinity through a real kube-apiserver: a ReplicaSet's pods with a zone spread
constraint (maxSkew 1) and required hostname anti-affinity, placed by schedboard, end with the skew and the
anti-affinity held, as the API server reads them back; the mirror keeps the ReplicaSet and the namespaces."""

import threading
import time
import uuid
from collections import Counter

import pytest

from scheduler import loop
from scheduler.backends import reset_backend
from scheduler.kube.client import call
from scheduler.models import ClusterObject

pytestmark = [pytest.mark.kube, pytest.mark.django_db(transaction=True)]

NS = "default"
ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"


@pytest.fixture
def running(kube_cluster):
    """One replica of ours, leading, with the committer and the scheduling loop in threads."""
    from django.db import connections

    from scheduler.replica import Replica

    controller = Replica(api_client=kube_cluster.api_client(), namespace=NS, lease_name=f"lease-{uuid.uuid4().hex[:6]}",
                            lease_duration=15, renew_deadline=10, retry_period=2, watch_timeout=60)
    assert controller.elector.acquire()
    controller.start_leading()
    stop = threading.Event()

    def commit():
        try:
            while not stop.is_set():
                controller.committer.run_once(0.05)
        finally:
            connections.close_all()

    def schedule():
        try:
            while not stop.is_set():
                loop.reconcile()
                if not loop.run_schedule_task().popped:
                    stop.wait(0.05)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=commit, daemon=True), threading.Thread(target=schedule, daemon=True)]
    for t in threads:
        t.start()
    yield controller
    stop.set()
    for t in threads:
        t.join(10)
    controller.stop()
    controller.stop_leading()
    reset_backend()


def wait_for(predicate, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    from scheduler.models import Pod

    state = [(p.key, p.node_name, p.scheduled_reason, p.scheduled_message) for p in Pod.objects.all()]
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\npods={state}")


def test_a_replicasets_pods_end_spread_across_zones_and_one_per_host(kube_cluster, running):
    from kubernetes import client

    api_client = kube_cluster.api_client()
    core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    for zone in "abc":
        for i in range(2):
            name = f"node-{zone}{i}"
            allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
            call(core.create_node, {"apiVersion": "v1", "kind": "Node",
                                    "metadata": {"name": name, "labels": {ZONE: zone, HOST: name}},
                                    "status": {"allocatable": allocatable, "capacity": allocatable}})
    template = {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "registry.invalid/web:1"}]}}
    rs = call(apps.create_namespaced_replica_set, NS, {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
        "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}}, "template": template}})
    # No controller manager runs here: the pods the ReplicaSet would create are created as it would.
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": rs["metadata"]["uid"], "controller": True}
    selector = {"matchLabels": {"app": "web"}}
    for i in range(6):
        call(core.create_namespaced_pod, NS, {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"web-{i}", "labels": {"app": "web"}, "ownerReferences": [owner]},
            "spec": {"containers": [{"name": "c", "image": "registry.invalid/web:1",
                                     "resources": {"requests": {"cpu": "100m"}}}],
                     "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                                                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}],
                     "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                         {"topologyKey": HOST, "labelSelector": selector}]}}}})

    def placed():
        return {p["metadata"]["name"]: p["spec"].get("nodeName")
                for p in call(core.list_namespaced_pod, NS, label_selector="app=web")["items"]}

    wait_for(lambda: all(placed().values()) and len(placed()) == 6, "6 replicas bound")
    hosts = Counter(placed().values())
    assert set(hosts.values()) == {1}, hosts  # required hostname anti-affinity: one replica per node
    zones = Counter(name[len("node-")] for name in placed().values())
    assert zones == {"a": 2, "b": 2, "c": 2}, zones  # maxSkew 1 over three zones
    # The mirror keeps what default spreading and namespaceSelector read.
    wait_for(lambda: ClusterObject.objects.filter(kind="ReplicaSet", namespace=NS, name="web").exists(),
             "the ReplicaSet mirrored")
    stored = ClusterObject.objects.get(kind="ReplicaSet", namespace=NS, name="web")
    assert stored.selector == {"matchLabels": {"app": "web"}} and stored.replicas == 6
    assert ClusterObject.objects.filter(kind="Namespace", name=NS).exists()
    # A seventh replica fits nowhere: every node already holds one.
    call(core.create_namespaced_pod, NS, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-6", "labels": {"app": "web"}, "ownerReferences": [owner]},
        "spec": {"containers": [{"name": "c", "image": "registry.invalid/web:1"}],
                 "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                     {"topologyKey": HOST, "labelSelector": selector}]}}}})

    def condition():
        conditions = (call(core.read_namespaced_pod, "web-6", NS).get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "PodScheduled"), None)

    wait_for(lambda: condition() is not None and condition()["status"] == "False", "web-6 reported unschedulable")
    assert condition()["message"] == ("0/6 nodes are available: 6 node(s) didn't match pod anti-affinity rules. "
                                      "preemption: 0/6 nodes are available: 6 No preemption victims found for incoming pod.")
