"""PriorityClass and PodDisruptionBudget through `apply`, `get` and `delete` as kubectl prints them; Priority
admission at apply (a pod's class resolved, globalDefault, an unknown class refused); bad documents refused
with the API server's words, nothing applied; a budget's status as the disruption controller computes it;
and `explain --cluster` files holding both."""

import json

import pytest

from scheduler.models import ClusterObject, Pod
from scheduler.testing.cli import cli, write

pytestmark = pytest.mark.django_db(transaction=True)

CLASSES = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
description: the shop's front
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch}
value: -10
globalDefault: true
preemptionPolicy: Never
"""

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: node-a}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "10"}}
"""


def pod(name, extra="", labels="{app: db}"):
    return f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, labels: {labels}}}
spec:
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: 100m}}}}}}]{extra}
"""


def test_priority_classes_apply_get_and_delete_as_kubectl(tmp_path):
    r = cli("apply", "-f", str(tmp_path / write(tmp_path, "pc.yaml", CLASSES)))
    assert r.out == "priorityclass.scheduling.k8s.io/high created\npriorityclass.scheduling.k8s.io/batch created\n", r
    out = cli("get", "priorityclasses").out.splitlines()
    assert out[0].split() == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    # With the two classes every API server creates at start.
    assert [line.split()[:3] + line.split()[4:] for line in out[1:]] == [
        ["batch", "-10", "true", "Never"], ["high", "1000", "false", "PreemptLowerPriority"],
        ["system-cluster-critical", "2000000000", "false", "PreemptLowerPriority"],
        ["system-node-critical", "2000001000", "false", "PreemptLowerPriority"]]
    got = json.loads(cli("get", "pc", "high", "-o", "json").out)
    assert (got["kind"], got["value"], got["preemptionPolicy"]) == ("PriorityClass", 1000, "PreemptLowerPriority")
    assert cli("delete", "pc", "high").out == 'priorityclass.scheduling.k8s.io "high" deleted\n'
    assert not ClusterObject.objects.filter(kind="PriorityClass", name="high").exists()


def test_a_pods_class_resolves_its_priority_and_policy_and_the_global_default_applies_to_the_rest(tmp_path):
    cli("apply", "-f", str(tmp_path / write(tmp_path, "pc.yaml", CLASSES)))
    r = cli("apply", "-f", str(tmp_path / write(tmp_path, "pods.yaml",
                                                pod("front", "\n  priorityClassName: high") + pod("job"))))
    assert r.code == 0, r
    front, job = Pod.objects.get(name="front"), Pod.objects.get(name="job")
    assert (front.priority, front.manifest["spec"]["preemptionPolicy"]) == (1000, "PreemptLowerPriority")
    assert (job.priority, job.manifest["spec"]["priorityClassName"], job.manifest["spec"]["preemptionPolicy"]) == (
        -10, "batch", "Never")
    # Applied again as written: unchanged (what admission set at creation stays).
    assert cli("apply", "-f", str(tmp_path / "pods.yaml")).out == "pod/front unchanged\npod/job unchanged\n"


@pytest.mark.parametrize("docs, problem", [
    (pod("p", "\n  priorityClassName: gold"),
     "pods.yaml: doc 1 (Pod default/p): spec.priorityClassName: no PriorityClass with name gold was found"),
    (pod("p", "\n  priorityClassName: high\n  priority: 5"),
     "pods.yaml: doc 1 (Pod default/p): spec.priority: the integer value of priority (5) must not be provided in pod "
     "spec; priority admission controller computed 1000 from the given PriorityClass name"),
    (pod("p", "\n  priorityClassName: high\n  preemptionPolicy: Never"),
     "pods.yaml: doc 1 (Pod default/p): spec.preemptionPolicy: the string value of PreemptionPolicy (Never) must "
     "not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given "
     "PriorityClass name"),
    ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: huge}\nvalue: 1000000001\n",
     "pods.yaml: doc 1 (PriorityClass huge): value: Forbidden: maximum allowed value of a user defined priority "
     "is 1000000000"),
    ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-mine}\nvalue: 1\n",
     "pods.yaml: doc 1 (PriorityClass system-mine): metadata.name: Forbidden: priority class names with 'system-' "
     "prefix are reserved for system use only. error: system-mine is not a known system priority class"),
    ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-node-critical}\nvalue: 5\n",
     "pods.yaml: doc 1 (PriorityClass system-node-critical): metadata.name: Forbidden: priority class names with "
     "'system-' prefix are reserved for system use only. error: value of system-node-critical PriorityClass must be "
     "2000001000"),
    (pod("p", "\n  priority: 5"),
     "pods.yaml: doc 1 (Pod default/p): spec.priority: the integer value of priority (5) must not be provided in pod "
     "spec; priority admission controller computed 0 from the given PriorityClass name"),
    (pod("p", "\n  preemptionPolicy: Never"),
     "pods.yaml: doc 1 (Pod default/p): spec.preemptionPolicy: the string value of PreemptionPolicy (Never) must "
     "not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given "
     "PriorityClass name"),
    ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: odd}\nvalue: 1\npreemptionPolicy: Sometimes\n",
     'pods.yaml: doc 1 (PriorityClass odd): preemptionPolicy: Unsupported value: "Sometimes": supported values: '
     '"PreemptLowerPriority", "Never"'),
    ("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db}\n"
     "spec: {minAvailable: 1, maxUnavailable: 1, selector: {matchLabels: {app: db}}}\n",
     'pods.yaml: doc 1 (PodDisruptionBudget default/db): spec: Invalid value: {"maxUnavailable":1,"minAvailable":1,'
     '"selector":{"matchLabels":{"app":"db"}}}: minAvailable and maxUnavailable cannot be both set'),
    ("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db}\nspec: {minAvailable: 120%}\n",
     'pods.yaml: doc 1 (PodDisruptionBudget default/db): spec.minAvailable: Invalid value: "120%": must not be '
     "greater than 100%"),
    ("apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: db}\nspec: {minAvailable: 1}\n",
     'pods.yaml: doc 1 (PodDisruptionBudget default/db): apiVersion: unsupported apiVersion "policy/v1beta1" for '
     "PodDisruptionBudget (only policy/v1)"),
])
def test_bad_documents_are_refused_with_the_api_servers_words_and_nothing_is_applied(tmp_path, docs, problem):
    cli("apply", "-f", str(tmp_path / write(tmp_path, "pc.yaml", CLASSES.split("---")[0])))
    before = (Pod.objects.count(), ClusterObject.objects.count())
    r = cli("apply", "-f", str(tmp_path / write(tmp_path, "pods.yaml", docs)))
    assert r.code == 1 and r.err.splitlines()[0] == problem.replace("pods.yaml", str(tmp_path / "pods.yaml")), r
    assert (Pod.objects.count(), ClusterObject.objects.count()) == before


def test_a_pod_naming_no_class_with_no_global_default_gets_priority_zero_as_admission_computes_it(tmp_path):
    cli("apply", "-f", str(tmp_path / write(tmp_path, "pc.yaml", CLASSES.split("---")[0])))
    assert cli("apply", "-f", str(tmp_path / write(tmp_path, "pods.yaml", pod("job") + pod("zero", "\n  priority: 0")))).code == 0
    for name in ("job", "zero"):
        p = Pod.objects.get(name=name)
        assert (p.priority, p.manifest["spec"]["priority"], p.manifest["spec"]["preemptionPolicy"]) == (
            0, 0, "PreemptLowerPriority")
        assert "priorityClassName" not in p.manifest["spec"]  # no class to name, as the plugin leaves it


def test_the_system_classes_are_there_in_every_namespace_and_cannot_be_deleted(tmp_path):
    r = cli("apply", "-f", str(tmp_path / write(tmp_path, "pods.yaml", pod("agent", "\n  priorityClassName: system-node-critical")
                                                 + pod("dns", "\n  priorityClassName: system-cluster-critical"))))
    assert r.code == 0, r  # in "default": master's admission has no namespace rule for them
    assert Pod.objects.get(name="agent").priority == 2000001000 and Pod.objects.get(name="dns").priority == 2000000000
    got = json.loads(cli("get", "pc", "system-node-critical", "-o", "json").out)
    assert (got["value"], got["description"]) == (
        2000001000, "Used for system critical pods that must not be moved from their current node.")
    r = cli("delete", "pc", "system-node-critical")
    assert r.code == 1 and r.err == ('Error from server (Forbidden): priorityclasses.scheduling.k8s.io '
                                     '"system-node-critical" is forbidden: this is a system priority class and cannot '
                                     'be deleted\n'), r
    assert ClusterObject.objects.filter(kind="PriorityClass", name="system-node-critical").exists()


def test_a_second_global_default_class_is_refused():
    import tempfile
    from pathlib import Path

    d = Path(tempfile.mkdtemp())
    cli("apply", "-f", str(d / write(d, "pc.yaml", CLASSES)))
    r = cli("apply", "-f", str(d / write(d, "more.yaml", "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                                                         "metadata: {name: other}\nvalue: 1\nglobalDefault: true\n")))
    assert r.code == 1 and r.err.splitlines()[0].endswith(
        "globalDefault: Forbidden: PriorityClass batch is already marked as default. Only one default can exist"), r
    assert not ClusterObject.objects.filter(name="other").exists()


def test_a_budgets_status_follows_its_pods_and_get_pdb_prints_it_as_kubectl(tmp_path):
    budget = ("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db}\n"
              "spec: {minAvailable: 1, selector: {matchLabels: {app: db}}}\n")
    cli("apply", "-f", str(tmp_path / write(tmp_path, "all.yaml", NODE + "---\n" + budget
                                            + pod("db-0", "\n  nodeName: node-a") + pod("db-1", "\n  nodeName: node-a")
                                            + pod("db-2"))))
    out = cli("get", "pdb").out.splitlines()
    assert out[0].split() == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]
    assert out[1].split()[:4] == ["db", "1", "N/A", "1"]  # 2 running (db-2 is pending), 1 must stay
    status = json.loads(cli("get", "pdb", "db", "-o", "json").out)["status"]
    assert status == {"observedGeneration": 1, "expectedPods": 3, "desiredHealthy": 1, "currentHealthy": 2,
                      "disruptionsAllowed": 1, "disruptedPods": {}}
    cli("delete", "pod", "db-0")
    assert cli("get", "pdb", "-A").out.splitlines()[1].split()[:5] == ["default", "db", "1", "N/A", "0"]
    assert cli("delete", "pdb", "db").out == 'poddisruptionbudget.policy "db" deleted from default namespace\n'


def test_explain_cluster_files_hold_classes_and_budgets(tmp_path):
    cluster = (CLASSES.split("---")[0] + "---\n" + NODE.replace('cpu: "8"', 'cpu: "1"')
               + "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db}\n"
                 "spec: {minAvailable: 1, selector: {matchLabels: {app: db}}}\n"
               + pod("db-0", "\n  nodeName: node-a").replace("100m", "900m"))
    write(tmp_path, "cluster.yaml", cluster)
    write(tmp_path, "pod.yaml", pod("vip", "\n  priorityClassName: high", labels="{}").lstrip("-\n").replace("100m", "500m"))
    r = cli("explain", "--cluster", str(tmp_path / "cluster.yaml"), "--pod", str(tmp_path / "pod.yaml"), "--preempt")
    assert r.code == 0, r
    out = json.loads(r.out)
    # The only victim violates its budget (disruptionsAllowed 0): still taken, as upstream, but counted.
    assert out["nominated"] == "node-a" and out["victims"] == ["default/db-0"]
    assert out["preemption"]["candidates"] == [{"node": "node-a", "victims": ["default/db-0"], "pdb_violations": 1}]
    write(tmp_path, "pod.yaml", pod("vip", "\n  priorityClassName: gold", labels="{}").lstrip("-\n"))
    r = cli("explain", "--cluster", str(tmp_path / "cluster.yaml"), "--pod", str(tmp_path / "pod.yaml"))
    assert r.code == 1 and "spec.priorityClassName: no PriorityClass with name gold was found" in r.err, r


def test_a_classes_value_and_policy_cannot_change(tmp_path):
    cli("apply", "-f", str(tmp_path / write(tmp_path, "pc.yaml", CLASSES)))
    r = cli("apply", "-f", str(tmp_path / write(tmp_path, "pc2.yaml", CLASSES.replace("value: 1000", "value: 2000"))))
    assert r.code == 1 and r.err.splitlines()[0].endswith(
        "(PriorityClass high): value: Forbidden: may not be changed in an update."), r
    r = cli("apply", "-f", str(tmp_path / write(tmp_path, "pc3.yaml", CLASSES.replace("preemptionPolicy: Never", ""))))
    assert r.code == 1 and r.err.splitlines()[0].endswith(
        '(PriorityClass batch): preemptionPolicy: Invalid value: "PreemptLowerPriority": field is immutable'), r
    r = cli("apply", "-f", str(tmp_path / write(tmp_path, "pc4.yaml", CLASSES.replace("the shop's front", "the front"))))
    assert r.code == 0 and r.out == ("priorityclass.scheduling.k8s.io/high configured\n"
                                     "priorityclass.scheduling.k8s.io/batch unchanged\n"), r


def test_a_budget_by_max_unavailable_expects_its_controllers_scale(clock):
    from scheduler.controllers import workloads
    from scheduler.testing.loop import apply, drain, node

    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default"},
          "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
              "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}
    apply(node("node-a"), rs, budget)
    workloads.sync_all()
    drain(clock)
    status = json.loads(cli("get", "pdb", "web", "-o", "json").out)["status"]
    assert (status["expectedPods"], status["desiredHealthy"], status["currentHealthy"], status["disruptionsAllowed"]) == (
        3, 2, 3, 1)
