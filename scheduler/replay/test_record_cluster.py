"""`record --from-cluster` against a real kube-apiserver on loopback: the start state it reads replays."""

import io
import json
from datetime import datetime, timezone

import pytest
from django.core.management import call_command

from scheduler.replay.record import record_from_cluster
from scheduler.replay.run import replay_trace
from scheduler.engine.config import default_config

pytestmark = pytest.mark.kube  # kube_cluster: scheduler/testing/fixtures.py


def test_a_live_snapshot_holds_the_nodes_the_pods_and_the_objects_plugins_read(kube_cluster):
    from kubernetes import client

    api = kube_cluster.api_client()
    core = client.CoreV1Api(api)
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": "shop", "labels": {"team": "web"}}})
    for name, cpu, memory in (("node-a", "16", "64Gi"), ("node-b", "4", "8Gi")):
        allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
        core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name, labels={"kubernetes.io/hostname": name}),
                                       status=client.V1NodeStatus(allocatable=allocatable, capacity=allocatable)))
    core.create_namespaced_service("shop", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                                            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})

    def pod(name, node=None):
        spec = {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
        if node:
            spec["nodeName"] = node
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}}, "spec": spec}

    core.create_namespaced_pod("shop", pod("running", node="node-b"))
    core.create_namespaced_pod("shop", pod("waiting"))

    trace = record_from_cluster(api, now=datetime.now(timezone.utc))
    api.close()

    assert trace.header["source"] == "cluster"
    assert sorted(m["metadata"]["name"] for m in trace.nodes) == ["node-a", "node-b"]
    assert {(m["metadata"]["name"], node) for m, node in trace.pods} >= {("running", "node-b"), ("waiting", None)}
    kinds = {(m["kind"], m["metadata"]["name"]) for m in trace.objects}
    assert ("Namespace", "shop") in kinds and ("Service", "web") in kinds
    shop = next(m for m in trace.objects if m["kind"] == "Namespace" and m["metadata"]["name"] == "shop")
    assert shop["metadata"]["labels"]["team"] == "web"

    report = replay_trace(trace, [("default", default_config())])
    run = report["configs"][0]
    # node-a is empty and four times node-b, which holds the other app=web pod: every score prefers node-a.
    assert run["placements"]["shop/waiting"] == "node-a" and run["placements"]["shop/running"] == "node-b"
    json.dumps(report)  # the report is plain JSON


def test_record_from_cluster_writes_a_trace_replay_reads(kube_cluster, settings, tmp_path):
    """As a user runs it: `record --from-cluster -o trace.jsonl` (KUBECONFIG), then `replay trace.jsonl --json`;
    node-10 listed after node-2."""
    from kubernetes import client

    api = kube_cluster.api_client()
    core = client.CoreV1Api(api)
    for name in ("node-10", "node-2"):
        allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
        core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name, labels={"kubernetes.io/hostname": name}),
                                       status=client.V1NodeStatus(allocatable=allocatable, capacity=allocatable)))
    core.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "waiting"},
                                           "spec": {"containers": [{"name": "c", "image": "nginx",
                                                                    "resources": {"requests": {"cpu": "3"}}}]}})
    api.close()
    settings.KUBECONFIG = str(kube_cluster.kubeconfig)
    path = tmp_path / "trace.jsonl"
    out = io.StringIO()
    call_command("record", "--from-cluster", "-o", str(path), stdout=out)
    assert "nodes and" in out.getvalue() and "pods at the start" in out.getvalue()  # the module's cluster: more
    out = io.StringIO()
    call_command("replay", str(path), "--json", stdout=out)
    run = json.loads(out.getvalue())["configs"][0]
    assert run["config"] == "default"  # a snapshot records no configuration: kube-scheduler's default
    assert run["placements"]["default/waiting"] in ("node-2", "node-10", "node-a")
    assert run["nodes"]["names"][:2] == ["node-2", "node-10"]
