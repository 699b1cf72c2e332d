"""The kube mirror counts a bound pod that sets pod-level resources (spec.resources) as the API server
and kube-scheduler do: by its pod-level requests. Before, the parser refused such a pod and the
mirror skipped it, so its node looked emptier than it was (issue 9, point 6)."""

import pytest

from scheduler.queue import queues
from scheduler.kube.mirror import pod_upsert
from scheduler.manifests.files import parse_documents
from scheduler.models import Node, Pod
from scheduler.cluster.services import cluster_apply

pytestmark = pytest.mark.django_db(transaction=True)

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '8', memory: 16Gi, pods: '110'}}\n"


def bound_pod(name: str, resources: dict) -> dict:
    # As the API server returns it: defaulted, with a uid, bound to n1.
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"nodeName": "n1", "schedulerName": "other-scheduler", "resources": resources,
                     "containers": [{"name": "a", "image": "i", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}},
                                    {"name": "b", "image": "i", "resources": {"requests": {"cpu": "500m"}}}]},
            "status": {"phase": "Running"}}


def test_a_bound_pod_with_pod_level_requests_is_mirrored_and_counted_by_them():
    cluster_apply(parse_documents(NODE, "node.yaml"))
    pod_upsert(bound_pod("web", {"requests": {"cpu": "3", "memory": "1536Mi"}, "limits": {"cpu": "4", "memory": "1536Mi"}}),
               queue=queues.get_queue(), ours=set())
    row = Pod.objects.get(name="web")
    assert (row.node_name, row.req_cpu, row.req_memory) == ("n1", 3000, 1536 << 20)
    node = Node.objects.get(name="n1")
    assert (node.req_cpu, node.req_memory, node.req_pods) == (3000, 1536 << 20, 1)
    # Scoring reads the pod-level requests too, not the containers' defaults.
    assert (row.nonzero_cpu, row.nonzero_memory) == (3000, 1536 << 20)
