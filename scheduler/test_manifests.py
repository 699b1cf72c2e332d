"""Manifest parsing: kubectl dumps in, PodSpec/NodeSpec out; bad input out as exact, complete problem lists."""

import json
import os
import textwrap

import pytest

from scheduler.engine.nodes import ImageState
from scheduler.engine.pods import HostPort, NodeSelectorTerm, PreferredTerm, Requirement, Taint, Toleration
from scheduler.manifests.errors import ManifestError, Problem
from scheduler.manifests.files import parse_documents, parse_files
from scheduler.manifests.objects import ParsedNode, ParsedPod, node_from_manifest, pod_from_manifest

TESTDATA = os.path.join(os.path.dirname(__file__), "testdata", "manifests")

MiB = 1024 * 1024


def fixture(name: str) -> str:
    return os.path.join(TESTDATA, name)


def pod_yaml(spec: str = "", name: str = "web", meta: str = "") -> str:
    """A minimal valid pod; `spec` is extra YAML under spec, indented by two spaces."""
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{textwrap.indent(textwrap.dedent(meta), '  ')}"
        f"spec:\n  containers:\n  - name: app\n    image: nginx\n{textwrap.indent(textwrap.dedent(spec), '  ')}"
    )


def pod_with_requests(requests: str) -> str:
    return (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
        f"spec: {{containers: [{{name: app, image: nginx, resources: {{requests: {requests}}}}}]}}\n"
    )


def problems_of(text: str, filename: str = "pods.yaml") -> list[str]:
    with pytest.raises(ManifestError) as info:
        parse_documents(text, filename)
    assert str(info.value) == "\n".join(str(p) for p in info.value.problems)
    return [str(p) for p in info.value.problems]


# ---- bad input: the exact message and nothing else ------------------------------------------------
BAD = [
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: x}]}\n---\n"
        "kind: Pod\nmetadata: {name: [\n",
        ["pods.yaml: doc 2: invalid YAML: while parsing a flow node: expected the node content, "
         "but found '<stream end>' (line 8, column 1)"],
        id="bad-yaml-in-second-document",
    ),
    pytest.param(
        "a: 1\n---\n  b: 2\n c: 3\n---\n" + pod_with_requests("{cpu: abc}"),
        ["pods.yaml: doc 1: kind: Required value",
         "pods.yaml: doc 1: apiVersion: Required value",
         "pods.yaml: doc 2: invalid YAML: expected '<document start>', but found '<block mapping start>' (line 4, column 2)",
         'pods.yaml: doc 3 (Pod default/web): spec.containers[0].resources.requests[cpu]: invalid quantity "abc"'],
        id="documents-after-a-syntax-error-are-still-checked",
    ),
    pytest.param(
        "kind: Pod\n\tmetadata: {}\n",
        ["pods.yaml: doc 1: invalid YAML: while scanning for the next token: found character '\\t' "
         "that cannot start any token (line 2, column 1)"],
        id="bad-yaml-tab",
    ),
    pytest.param(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: web, namespace: shop}\n",
        ['pods.yaml: doc 1 (DaemonSet shop/web): kind: unsupported kind "DaemonSet" (only v1 Node, Pod, Namespace, Service and ReplicationController, apps/v1 ReplicaSet, StatefulSet and Deployment, scheduling.k8s.io/v1 PriorityClass and policy/v1 PodDisruptionBudget)'],
        id="unknown-kind",
    ),
    pytest.param(
        "metadata: {name: web}\n",
        ["pods.yaml: doc 1: kind: Required value", "pods.yaml: doc 1: apiVersion: Required value"],
        id="missing-kind-and-apiVersion",
    ),
    pytest.param(
        "apiVersion: v2\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c, image: x}]}\n",
        ['pods.yaml: doc 1 (Pod default/web): apiVersion: unsupported apiVersion "v2" for Pod (only v1)'],
        id="wrong-apiVersion",
    ),
    pytest.param(
        pod_with_requests("{cpu: abc}"),
        ['pods.yaml: doc 1 (Pod default/web): spec.containers[0].resources.requests[cpu]: invalid quantity "abc"'],
        id="bad-quantity",
    ),
    pytest.param(
        pod_with_requests("{memory: 1K}"),  # parse_quantity alone would take "K"; Kubernetes does not
        ['pods.yaml: doc 1 (Pod default/web): spec.containers[0].resources.requests[memory]: invalid quantity "1K"'],
        id="bad-quantity-suffix",
    ),
    pytest.param(
        pod_with_requests("{cpu: -1}"),
        ['pods.yaml: doc 1 (Pod default/web): spec.containers[0].resources.requests[cpu]: '
         'Invalid value: -1: must be greater than or equal to 0'],
        id="negative-request",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, image: nginx, "
        "resources: {requests: {example.com/gpu: 0.5}, limits: {example.com/gpu: 0.5}}}]}\n",
        ['pods.yaml: doc 1 (Pod default/web): spec.containers[0].resources.requests[example.com/gpu]: '
         'Invalid value: 500m: must be an integer',
         'pods.yaml: doc 1 (Pod default/web): spec.containers[0].resources.limits[example.com/gpu]: '
         'Invalid value: 500m: must be an integer'],
        id="fractional-extended-resource",
    ),
    pytest.param(
        pod_with_requests("{example.com/gpu: 1}"),
        ["pods.yaml: doc 1 (Pod default/web): spec.containers[0].resources.limits: "
         "Required value: Limit must be set for non overcommitable resources"],
        id="extended-resource-without-limit",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, image: nginx, "
        "resources: {requests: {cpu: '2'}, limits: {cpu: '1'}}}]}\n",
        ['pods.yaml: doc 1 (Pod default/web): spec.containers[0].resources.requests: '
         'Invalid value: "2": must be less than or equal to cpu limit of 1'],
        id="request-above-limit",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata: {namespace: shop}\nspec: {containers: [{name: c, image: x}]}\n",
        ["pods.yaml: doc 1 (Pod): metadata.name: Required value: name or generateName is required"],
        id="missing-name",
    ),
    pytest.param(
        pod_yaml(name="Web_1"),
        ["pods.yaml: doc 1 (Pod default/Web_1): metadata.name: Invalid value: \"Web_1\": a lowercase RFC 1123 "
         "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end "
         "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"],
        id="invalid-name",
    ),
    pytest.param(
        pod_yaml() + "---\n" + pod_yaml(meta="namespace: default\n") + "---\n" + pod_yaml(meta="namespace: other\n"),
        ["pods.yaml: doc 2 (Pod default/web): metadata.name: duplicate Pod default/web (also doc 1)"],
        id="duplicate-names",
    ),
    pytest.param(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n",
        ["pods.yaml: doc 1 (Node n1): items[1].metadata.name: duplicate Node n1 (also doc 1, items[0])"],
        id="duplicate-names-in-list",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata: abc\nspec:\n  containers: {name: c}\n  priority: '5'\n"
        "  nodeSelector: [a]\n  tolerations: {key: a}\n",
        ['pods.yaml: doc 1 (Pod): metadata: expected a map, got string "abc"',
         "pods.yaml: doc 1 (Pod): spec.containers: expected a list, got a map",
         "pods.yaml: doc 1 (Pod): spec.nodeSelector: cannot unmarshal array into Go struct field PodSpec.spec.nodeSelector "
         "of type map[string]string",
         "pods.yaml: doc 1 (Pod): spec.tolerations: expected a list, got a map",
         'pods.yaml: doc 1 (Pod): spec.priority: expected an integer, got string "5"'],
        id="wrong-types",
    ),
    pytest.param(
        pod_yaml(meta="labels: {tier: 1}\n"),
        ["pods.yaml: doc 1 (Pod default/web): metadata.labels.tier: cannot unmarshal number into Go struct field "
         "ObjectMeta.metadata.labels of type string"],
        id="label-value-not-a-string",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: [a]\n",
        ["pods.yaml: doc 1 (Pod default/web): spec: expected a map, got a list"],
        id="spec-not-a-map",
    ),
    pytest.param(
        "hello\n",
        ['pods.yaml: doc 1: expected a Kubernetes object (a map with apiVersion and kind), got string "hello"'],
        id="not-an-object",
    ),
    pytest.param(
        pod_yaml("""\
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                  - matchExpressions:
                    - {key: zone, operator: Near, values: [a]}
            """),
        ['pods.yaml: doc 1 (Pod default/web): spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution'
         '.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator'],
        id="bad-operator",
    ),
    pytest.param(
        pod_yaml("""\
            affinity:
              nodeAffinity:
                preferredDuringSchedulingIgnoredDuringExecution:
                - weight: 10
                  preference:
                    matchExpressions:
                    - {key: zone, operator: Exists, values: [a]}
                    - {key: zone, operator: In}
                    - {key: gen, operator: Gt, values: ["1.5"]}
                    - {key: gen, operator: Lt, values: ["1", "2"]}
                - weight: 0
                  preference:
                    matchFields:
                    - {key: metadata.labels, operator: In, values: [a, b]}
            """),
        [f"pods.yaml: doc 1 (Pod default/web): spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution{p}"
         for p in (
             "[0].preference.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
             "[0].preference.matchExpressions[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
             "[0].preference.matchExpressions[2].values[0]: Invalid value: \"1.5\": for 'Gt', 'Lt' operators, the value must be an integer",
             "[0].preference.matchExpressions[3].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
             "[1].weight: Invalid value: 0: must be in the range 1-100",
             "[1].preference.matchFields[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
             "[1].preference.matchFields[0].key: Invalid value: \"metadata.labels\": not a valid field selector key",
         )],
        id="exists-with-values-and-other-requirement-rules",
    ),
    pytest.param(
        pod_yaml("""\
            tolerations:
            - {key: a, operator: Exists, value: b}
            - {operator: Equal, value: b}
            - {key: a, effect: NoExecut}
            - {key: a, operator: Like}
            """),
        ["pods.yaml: doc 1 (Pod default/web): spec.tolerations[0].value: Invalid value: \"b\": value must be empty when `operator` is 'Exists'",
         "pods.yaml: doc 1 (Pod default/web): spec.tolerations[1].operator: Invalid value: \"Equal\": operator must be Exists "
         "when `key` is empty, which means \"match all values and all keys\"",
         'pods.yaml: doc 1 (Pod default/web): spec.tolerations[2].effect: Unsupported value: "NoExecut": supported values: '
         '"NoSchedule", "PreferNoSchedule", "NoExecute"',
         'pods.yaml: doc 1 (Pod default/web): spec.tolerations[3].operator: Unsupported value: "Like": supported values: '
         '"Equal", "Exists"'],
        id="bad-tolerations",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: []\n",
        ["pods.yaml: doc 1 (Pod default/web): spec.containers: Required value"],
        id="no-containers",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{image: x}, {name: b}, {name: b, image: y}]\n",
        ["pods.yaml: doc 1 (Pod default/web): spec.containers[0].name: Required value",
         "pods.yaml: doc 1 (Pod default/web): spec.containers[1].image: Required value",
         'pods.yaml: doc 1 (Pod default/web): spec.containers[2].name: Duplicate value: "b"'],
        id="container-name-and-image",
    ),
    pytest.param(
        pod_yaml("initContainers: [{name: init, image: x, restartPolicy: OnFailure}]\n"),
        ['pods.yaml: doc 1 (Pod default/web): spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": '
         'supported values: "Always"'],
        id="init-container-restart-policy",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec:\n  taints:\n  - {effect: NoSchedule}\n"
        "  - {key: a}\n  - {key: b, effect: Sometimes}\n  - {key: c, effect: NoSchedule}\n"
        "  - {key: c, effect: NoSchedule, value: x}\n"
        "status:\n  allocatable: {cpu: 1x, nvidia.com/gpu: 1.5}\n  images: [{names: [a, 1], sizeBytes: big}]\n",
        ['pods.yaml: doc 1 (Node n1): spec.taints[0].key: Invalid value: "": name part must be non-empty',
         'pods.yaml: doc 1 (Node n1): spec.taints[0].key: Invalid value: "": name part must consist of alphanumeric '
         "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
         "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
         "pods.yaml: doc 1 (Node n1): spec.taints[1].effect: Required value",
         'pods.yaml: doc 1 (Node n1): spec.taints[2].effect: Unsupported value: "Sometimes": supported values: '
         '"NoSchedule", "PreferNoSchedule", "NoExecute"',
         "pods.yaml: doc 1 (Node n1): spec.taints[4]: Duplicate value: \"c:NoSchedule\": taints must be unique by key and effect pair",
         'pods.yaml: doc 1 (Node n1): status.allocatable[cpu]: invalid quantity "1x"',
         'pods.yaml: doc 1 (Node n1): status.allocatable[nvidia.com/gpu]: Invalid value: 1500m: must be an integer',
         "pods.yaml: doc 1 (Node n1): status.images[0].names[1]: expected a string, got number 1",
         'pods.yaml: doc 1 (Node n1): status.images[0].sizeBytes: expected an integer, got string "big"'],
        id="bad-node",
    ),
    pytest.param(
        "apiVersion: v1\nkind: List\nitems:\n- 5\n- {kind: ConfigMap, apiVersion: v1, metadata: {name: s}}\n"
        "- {kind: Pod, apiVersion: v1, metadata: {name: p}, spec: {containers: [{name: c, image: x, "
        "ports: [{containerPort: 80, hostPort: 70000, protocol: HTTP}]}]}}\n",
        ["pods.yaml: doc 1: items[0]: expected a Kubernetes object (a map with apiVersion and kind), got number 5",
         'pods.yaml: doc 1 (ConfigMap s): items[1].kind: unsupported kind "ConfigMap" (only v1 Node, Pod, Namespace, '
         "Service and ReplicationController, apps/v1 ReplicaSet, StatefulSet and Deployment, scheduling.k8s.io/v1 "
         "PriorityClass and policy/v1 PodDisruptionBudget)",
         "pods.yaml: doc 1 (Pod default/p): items[2].spec.containers[0].ports[0].hostPort: "
         "Invalid value: 70000: must be between 1 and 65535, inclusive",
         'pods.yaml: doc 1 (Pod default/p): items[2].spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": '
         'supported values: "SCTP", "TCP", "UDP"'],
        id="list-items-are-located-by-index",
    ),
]


@pytest.mark.parametrize("text, expected", BAD)
def test_it_reports_exactly_these_problems(text, expected):
    assert problems_of(text) == expected


def test_bad_json_is_one_problem_with_its_position():
    assert problems_of('{"kind": "Pod",\n  "metadata": }\n', "pod.json") == [
        "pod.json: doc 1: invalid JSON: Expecting value (line 2, column 15)",
    ]


def test_a_problem_prints_file_doc_object_path_and_message():
    p = Problem("pods.yaml", 2, "Pod", "default/web", "spec.containers[0].resources.requests[cpu]", 'invalid quantity "abc"')
    assert str(p) == 'pods.yaml: doc 2 (Pod default/web): spec.containers[0].resources.requests[cpu]: invalid quantity "abc"'


def test_it_refuses_the_whole_file_and_lists_every_problem():
    text = pod_with_requests("{cpu: abc}") + "---\n" + pod_yaml(name="ok") + "---\n" + pod_with_requests("{memory: -1Gi}").replace("web", "w2")
    problems = problems_of(text)
    assert problems == [
        'pods.yaml: doc 1 (Pod default/web): spec.containers[0].resources.requests[cpu]: invalid quantity "abc"',
        'pods.yaml: doc 3 (Pod default/w2): spec.containers[0].resources.requests[memory]: '
        'Invalid value: -1Gi: must be greater than or equal to 0',
    ]


def test_empty_documents_are_skipped_but_keep_their_numbers():
    text = "---\n" + pod_yaml() + "---\n---\n" + pod_with_requests("{cpu: abc}").replace("web", "w2")
    assert problems_of(text) == [
        'pods.yaml: doc 3 (Pod default/w2): spec.containers[0].resources.requests[cpu]: invalid quantity "abc"',
    ]
    assert [p.spec.name for p in parse_documents("---\n" + pod_yaml() + "---\n---\n", "p.yaml")] == ["web"]


# ---- quantities -------------------------------------------------------------------------------------
@pytest.mark.parametrize("resource, quantity, expected", [
    ("cpu", "500m", 500),
    ("cpu", "1.5", 1500),
    ("cpu", "2", 2000),
    ("cpu", "0.1m", 1),  # MilliValue rounds up
    ("cpu", "1e-3", 1),
    ("cpu", "100n", 1),
    ("memory", "128Mi", 134217728),
    ("memory", "1G", 1000000000),
    ("memory", "1.5Gi", 1610612736),
    ("memory", "0.5", 1),  # Value rounds up
    ("memory", "1e3", 1000),
    ("memory", "1E", 10**18),
    ("ephemeral-storage", "10Gi", 10 * 1024**3),
])
def test_quantities_convert_to_kube_scheduler_units(resource, quantity, expected):
    [pod] = parse_documents(pod_with_requests(f'{{{resource}: "{quantity}"}}'), "p.yaml")
    assert pod.spec.containers[0].requests[resource] == expected


def test_yaml_numbers_are_quantities_too():
    [pod] = parse_documents(pod_with_requests("{cpu: 0.25, memory: 1048576}"), "p.yaml")
    assert pod.spec.containers[0].requests == {"cpu": 250, "memory": MiB}


# ---- good input: kubectl dumps ---------------------------------------------------------------------
def test_it_reads_a_kubectl_get_pod_dump():
    [parsed] = parse_files([fixture("pod-kubectl-get.yaml")])
    assert isinstance(parsed, ParsedPod)
    pod = parsed.spec
    assert (pod.namespace, pod.name, pod.uid) == ("shop", "web-7c9d8f6b5d-x2kqp", "5f1d2c3b-7a8e-4b6f-9c0d-1e2f3a4b5c6d")
    assert (pod.priority, pod.scheduler_name, pod.node_name, pod.deleting) == (1000, "default-scheduler", "node-b", False)
    # limits.memory with no request: the API server defaults the request to the limit.
    assert pod.containers[0].requests == {"cpu": 500, "memory": 256 * MiB}
    assert pod.requests == {"cpu": 500, "memory": 256 * MiB, "pods": 1}
    assert pod.host_ports == (HostPort(8080, "TCP", "0.0.0.0"),)  # the metrics port has no hostPort
    assert pod.images == ("registry.example.com/shop/web:1.8.2",)
    assert pod.node_selector == {"kubernetes.io/os": "linux"}
    assert pod.required_terms == (
        NodeSelectorTerm(match_expressions=(
            Requirement("kubernetes.io/arch", "In", ("amd64", "arm64")),
            Requirement("node.example.com/generation", "Gt", ("3",)),
        )),
        NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("node-b",)),)),
    )
    assert pod.preferred_terms == (
        PreferredTerm(20, NodeSelectorTerm(match_expressions=(Requirement("topology.kubernetes.io/zone", "In", ("eu-west-1a",)),))),
    )
    assert pod.tolerations == (
        Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute", 300),
        Toleration("node.kubernetes.io/unreachable", "Exists", "", "NoExecute", 300),
        Toleration("dedicated", "Equal", "shop", "NoSchedule", None),
    )
    # The dump is kept, managedFields and status included, with the defaulted request written in.
    assert parsed.manifest["metadata"]["managedFields"][0]["manager"] == "kube-controller-manager"
    assert parsed.manifest["status"]["phase"] == "Running"
    assert parsed.manifest["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m", "memory": "256Mi"}


def test_it_reads_a_kubectl_get_nodes_list():
    parsed = parse_files([fixture("nodes-kubectl-get.yaml")])
    assert all(isinstance(p, ParsedNode) for p in parsed)
    a, b, c = (p.spec for p in parsed)
    assert a.name == "node-a"
    assert a.allocatable == {"cpu": 4000, "ephemeral-storage": 95551679124, "hugepages-1Gi": 0, "hugepages-2Mi": 0,
                             "memory": 16283300 * 1024, "pods": 110}
    assert a.labels["node-role.kubernetes.io/control-plane"] == ""
    assert a.taints == (Taint("node-role.kubernetes.io/control-plane", "", "NoSchedule"),)
    assert a.images[1] == ImageState(("registry.k8s.io/pause@sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097",
                                      "registry.k8s.io/pause:3.9"), 321520)
    assert b.unschedulable is True
    assert b.allocatable == {"cpu": 7910, "ephemeral-storage": 1000000000, "memory": 31 * 1024**3, "nvidia.com/gpu": 2, "pods": 110}
    assert b.taints == (Taint("nvidia.com/gpu", "present", "NoSchedule"), Taint("dedicated", "shop", "PreferNoSchedule"))
    # No allocatable reported: capacity stands in.
    assert c.allocatable == {"cpu": 1500, "memory": 2000000000, "pods": 20}
    assert c.images == () and c.taints == () and c.unschedulable is False


def test_init_containers_sidecars_and_overhead_make_the_pod_requests():
    [parsed] = parse_files([fixture("pod-sidecar-overhead.yaml")])
    pod = parsed.spec
    assert [c.restart_policy for c in pod.init_containers] == [None, "Always", None]
    # cpu: containers 1500 + sidecar 100 = 1600; init peak max(2000, 300 + 100) = 2000; + overhead 250.
    # memory: containers 512Mi + 64Mi; init peak max(1Gi, 2Gi + 64Mi) = 2112Mi; + overhead 120Mi.
    assert pod.requests == {"cpu": 2250, "memory": 2232 * MiB, "example.com/foo": 2, "pods": 1}
    assert pod.overhead == {"cpu": 250, "memory": 120 * MiB}


def test_it_reads_a_json_pod_list_with_api_defaults():
    tiny, hostnet = (p.spec for p in parse_files([fixture("pods.json")]))
    assert tiny.key == "default/tiny" and tiny.deleting is True
    assert tiny.requests == {"cpu": 1, "memory": 1000000000, "pods": 1}
    assert hostnet.scheduler_name == "my-scheduler"
    assert hostnet.containers[0].requests == {"cpu": 1500, "memory": 134217728}
    # hostNetwork: every container port is a host port (defaultHostNetworkPorts).
    assert hostnet.host_ports == (HostPort(80, "TCP", "0.0.0.0"), HostPort(53, "UDP", "10.0.0.1"))


def test_priority_class_name_without_priority_reads_as_zero():
    [pod] = parse_documents(pod_yaml("priorityClassName: high\n"), "p.yaml")
    assert pod.spec.priority == 0


# ---- files, stdin, stored manifests ---------------------------------------------------------------
def test_parse_files_collects_problems_across_files_and_stdin(tmp_path):
    first = tmp_path / "a.yaml"
    first.write_text(pod_yaml())
    second = tmp_path / "b.yaml"
    second.write_text(pod_with_requests("{cpu: abc}").replace("web", "other"))
    with pytest.raises(ManifestError) as info:
        parse_files([str(first), str(second), "-", str(tmp_path / "missing.yaml")], stdin_text=pod_yaml())
    assert [str(p) for p in info.value.problems] == [
        f'{second}: doc 1 (Pod default/other): spec.containers[0].resources.requests[cpu]: invalid quantity "abc"',
        f"<stdin>: doc 1 (Pod default/web): metadata.name: duplicate Pod default/web (also {first} doc 1)",
        f"{tmp_path / 'missing.yaml'}: cannot read: No such file or directory",
    ]


def test_parse_files_reads_stdin_and_directories(tmp_path):
    (tmp_path / "1-nodes.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n")
    (tmp_path / "notes.txt").write_text("not a manifest")
    parsed = parse_files([str(tmp_path), "-"], stdin_text=pod_yaml())
    assert [type(p).__name__ for p in parsed] == ["ParsedNode", "ParsedPod"]


def test_stored_manifests_rebuild_the_same_specs():
    for parsed in parse_files([TESTDATA]):
        stored = json.loads(json.dumps(parsed.manifest))  # what the database keeps
        rebuild = pod_from_manifest if isinstance(parsed, ParsedPod) else node_from_manifest
        assert rebuild(stored) == parsed.spec


def test_yaml_timestamps_are_stored_as_strings():
    [pod] = parse_documents(pod_yaml(meta="creationTimestamp: 2024-05-02T09:14:05Z\n"), "p.yaml")
    assert pod.manifest["metadata"]["creationTimestamp"] == "2024-05-02T09:14:05Z"
    assert pod.manifest["metadata"]["namespace"] == "default"
    assert pod.manifest["spec"]["schedulerName"] == "default-scheduler"


def test_rebuilding_the_wrong_kind_is_an_error():
    with pytest.raises(ManifestError, match=r'<manifest>: doc 1 \(Pod default/p\): kind: expected Node, got "Pod"'):
        node_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                            "spec": {"containers": [{"name": "c", "image": "x"}]}})


# ---- metadata: labels and annotations as map[string]string, with the API server's rules and words ---
LONG = "a" * (256 * 1024 - 1)  # with a one-byte key: exactly TotalAnnotationSizeLimitB
QUALIFIED_NAME_REGEX = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                        "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                        "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE_REGEX = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
                     "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
                     "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
POD = "pods.yaml: doc 1 (Pod default/web): "
NODE = "pods.yaml: doc 1 (Node n1): "
NODE_WITH = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  {}\n"

METADATA = [
    # A value that is not a map[string]string is a decode error naming the Go field, as the API server's.
    pytest.param(pod_yaml(meta="annotations: 5\n"),
                 [POD + "metadata.annotations: cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations "
                        "of type map[string]string"], id="annotations-a-number"),
    pytest.param(pod_yaml(meta="annotations: [a, b]\n"),
                 [POD + "metadata.annotations: cannot unmarshal array into Go struct field ObjectMeta.metadata.annotations "
                        "of type map[string]string"], id="annotations-a-list"),
    pytest.param(pod_yaml(meta="annotations: {a: 5, b: [x], c: {d: e}, f: true, g: ok}\n"),
                 [POD + "metadata.annotations.a: cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations "
                        "of type string",
                  POD + "metadata.annotations.b: cannot unmarshal array into Go struct field ObjectMeta.metadata.annotations "
                        "of type string",
                  POD + "metadata.annotations.c: cannot unmarshal object into Go struct field ObjectMeta.metadata.annotations "
                        "of type string",
                  POD + "metadata.annotations.f: cannot unmarshal bool into Go struct field ObjectMeta.metadata.annotations "
                        "of type string"], id="annotation-values-not-strings"),
    pytest.param(pod_yaml(meta="annotations: {'bad key': x, example.com/ok: y}\n"),
                 [POD + f'metadata.annotations: Invalid value: "bad key": {QUALIFIED_NAME_REGEX}'], id="annotation-key"),
    pytest.param(pod_yaml(meta="annotations: {a/b/c: x}\n"),
                 [POD + "metadata.annotations: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric "
                        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',"
                        "  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
                        "[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"],
                 id="annotation-key-two-slashes"),
    pytest.param(pod_yaml(meta=f"annotations: {{a: {LONG}, b: c}}\n"),
                 [POD + "metadata.annotations: Too long: must have at most 262144 bytes"], id="annotations-over-256KiB"),
    pytest.param(pod_yaml(meta="labels: {app: 'a b', 'x y': z}\n"),
                 # As ValidateLabels: key and value problems are both on the map's path.
                 [POD + f'metadata.labels: Invalid value: "a b": {LABEL_VALUE_REGEX}',
                  POD + f'metadata.labels: Invalid value: "x y": {QUALIFIED_NAME_REGEX}'], id="label-key-and-value"),
    pytest.param(pod_yaml(meta="labels: {app: [a]}\n"),
                 [POD + "metadata.labels.app: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels "
                        "of type string"], id="label-value-a-list"),
    pytest.param(pod_yaml(spec="nodeSelector: {zone: 1}\n"),
                 [POD + "spec.nodeSelector.zone: cannot unmarshal number into Go struct field PodSpec.spec.nodeSelector "
                        "of type string"], id="node-selector-value-a-number"),
    pytest.param(NODE_WITH.format("annotations: 5"),
                 [NODE + "metadata.annotations: cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations "
                         "of type map[string]string"], id="node-annotations-a-number"),
    pytest.param(NODE_WITH.format("annotations: {'-x': y}"),
                 [NODE + f'metadata.annotations: Invalid value: "-x": {QUALIFIED_NAME_REGEX}'], id="node-annotation-key"),
    pytest.param(NODE_WITH.format("labels: {zone: [a]}"),
                 [NODE + "metadata.labels.zone: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels "
                         "of type string"], id="node-label-value-a-list"),
    pytest.param(pod_yaml(meta="uid: " + "u" * 65 + "\n"),
                 [POD + "metadata.uid: Too long: must have at most 64 bytes"], id="uid-too-long"),
]


@pytest.mark.parametrize("text, expected", METADATA)
def test_labels_and_annotations_are_map_string_string_with_the_api_servers_rules(text, expected):
    assert problems_of(text) == expected


@pytest.mark.parametrize("meta, labels, annotations", [
    ("annotations: {Example.COM/Some-Key: v, k: ''}\n", None, {"Example.COM/Some-Key": "v", "k": ""}),  # case is free
    (f"annotations: {{a: {LONG}}}\n", None, {"a": LONG}),  # 262144 bytes: the limit itself is fine
    ("labels: {app: null}\nannotations: {note: null}\n", {"app": ""}, {"note": ""}),  # null decodes to "", as in Go
])
def test_these_labels_and_annotations_are_accepted(meta, labels, annotations):
    [pod] = parse_documents(pod_yaml(meta=meta), "pods.yaml")
    assert pod.manifest["metadata"].get("labels") == labels
    assert pod.manifest["metadata"]["annotations"] == annotations


def test_two_pods_with_one_uid_are_refused_and_the_same_pod_twice_is_only_a_duplicate_name():
    text = (pod_yaml(name="a", meta="uid: u-1\n") + "---\n" + pod_yaml(name="b", meta="uid: u-1\n") + "---\n"
            + pod_yaml(name="a", meta="uid: u-1\n"))
    assert problems_of(text) == [
        'pods.yaml: doc 2 (Pod default/b): metadata.uid: Duplicate value: "u-1": already the uid of Pod default/a',
        "pods.yaml: doc 3 (Pod default/a): metadata.name: duplicate Pod default/a (also doc 1)",
    ]


DNS1123_SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                     "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
                     "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


@pytest.mark.parametrize("name, problems", [
    ("My_Scheduler", [f'Invalid value: "My_Scheduler": {DNS1123_SUBDOMAIN}']),
    ("=cmd|' /C calc'!A0", [f"Invalid value: \"=cmd|' /C calc'!A0\": {DNS1123_SUBDOMAIN}"]),
    ("-sched", [f'Invalid value: "-sched": {DNS1123_SUBDOMAIN}']),
    ("a" * 254, ["Invalid value: \"" + "a" * 254 + "\": must be no more than 253 characters"]),
    ("bin-pack.example.com", []),
    ("default-scheduler", []),
])
def test_a_scheduler_name_in_a_file_must_be_a_dns_subdomain(name, problems):
    text = pod_yaml(spec=f"schedulerName: {json.dumps(name)}\n")
    if problems:
        assert problems_of(text) == [f"pods.yaml: doc 1 (Pod default/web): spec.schedulerName: {p}" for p in problems]
    else:
        assert parse_documents(text, "pods.yaml")[0].spec.scheduler_name == name


def test_a_stored_or_mirrored_pod_keeps_any_scheduler_name_the_api_server_accepted():
    [pod] = parse_documents(pod_yaml(), "pods.yaml")
    pod.manifest["spec"]["schedulerName"] = "Team_A"  # upstream does not validate the field
    assert pod_from_manifest(pod.manifest).scheduler_name == "Team_A"


# ---- pod-level resources (spec.resources, PodLevelResources: beta and on by default since 1.34) ----------
def pod_level(resources: str, containers: str = "[{name: a, image: i}]", init: str = "") -> str:
    return ("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
            f"spec:\n  resources: {resources}\n  containers: {containers}\n" + (f"  initContainers: {init}\n" if init else ""))


def ctr(name: str, requests: str = "{}", limits: str = "{}") -> str:
    return f"{{name: {name}, image: i, resources: {{requests: {requests}, limits: {limits}}}}}"


POD_LEVEL_OK = [
    # (spec.resources, containers, init containers, pod requests, scoring's non-zero cpu/memory, stored spec.resources)
    pytest.param("{requests: {cpu: '2', memory: 1Gi}}", f"[{ctr('a', '{cpu: 500m}')}, {ctr('b', '{cpu: 500m}')}]", "",
                 {"cpu": 2000, "memory": 1 << 30}, {"cpu": 2000, "memory": 1 << 30},
                 {"requests": {"cpu": "2", "memory": "1Gi"}}, id="requests-replace-the-containers-sum"),
    pytest.param("{limits: {cpu: '2'}}", "[{name: a, image: i}]", "",
                 {"cpu": 2000}, {"cpu": 2000, "memory": 200 << 20},
                 {"limits": {"cpu": "2"}, "requests": {"cpu": "2"}}, id="no-container-requests-requests-default-to-limits"),
    pytest.param("{limits: {cpu: '4', memory: 2Gi}}", f"[{ctr('a', '{cpu: 1}')}, {ctr('b', '{cpu: 1500m}')}]", "",
                 {"cpu": 2500, "memory": 2 << 30}, {"cpu": 2500, "memory": 2 << 30},
                 {"limits": {"cpu": "4", "memory": "2Gi"}, "requests": {"cpu": "2500m", "memory": "2Gi"}},
                 id="requests-default-to-the-containers-sum-then-to-limits"),
    pytest.param("{requests: {cpu: '2'}}", f"[{ctr('a', limits='{cpu: 1}')}, {ctr('b', limits='{cpu: 1}')}]", "",
                 {"cpu": 2000}, {"cpu": 2000, "memory": 2 * (200 << 20)},
                 {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}, id="limits-default-to-the-containers-sum"),
    pytest.param("{requests: {cpu: '3'}}", f"[{ctr('a', '{cpu: 1}')}]", f"[{ctr('i', '{cpu: 2}')}]",
                 {"cpu": 3000}, {"cpu": 3000, "memory": 200 << 20},
                 {"requests": {"cpu": "3"}}, id="init-containers-count-in-the-aggregate"),
    pytest.param("{requests: {memory: 1Gi}}", f"[{ctr('a', '{cpu: 250m, ephemeral-storage: 1Gi}')}]", "",
                 {"cpu": 250, "memory": 1 << 30, "ephemeral-storage": 1 << 30}, {"cpu": 250, "memory": 1 << 30},
                 {"requests": {"memory": "1Gi"}}, id="unnamed-resources-still-come-from-containers"),
]


@pytest.mark.parametrize("resources, containers, init, requests, nonzero, stored", POD_LEVEL_OK)
def test_pod_level_resources_are_defaulted_and_counted_as_upstream(resources, containers, init, requests, nonzero, stored):
    [parsed] = parse_documents(pod_level(resources, containers, init), "pods.yaml")
    assert parsed.spec.requests == {**requests, "pods": 1}
    assert parsed.spec.nonzero_requests == nonzero
    assert parsed.manifest["spec"]["resources"] == stored
    assert pod_from_manifest(parsed.manifest).requests == parsed.spec.requests  # what the loop rebuilds from the row


SPEC_RESOURCES = "pods.yaml: doc 1 (Pod default/web): spec.resources"
POD_LEVEL_BAD = [
    pytest.param("{requests: {nvidia.com/gpu: 1, ephemeral-storage: 1Gi}}", "[{name: a, image: i}]",
                 [SPEC_RESOURCES + '.requests[nvidia.com/gpu]: Unsupported value: nvidia.com/gpu: supported values: '
                                   '"cpu", "hugepages-", "memory"',
                  SPEC_RESOURCES + '.requests[ephemeral-storage]: Unsupported value: ephemeral-storage: supported values: '
                                   '"cpu", "hugepages-", "memory"'], id="only-cpu-memory-hugepages"),
    pytest.param("{requests: {foo: 1}}", "[{name: a, image: i}]",
                 [SPEC_RESOURCES + ".requests[foo]: Invalid value: foo: must be a standard resource type or fully qualified"],
                 id="not-a-resource-name"),
    pytest.param("{requests: {cpu: '2'}, limits: {cpu: '1'}}", "[{name: a, image: i}]",
                 [SPEC_RESOURCES + '.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'],
                 id="requests-above-limits"),
    pytest.param("{requests: {cpu: '1'}}", f"[{ctr('a', '{cpu: 1}')}, {ctr('b', '{cpu: 500m}')}]",
                 [SPEC_RESOURCES + '.requests[cpu]: Invalid value: "1": must be greater than or equal to aggregate '
                                   "container requests of 1500m"], id="requests-below-the-containers-sum"),
    pytest.param("{limits: {cpu: '1'}}", f"[{ctr('a', limits='{cpu: 2}')}]",
                 [SPEC_RESOURCES + '.requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
                  SPEC_RESOURCES + '.containers[0][cpu].limits: Invalid value: "2": must be less than or equal to '
                                   "pod limits of 1"], id="a-container-limit-above-the-pod-limit"),
    pytest.param("{requests: {cpu: '3'}}", f"[{ctr('a', limits='{cpu: 1}')}, {ctr('b', limits='{cpu: 1}')}]",
                 [SPEC_RESOURCES + '.requests: Invalid value: "3": must be less than or equal to cpu limit of 2'],
                 id="requests-above-limits-defaulted-from-containers"),
    pytest.param("{requests: {cpu: -1}}", "[{name: a, image: i}]",
                 [SPEC_RESOURCES + ".requests[cpu]: Invalid value: -1: must be greater than or equal to 0"], id="negative"),
    pytest.param("{requests: {cpu: '1'}, claims: [{name: gpu}]}", "[{name: a, image: i}]",
                 [SPEC_RESOURCES + ".claims: Forbidden: claims cannot be set for Resources at pod-level"], id="claims"),
    pytest.param("{requests: {hugepages-2Mi: 2Mi}, limits: {hugepages-2Mi: 2Mi}}", "[{name: a, image: i}]",
                 [SPEC_RESOURCES + ": Forbidden: HugePages require cpu or memory"], id="hugepages-alone"),
    pytest.param("5", "[{name: a, image: i}]", [SPEC_RESOURCES + ": expected a map, got number 5"], id="not-a-map"),
]


@pytest.mark.parametrize("resources, containers, expected", POD_LEVEL_BAD)
def test_pod_level_resources_are_validated_with_the_api_servers_rules_and_words(resources, containers, expected):
    assert problems_of(pod_level(resources, containers)) == expected
