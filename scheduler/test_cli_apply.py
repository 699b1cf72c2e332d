"""`manage.py apply` and `manage.py delete` end to end against real Postgres and Redis.

Each behaviour is checked through call_command; the exit codes and the printed text are also
proved once through a real `python manage.py` subprocess on the test database.
"""

from pathlib import Path

import pytest

from scheduler.queue import queues
from scheduler.models import ClusterEvent, Node, Pod
from scheduler.testing.cli import cli, manage, write

pytestmark = pytest.mark.django_db(transaction=True)

TESTDATA = Path(__file__).resolve().parent / "testdata"


NODE_A = """\
apiVersion: v1
kind: Node
metadata: {name: node-a}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""

POD_WEB = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers:
  - name: web
    image: nginx
    resources: {requests: {cpu: 500m, memory: 256Mi}}
"""


def counts():
    return Node.objects.count(), Pod.objects.count(), ClusterEvent.objects.count()


def queue_state():
    q = queues.get_queue()
    return q.lengths(), q.keys()


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    """Files are named relative to the working directory, so messages read `pods.yaml: ...`."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---- applying -----------------------------------------------------------------------------------

def test_it_creates_nodes_and_pods_and_queues_the_pending_pod(workdir):
    write(workdir, "cluster.yaml", NODE_A + "---\n" + POD_WEB)
    r = cli("apply", "-f", "cluster.yaml")
    assert (r.code, r.out, r.err) == (0, "node/node-a created\npod/web created\n", "")
    web = Pod.objects.get(name="web")
    assert (web.phase, web.node_name, web.req_cpu, web.req_memory) == ("Pending", "", 500, 256 << 20)
    assert web.queued_at is not None
    info = queues.get_queue().get("default/web")
    assert info is not None and info.queue == "active"


def test_reapplying_says_unchanged_and_a_change_says_configured(workdir):
    write(workdir, "cluster.yaml", NODE_A + "---\n" + POD_WEB)
    cli("apply", "-f", "cluster.yaml")
    r = cli("apply", "-f", "cluster.yaml")
    assert (r.code, r.out) == (0, "node/node-a unchanged\npod/web unchanged\n")
    write(workdir, "cluster.yaml", NODE_A.replace('cpu: "4"', 'cpu: "8"') + "---\n"
          + POD_WEB.replace("{name: web, namespace: default}", "{name: web, namespace: default, labels: {app: web}}"))
    r = cli("apply", "-f", "cluster.yaml")
    assert (r.code, r.out) == (0, "node/node-a configured\npod/web configured\n")
    assert Node.objects.get(name="node-a").alloc_cpu == 8000
    assert Pod.objects.get(name="web").manifest["metadata"]["labels"] == {"app": "web"}
    assert Pod.objects.count() == 1


def test_it_reads_stdin_with_dash_and_several_files_in_order(workdir):
    write(workdir, "node.yaml", NODE_A)
    r = cli("apply", "-f", "node.yaml", "-f", "-", stdin=POD_WEB)
    assert (r.code, r.out, r.err) == (0, "node/node-a created\npod/web created\n", "")


def test_it_reads_a_kind_list_as_kubectl_get_o_yaml_prints_it(workdir):
    r = cli("apply", "-f", str(TESTDATA / "manifests" / "nodes-kubectl-get.yaml"))
    assert r.code == 0, r
    names = list(Node.objects.values_list("name", flat=True))
    assert r.out == "".join(f"node/{n} created\n" for n in names) and len(names) >= 2
    # Its spec.priorityClassName must exist here too, as Priority admission wants (the pod came from a cluster that had it).
    r = cli("apply", "-f", str(TESTDATA / "manifests" / "pod-kubectl-get.yaml"))
    assert r.code == 1 and r.err.endswith("spec.priorityClassName: no PriorityClass with name shop-high was found\n"), r
    write(workdir, "class.yaml", "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: shop-high}\nvalue: 1000\n")
    assert cli("apply", "-f", str(workdir / "class.yaml")).out == "priorityclass.scheduling.k8s.io/shop-high created\n"
    r = cli("apply", "-f", str(TESTDATA / "manifests" / "pod-kubectl-get.yaml"))
    assert r.code == 0, r
    assert r.out.endswith(" created\n")


def test_it_reads_json_lists(workdir):
    write(workdir, "cluster.json", """{"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"},
         "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"},
         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}]}""")
    r = cli("apply", "-f", "cluster.json")
    assert (r.code, r.out) == (0, "node/node-a created\npod/web created\n")
    assert Pod.objects.get(name="web").namespace == "shop"


def test_same_pod_name_in_two_namespaces_gets_a_line_each(workdir):
    write(workdir, "pods.yaml", POD_WEB + "---\n" + POD_WEB.replace("namespace: default", "namespace: shop"))
    cli("apply", "-f", "pods.yaml")
    write(workdir, "pods.yaml", POD_WEB + "---\n" + POD_WEB.replace("namespace: default", "namespace: shop, labels: {a: b}"))
    r = cli("apply", "-f", "pods.yaml")
    assert r.out == "pod/web unchanged\npod/web configured\n"


def test_a_pod_with_node_name_counts_against_its_node_and_is_not_queued(workdir):
    bound = POD_WEB.replace("spec:\n", "spec:\n  nodeName: node-a\n")
    write(workdir, "cluster.yaml", NODE_A + "---\n" + bound)
    assert cli("apply", "-f", "cluster.yaml").code == 0
    node = Node.objects.get(name="node-a")
    assert (node.req_cpu, node.req_memory, node.req_pods) == (500, 256 << 20, 1)
    web = Pod.objects.get(name="web")
    assert (web.phase, web.node_name, web.scheduled_status) == ("Running", "node-a", "True")
    assert queues.get_queue().get("default/web") is None


def test_a_pod_for_another_scheduler_is_stored_but_not_queued(workdir):
    write(workdir, "pod.yaml", POD_WEB.replace("spec:\n", "spec:\n  schedulerName: other-scheduler\n"))
    assert cli("apply", "-f", "pod.yaml").code == 0
    assert Pod.objects.get(name="web").scheduler_name == "other-scheduler"
    assert queues.get_queue().keys() == set()


def test_an_empty_file_is_an_error_as_in_kubectl(workdir):
    write(workdir, "empty.yaml", "# nothing here\n")
    r = cli("apply", "-f", "empty.yaml")
    assert r.code == 1 and r.out == ""


def test_a_missing_file_is_reported_and_nothing_is_applied(workdir):
    write(workdir, "node.yaml", NODE_A)
    r = cli("apply", "-f", "node.yaml", "-f", "nope.yaml")
    assert (r.code, r.err) == (1, "nope.yaml: cannot read: No such file or directory\n")
    assert Node.objects.count() == 0


# ---- bad input: every problem printed, exit 1, nothing applied -------------------------------------

BAD_INPUTS = {
    "bad YAML": (
        "yaml.yaml",
        NODE_A + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n   namespace: default\n",
        ["yaml.yaml: doc 2: invalid YAML: mapping values are not allowed here (line 10, column 13)"],
    ),
    "unknown kind": (
        "kind.yaml",
        NODE_A + "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: web, namespace: shop}\nspec: {}\n",
        ['kind.yaml: doc 2 (DaemonSet shop/web): kind: unsupported kind "DaemonSet" (only v1 Node, Pod, Namespace, Service and ReplicationController, apps/v1 ReplicaSet, StatefulSet and Deployment, scheduling.k8s.io/v1 PriorityClass and policy/v1 PodDisruptionBudget)'],
    ),
    "bad quantity": (
        "pods.yaml",
        NODE_A + "---\n" + POD_WEB.replace("cpu: 500m", "cpu: abc"),
        ['pods.yaml: doc 2 (Pod default/web): spec.containers[0].resources.requests[cpu]: invalid quantity "abc"'],
    ),
    "missing name": (
        "noname.yaml",
        "apiVersion: v1\nkind: Node\nmetadata: {labels: {a: b}}\nstatus: {allocatable: {cpu: '4'}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {namespace: default}\nspec: {containers: [{name: c, image: nginx}]}\n",
        ["noname.yaml: doc 1 (Node): metadata.name: Required value: name or generateName is required",
         "noname.yaml: doc 2 (Pod): metadata.name: Required value: name or generateName is required"],
    ),
    "duplicate names": (
        "dup.yaml",
        POD_WEB.replace("namespace: default", "labels: {v: '1'}") + "---\n" + POD_WEB + "---\n"
        + POD_WEB.replace("namespace: default", "namespace: other") + "---\n" + NODE_A + "---\n" + NODE_A,
        ["dup.yaml: doc 2 (Pod default/web): metadata.name: duplicate Pod default/web (also doc 1)",
         "dup.yaml: doc 5 (Node node-a): metadata.name: duplicate Node node-a (also doc 4)"],
    ),
    "wrong types": (
        "types.yaml",
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {unschedulable: 'yes', taints: {key: a}}\n"
        "status: {allocatable: {cpu: [1]}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, labels: {app: 3}}\nspec:\n  priority: high\n  containers: nginx\n",
        ['types.yaml: doc 1 (Node n1): spec.unschedulable: expected a boolean, got string "yes"',
         "types.yaml: doc 1 (Node n1): spec.taints: expected a list, got a map",
         "types.yaml: doc 1 (Node n1): status.allocatable[cpu]: invalid quantity: expected a string or a number, got a list",
         "types.yaml: doc 2 (Pod default/web): metadata.labels.app: cannot unmarshal number into Go struct field "
         "ObjectMeta.metadata.labels of type string",
         'types.yaml: doc 2 (Pod default/web): spec.containers: expected a list, got string "nginx"',
         'types.yaml: doc 2 (Pod default/web): spec.priority: expected an integer, got string "high"'],
    ),
    "bad item in a List": (
        "list.yaml",
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: node-b}\n"
        "- apiVersion: v1\n  kind: Pod\n  metadata: {name: web}\n  spec: {containers: [{name: c, image: i, "
        "resources: {requests: {memory: 1Zi}}}]}\n",
        ['list.yaml: doc 1 (Pod default/web): items[1].spec.containers[0].resources.requests[memory]: '
         'invalid quantity "1Zi"'],
    ),
}

# Hostile YAML and JSON: refused while decoding, with the document, field path and line (issue 9, point 7).
POD_WITH = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  annotations:\n    {}\nspec: {{containers: [{{name: c, image: i}}]}}\n"
ALIAS_BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]"
BAD_INPUTS.update({
    "alias bomb": (
        "bomb.yaml", NODE_A + "---\n" + POD_WITH.format(ALIAS_BOMB),
        ["bomb.yaml: doc 2: metadata.annotations.a: YAML anchors are not allowed (&a) (line 11, column 8)"],
    ),
    "deep nesting": (
        "deep.yaml", NODE_A + "---\n" + POD_WITH.format("a: " + "[" * 5000 + "]" * 5000),
        ["deep.yaml: doc 2: metadata.annotations.a" + "[0]" * 97 + ": nested more than 100 levels deep (line 11, column 105)"],
    ),
    "huge integer": (
        "int.yaml", NODE_A + "---\n" + POD_WITH.format("a: " + "7" * 5000),
        ["int.yaml: doc 2: metadata.annotations.a: integer with more than 4300 digits (line 11, column 8)"],
    ),
    "quantity past any int64": (
        "inf.yaml", NODE_A + "---\n" + POD_WEB.replace("cpu: 500m", "cpu: 1e999999999"),
        ['inf.yaml: doc 2 (Pod default/web): spec.containers[0].resources.requests[cpu]: Invalid value: "1e999999999": too large'],
    ),
    "infinite float": (
        "float.yaml", NODE_A + "---\n" + POD_WEB.replace("spec:\n", "spec:\n  priority: 1.0e+999999999\n"),
        ["float.yaml: doc 2: spec.priority: 1.0e+999999999: not a finite number (JSON has no infinity or NaN) (line 10, column 13)"],
    ),
    "binary and set tags": (
        "tags.yaml", POD_WITH.format("a: !!binary aGVsbG8=") + "---\n" + POD_WITH.format("s: !!set {x, y}"),
        ["tags.yaml: doc 1: metadata.annotations.a: YAML tag !!binary is not allowed: only strings, numbers, booleans, "
         "null, lists and maps (line 6, column 8)",
         "tags.yaml: doc 2: metadata.annotations.s: YAML tag !!set is not allowed: only strings, numbers, booleans, "
         "null, lists and maps (line 14, column 8)"],
    ),
    "duplicate keys": (
        "dupkeys.yaml", NODE_A + "---\n" + POD_WEB.replace("image: nginx", "image: nginx\n    image: evil"),
        ['dupkeys.yaml: doc 2: spec.containers[0]: key "image" already set in map (line 13, column 5)'],
    ),
    "null map key": (
        "nullkey.yaml", POD_WITH.format("~: x"),
        ["nullkey.yaml: doc 1: metadata.annotations: map key null is not a string (line 6, column 5)"],
    ),
    "JSON deep nesting": (
        "hostile.json", '{"apiVersion": "v1", "kind": "List", "items": [' + "[" * 200 + "]" * 200 + "]}",
        ["hostile.json: doc 1: nested more than 100 levels deep (line 1, column 146)"],
    ),
    "scheduler name not a DNS subdomain": (
        "sched.yaml", NODE_A + "---\n" + POD_WEB.replace("spec:\n", "spec:\n  schedulerName: \"=1+1\"\n"),
        ['sched.yaml: doc 2 (Pod default/web): spec.schedulerName: Invalid value: "=1+1": a lowercase RFC 1123 subdomain '
         "must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
         "character (e.g. 'example.com', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"],
    ),
    "annotations not a map": (
        "annot.yaml", NODE_A + "---\n" + POD_WITH.format("").replace("  annotations:\n    \n", "  annotations: 5\n"),
        ["annot.yaml: doc 2 (Pod default/web): metadata.annotations: cannot unmarshal number into Go struct field "
         "ObjectMeta.metadata.annotations of type map[string]string"],
    ),
    "JSON NaN": (
        "nan.json", '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": {"priority": NaN}}',
        ["nan.json: doc 1: spec.priority: NaN: not a finite number (JSON has no infinity or NaN)"],
    ),
    "JSON duplicate key": (
        "dup.json", '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "name": "evil"}}',
        ['dup.json: doc 1: metadata: key "name" already set in map'],
    ),
})


@pytest.mark.parametrize("case", list(BAD_INPUTS), ids=list(BAD_INPUTS))
def test_bad_input_prints_every_problem_exits_1_and_applies_nothing(workdir, case):
    # Something already in the cluster and in the queue, to prove neither moves.
    write(workdir, "before.yaml", POD_WEB.replace("name: web", "name: before"))
    assert cli("apply", "-f", "before.yaml").code == 0
    before_counts, before_queue = counts(), queue_state()
    name, text, lines = BAD_INPUTS[case]
    write(workdir, name, text)
    r = cli("apply", "-f", name)
    assert r.code == 1
    assert r.out == ""
    assert r.err.splitlines() == lines
    assert counts() == before_counts
    assert queue_state() == before_queue
    assert not Node.objects.exists()


def test_a_problem_in_one_file_keeps_the_other_files_out_too(workdir):
    write(workdir, "good.yaml", NODE_A + "---\n" + POD_WEB)
    write(workdir, "bad.yaml", POD_WEB.replace("name: web", "name: bad").replace("cpu: 500m", "cpu: -1"))
    r = cli("apply", "-f", "good.yaml", "-f", "bad.yaml")
    assert r.code == 1
    assert r.err.splitlines()[0].startswith("bad.yaml: doc 1 (Pod default/bad): spec.containers[0].resources.requests[cpu]: ")
    assert counts() == (0, 0, 0)
    assert not any(queues.get_queue().lengths().values()) and queues.get_queue().keys() == set()


def test_changing_the_requests_of_a_scheduled_pod_is_refused_whole(workdir):
    bound = POD_WEB.replace("spec:\n", "spec:\n  nodeName: node-a\n")
    write(workdir, "cluster.yaml", NODE_A + "---\n" + bound)
    cli("apply", "-f", "cluster.yaml")
    write(workdir, "cluster.yaml", NODE_A.replace('"4"', '"8"') + "---\n" + bound.replace("500m", "2"))
    r = cli("apply", "-f", "cluster.yaml")
    assert r.code == 1
    assert r.err.splitlines() == ["cluster.yaml: doc 2 (Pod default/web): spec: Forbidden: pod updates may not change "
                                  "the resources or node of a scheduled pod"]
    node = Node.objects.get(name="node-a")
    assert (node.alloc_cpu, node.req_cpu) == (4000, 500)  # the node's change was rolled back too


POD_A_UID = POD_WEB.replace("name: web, namespace: default", "name: a, namespace: default, uid: u-1")
POD_B_UID = POD_WEB.replace("name: web, namespace: default", "name: b, namespace: shop, uid: u-1")


def test_a_pod_whose_uid_is_another_existing_pods_is_refused_whole(workdir):
    write(workdir, "a.yaml", POD_A_UID)
    assert cli("apply", "-f", "a.yaml").code == 0
    before_counts, before_queue = counts(), queue_state()
    write(workdir, "b.yaml", NODE_A + "---\n" + POD_B_UID)
    r = cli("apply", "-f", "b.yaml")
    assert (r.code, r.out) == (1, "")
    assert r.err.splitlines() == [
        'b.yaml: doc 2 (Pod shop/b): metadata.uid: Duplicate value: "u-1": already the uid of Pod default/a',
    ]
    assert counts() == before_counts and queue_state() == before_queue  # the node in the same file is not applied
    assert list(Pod.objects.values_list("namespace", "name", "uid")) == [("default", "a", "u-1")]


def test_two_new_pods_with_one_uid_in_one_apply_are_refused_whole(workdir):
    write(workdir, "a.yaml", POD_A_UID)
    write(workdir, "b.yaml", POD_B_UID)
    r = cli("apply", "-f", "a.yaml", "-f", "b.yaml")
    assert r.code == 1
    assert r.err.splitlines()[0] == 'b.yaml: doc 1 (Pod shop/b): metadata.uid: Duplicate value: "u-1": already the uid of Pod default/a'
    assert counts() == (0, 0, 0)


def test_two_new_pods_with_one_uid_reaching_the_service_together_are_refused_whole():
    from scheduler.manifests.errors import ManifestError
    from scheduler.manifests.files import parse_documents
    from scheduler.cluster.services import cluster_apply

    # Parsed apart (so the parser's own check cannot see both), applied in one call.
    objects = parse_documents(POD_A_UID, "a.yaml") + parse_documents(POD_B_UID, "b.yaml")
    with pytest.raises(ManifestError) as info:
        cluster_apply(objects)
    assert [str(p) for p in info.value.problems] == [
        'b.yaml: doc 1 (Pod shop/b): metadata.uid: Duplicate value: "u-1": already the uid of Pod default/a']
    assert counts() == (0, 0, 0)


def test_a_pod_committed_with_the_same_uid_by_a_concurrent_apply_is_refused_as_a_duplicate(monkeypatch):
    """Two applies look at the uids at once, neither sees the other's pod: the database refuses the second
    insert (the uid is unique), and that apply looks again and reports the duplicate like any other."""
    from scheduler.cluster import services
    from scheduler.manifests.errors import ManifestError
    from scheduler.manifests.files import parse_documents

    services.cluster_apply(parse_documents(POD_A_UID, "a.yaml"))
    looks = []
    real = services._uid_owners

    def stale_first_look(uids):  # the first look predates the other apply's commit
        looks.append(uids)
        return {} if len(looks) == 1 else real(uids)

    monkeypatch.setattr(services, "_uid_owners", stale_first_look)
    with pytest.raises(ManifestError) as info:
        services.cluster_apply(parse_documents(POD_B_UID, "b.yaml"))
    assert [str(p) for p in info.value.problems] == [
        'b.yaml: doc 1 (Pod shop/b): metadata.uid: Duplicate value: "u-1": already the uid of Pod default/a']
    assert len(looks) == 2
    assert list(Pod.objects.values_list("namespace", "name")) == [("default", "a")]


def test_reapplying_a_pod_with_another_uid_is_refused_as_the_api_server_does(workdir):
    write(workdir, "a.yaml", POD_A_UID)
    assert cli("apply", "-f", "a.yaml").code == 0
    write(workdir, "a.yaml", POD_A_UID.replace("uid: u-1", "uid: u-2"))
    r = cli("apply", "-f", "a.yaml")
    assert r.code == 1
    assert r.err.splitlines()[0] == 'a.yaml: doc 1 (Pod default/a): metadata.uid: Invalid value: "u-2": field is immutable'
    assert Pod.objects.get(name="a").uid == "u-1"
    assert cli("apply", "-f", "-", stdin=POD_A_UID.replace(", uid: u-1", "")).out == "pod/a unchanged\n"


# ---- delete -------------------------------------------------------------------------------------

def test_delete_pod_and_node_and_not_found(workdir):
    bound = POD_WEB.replace("spec:\n", "spec:\n  nodeName: node-a\n")
    write(workdir, "cluster.yaml", NODE_A + "---\n" + bound + "---\n" + POD_WEB.replace("name: web", "name: queued"))
    cli("apply", "-f", "cluster.yaml")
    assert queues.get_queue().get("default/queued") is not None

    r = cli("delete", "pod", "default/web")
    assert (r.code, r.out, r.err) == (0, 'pod "web" deleted from default namespace\n', "")
    assert Node.objects.get(name="node-a").req_cpu == 0  # its room is given back

    r = cli("delete", "pod", "queued", "-n", "default")
    assert (r.code, r.out) == (0, 'pod "queued" deleted from default namespace\n')
    assert queues.get_queue().get("default/queued") is None  # and it left the queue

    r = cli("delete", "pod", "default/web", "shop/gone")
    assert (r.code, r.out) == (1, "")
    assert r.err == 'Error from server (NotFound): pods "web" not found\nError from server (NotFound): pods "gone" not found\n'

    r = cli("delete", "node", "node-a", "node-z")
    assert (r.code, r.out, r.err) == (1, 'node "node-a" deleted\n', 'Error from server (NotFound): nodes "node-z" not found\n')
    assert not Node.objects.exists()


# ---- the real command line --------------------------------------------------------------------------

def test_through_manage_py_exit_codes_and_text(workdir):
    write(workdir, "cluster.yaml", NODE_A + "---\n" + POD_WEB)
    r = manage("apply", "-f", "cluster.yaml", cwd=workdir)
    assert (r.code, r.out, r.err) == (0, "node/node-a created\npod/web created\n", ""), r
    # The other process queued the pod in the shared Redis queue.
    assert queues.get_queue().get("default/web").queue == "active"

    r = manage("apply", "-f", "-", stdin=POD_WEB, cwd=workdir)
    assert (r.code, r.out) == (0, "pod/web unchanged\n"), r

    write(workdir, "pods.yaml", POD_WEB.replace("name: web", "name: api") + "---\n"
          + POD_WEB.replace("cpu: 500m", "cpu: abc"))
    r = manage("apply", "-f", "pods.yaml", cwd=workdir)
    assert r.code == 1, r
    assert r.out == ""
    assert r.err == ('pods.yaml: doc 2 (Pod default/web): spec.containers[0].resources.requests[cpu]: invalid quantity "abc"\n'
                     "error: 1 problem found; nothing was applied\n")
    assert not Pod.objects.filter(name="api").exists()

    r = manage("delete", "pod", "default/web", cwd=workdir)
    assert (r.code, r.out, r.err) == (0, 'pod "web" deleted from default namespace\n', ""), r
    r = manage("delete", "pod", "default/web", cwd=workdir)
    assert (r.code, r.out, r.err) == (1, "", 'Error from server (NotFound): pods "web" not found\n'), r
    r = manage("delete", "node", "nope", cwd=workdir)
    assert (r.code, r.err) == (1, 'Error from server (NotFound): nodes "nope" not found\n'), r


def test_an_alias_bomb_through_manage_py_is_one_line_exit_1_and_no_traceback(workdir):
    write(workdir, "before.yaml", NODE_A)
    assert manage("apply", "-f", "before.yaml", cwd=workdir).code == 0
    before = counts()
    # 512 bytes that expand to 9**10 strings: refused at the first anchor, before anything is built.
    bomb = POD_WITH.format("a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"    {c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefghi", "bcdefghij")).rstrip())
    assert len(bomb) <= 512
    write(workdir, "bomb.yaml", POD_WEB + "---\n" + bomb)
    r = manage("apply", "-f", "bomb.yaml", cwd=workdir)
    assert (r.code, r.out) == (1, ""), r
    assert r.err == ("bomb.yaml: doc 2: metadata.annotations.a: YAML anchors are not allowed (&a) (line 15, column 8)\n"
                     "error: 1 problem found; nothing was applied\n")
    assert counts() == before and not Pod.objects.exists()
