"""Smoke tests of the loopback kube-apiserver the Kubernetes backend is tested against.

They check what the backend relies on, through the official `kubernetes` client: nodes carry
`status.allocatable`, the `pods/binding` subresource sets `spec.nodeName` and answers 409 on a
second bind, and a field-selected list + watch sees a pod bound to a node.
"""

import json
import uuid

import pytest

from scheduler.testing.kube_apiserver import KUBE_VERSION, LocalKubeCluster

# The loopback server's certificate is self-signed; the harness's kubeconfig names it as the CA, so TLS is
# verified and urllib3 has nothing to warn about.
pytestmark = pytest.mark.kube

NAMESPACE = "default"


@pytest.fixture(scope="module")
def core_v1(kube_cluster: LocalKubeCluster):
    from kubernetes import client

    api_client = kube_cluster.api_client()
    yield client.CoreV1Api(api_client)
    api_client.close()


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _node(name: str, *, cpu: str = "4", memory: str = "8Gi", pods: str = "110"):
    from kubernetes import client

    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    return client.V1Node(
        metadata=client.V1ObjectMeta(name=name, labels={"kubernetes.io/hostname": name}),
        status=client.V1NodeStatus(allocatable=allocatable, capacity=allocatable),
    )


def _pod(name: str, *, scheduler_name: str = "schedboard"):
    from kubernetes import client

    container = client.V1Container(
        name="main", image="registry.invalid/pause:3.2",
        resources=client.V1ResourceRequirements(requests={"cpu": "100m", "memory": "64Mi"}),
    )
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, namespace=NAMESPACE),
        spec=client.V1PodSpec(containers=[container], scheduler_name=scheduler_name),
    )


def _bind(core_v1, pod_name: str, node_name: str):
    """POST pods/binding; the 37.x client cannot read the server's Status reply, hence no preload."""
    from kubernetes import client

    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=pod_name, namespace=NAMESPACE),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node_name),
    )
    response = core_v1.create_namespaced_binding(NAMESPACE, body, _preload_content=False)
    return json.loads(response.data)


def test_it_serves_kubernetes_v1_20_2(kube_cluster):
    from kubernetes import client

    with kube_cluster.api_client() as api_client:
        assert client.VersionApi(api_client).get_code().git_version == KUBE_VERSION
    assert kube_cluster.url.startswith("https://127.0.0.1:")
    assert kube_cluster.etcd_url.startswith("http://127.0.0.1:")


def test_it_keeps_a_nodes_allocatable_resources(core_v1):
    name = _name("node")
    core_v1.create_node(_node(name, cpu="2", memory="4Gi"))

    node = core_v1.read_node(name)

    assert node.status.allocatable == {"cpu": "2", "memory": "4Gi", "pods": "110"}


def test_it_binds_a_pod_through_the_binding_subresource_and_marks_it_scheduled(core_v1):
    node_name, pod_name = _name("node"), _name("pod")
    core_v1.create_node(_node(node_name))
    core_v1.create_namespaced_pod(NAMESPACE, _pod(pod_name))
    assert core_v1.read_namespaced_pod(pod_name, NAMESPACE).spec.node_name is None

    status = _bind(core_v1, pod_name, node_name)

    assert status["status"] == "Success"
    pod = core_v1.read_namespaced_pod(pod_name, NAMESPACE)
    assert pod.spec.node_name == node_name
    assert pod.spec.scheduler_name == "schedboard"
    scheduled = [c for c in pod.status.conditions or [] if c.type == "PodScheduled"]
    assert [c.status for c in scheduled] == ["True"]  # set by the API server itself on binding
    assert pod.status.phase == "Pending"  # no kubelet runs it


def test_it_answers_409_conflict_when_binding_a_bound_pod_again(core_v1):
    from kubernetes.client.exceptions import ApiException

    node_a, node_b, pod_name = _name("node"), _name("node"), _name("pod")
    core_v1.create_node(_node(node_a))
    core_v1.create_node(_node(node_b))
    core_v1.create_namespaced_pod(NAMESPACE, _pod(pod_name))
    _bind(core_v1, pod_name, node_a)

    for node in (node_a, node_b):
        with pytest.raises(ApiException) as conflict:
            _bind(core_v1, pod_name, node)
        assert conflict.value.status == 409

    assert core_v1.read_namespaced_pod(pod_name, NAMESPACE).spec.node_name == node_a


def test_a_field_selected_list_and_watch_sees_a_pod_bound_to_the_node(core_v1):
    from kubernetes import watch

    node_name, pod_name = _name("node"), _name("pod")
    core_v1.create_node(_node(node_name))
    selector = f"spec.nodeName={node_name}"
    before = core_v1.list_namespaced_pod(NAMESPACE, field_selector=selector)
    assert before.items == []

    core_v1.create_namespaced_pod(NAMESPACE, _pod(pod_name))
    _bind(core_v1, pod_name, node_name)

    # Watching from the list's resource version replays what happened since: the pod starts
    # matching the selector when it is bound, which a watch reports as ADDED.
    seen = []
    stream = watch.Watch()
    for event in stream.stream(
        core_v1.list_namespaced_pod, NAMESPACE, field_selector=selector,
        resource_version=before.metadata.resource_version, timeout_seconds=10,
    ):
        seen.append((event["type"], event["object"].metadata.name, event["object"].spec.node_name))
        if event["object"].metadata.name == pod_name:
            stream.stop()
    assert seen == [("ADDED", pod_name, node_name)]

    after = core_v1.list_namespaced_pod(NAMESPACE, field_selector=selector)
    assert [p.metadata.name for p in after.items] == [pod_name]
    unbound = core_v1.list_namespaced_pod(NAMESPACE, field_selector="spec.nodeName=")
    assert pod_name not in {p.metadata.name for p in unbound.items}


def test_a_watch_on_unbound_pods_sees_a_pod_arrive_and_leave_when_bound(core_v1):
    from kubernetes import watch

    node_name, pod_name = _name("node"), _name("pod")
    core_v1.create_node(_node(node_name))
    unbound = "spec.nodeName="  # what a scheduler watches for pods to place
    before = core_v1.list_namespaced_pod(NAMESPACE, field_selector=unbound)

    core_v1.create_namespaced_pod(NAMESPACE, _pod(pod_name))
    listed = core_v1.list_namespaced_pod(NAMESPACE, field_selector=unbound)
    assert pod_name in {p.metadata.name for p in listed.items}
    _bind(core_v1, pod_name, node_name)

    # A pod that stops matching the selector is reported as DELETED, carrying its last matching state.
    seen = []
    stream = watch.Watch()
    for event in stream.stream(
        core_v1.list_namespaced_pod, NAMESPACE, field_selector=unbound,
        resource_version=before.metadata.resource_version, timeout_seconds=10,
    ):
        if event["object"].metadata.name == pod_name:
            seen.append((event["type"], event["object"].spec.node_name))
            if event["type"] == "DELETED":
                stream.stop()
    assert seen == [("ADDED", None), ("DELETED", None)]
