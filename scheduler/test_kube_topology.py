"""PodTopologySpread and InterPodAffinity through a real kube-apiserver: a ReplicaSet's pods with a zone spread
constraint (maxSkew 1) and required hostname anti-affinity, placed by schedboard, end with the skew and the
anti-affinity held, as the API server reads them back; the mirror keeps the ReplicaSet and the namespaces, and
every other kind the two plugins read (a namespace's labels, a Service's, StatefulSet's and ReplicationController's
selectors) until the API server deletes it; a pod's required affinity finds its peer in another namespace."""

from collections import Counter

import pytest

from scheduler.kube.client import call
from scheduler.models import ClusterObject
from scheduler.testing.kube import NS, empty_cluster, running_replica, wait_for_cluster

pytestmark = [pytest.mark.kube, pytest.mark.django_db(transaction=True)]

WAIT = 30.0  # six placements through the API server on a shared machine
ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"


@pytest.fixture
def running(kube_cluster):
    """One replica of ours, leading, with the committer and the scheduling loop in threads."""
    with running_replica(kube_cluster.api_client()) as controller:
        yield controller


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

    wait_for_cluster(lambda: all(placed().values()) and len(placed()) == 6, "6 replicas bound", WAIT)
    hosts = Counter(placed().values())
    assert set(hosts.values()) == {1}, hosts  # required hostname anti-affinity: one replica per node
    zones = Counter(name[len("node-")] for name in placed().values())
    assert zones == {"a": 2, "b": 2, "c": 2}, zones  # maxSkew 1 over three zones
    # The mirror keeps what default spreading and namespaceSelector read.
    wait_for_cluster(lambda: ClusterObject.objects.filter(kind="ReplicaSet", namespace=NS, name="web").exists(),
                     "the ReplicaSet mirrored", WAIT)
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

    wait_for_cluster(lambda: condition() is not None and condition()["status"] == "False", "web-6 reported unschedulable",
                     WAIT)
    assert condition()["message"] == ("0/6 nodes are available: 6 node(s) didn't match pod anti-affinity rules. "
                                      "preemption: 0/6 nodes are available: 6 No preemption victims found for incoming pod.")


def test_the_mirror_keeps_each_kinds_selector_and_namespace_labels_until_the_api_server_deletes_them(kube_cluster, running):
    from kubernetes import client

    api_client = kube_cluster.api_client()
    core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    empty_cluster(core)
    call(core.create_namespace, {"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": "shop", "labels": {"team": "web"}}})
    call(core.create_namespaced_service, NS, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                                              "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})

    def template(app):
        return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c", "image": "registry.invalid/x:1"}]}}

    call(apps.create_namespaced_stateful_set, NS, {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}}, "template": template("db")}})
    call(core.create_namespaced_replication_controller, NS, {
        "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"},
        "spec": {"replicas": 1, "selector": {"app": "legacy"}, "template": template("legacy")}})

    def mirrored(kind, name, namespace=NS):
        return ClusterObject.objects.filter(kind=kind, namespace=namespace, name=name).first()

    wait_for_cluster(lambda: all((mirrored("Namespace", "shop", ""), mirrored("Service", "web"),
                                  mirrored("StatefulSet", "db"), mirrored("ReplicationController", "legacy"))),
                     "the namespace, service, stateful set and replication controller mirrored", WAIT)
    assert mirrored("Namespace", "shop", "").labels == {"team": "web"}
    assert mirrored("Service", "web").selector == {"app": "web"}
    assert (mirrored("StatefulSet", "db").selector, mirrored("StatefulSet", "db").replicas) == ({"matchLabels": {"app": "db"}}, 2)
    assert mirrored("ReplicationController", "legacy").selector == {"app": "legacy"}

    # A peer in another namespace (`namespaces`: the 1.20 API server predates namespaceSelector and drops it):
    # its node is where the follower must go.
    for name in ("n0", "n1"):
        allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
        call(core.create_node, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {HOST: name}},
                                "status": {"allocatable": allocatable, "capacity": allocatable}})
    call(core.create_namespaced_pod, "shop", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cache", "labels": {"app": "cache"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "registry.invalid/cache:1"}]}})
    call(core.create_namespaced_pod, NS, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "follower"},
        "spec": {"containers": [{"name": "c", "image": "registry.invalid/f:1"}],
                 "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                     {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": "cache"}}, "namespaces": ["shop"]}]}}}})
    wait_for_cluster(lambda: call(core.read_namespaced_pod, "follower", NS)["spec"].get("nodeName"), "the follower bound",
                     WAIT)
    assert call(core.read_namespaced_pod, "follower", NS)["spec"]["nodeName"] == "n1"

    call(core.delete_namespaced_service, "web", NS)
    wait_for_cluster(lambda: mirrored("Service", "web") is None, "the deleted service gone from the mirror", WAIT)
