"""Namespaces, Services, ReplicaSets, StatefulSets and ReplicationControllers through `apply`, `get` and
`delete`, as kubectl prints them; bad documents refused with the API server's words; a pod's topology
fields decoded and validated; and what the API server rewrites at creation (matchLabelKeys)."""

import pytest

from scheduler.manifests.errors import ManifestError
from scheduler.manifests.files import parse_documents
from scheduler.models import ClusterObject, Pod
from scheduler.testing.cli import cli

pytestmark = pytest.mark.django_db(transaction=True)

OBJECTS = """\
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {team: web}}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  clusterIP: 10.0.0.10
  ports: [{port: 80, protocol: TCP}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9, namespace: shop, uid: 1b2c}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: "nginx:1.27"}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  replicas: 2
  selector: {matchExpressions: [{key: app, operator: In, values: [db]}]}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: pg, image: "postgres:17"}]}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy, namespace: shop}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: legacy}}
    spec: {containers: [{name: app, image: "app:1"}]}
"""

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
  labels: {app: web, pod-template-hash: 7d9}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-7d9, uid: 1b2c, controller: true}]
spec:
  nodeName: node-a
  containers: [{name: nginx, image: "nginx:1.27"}]
"""

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: node-a}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


def apply_text(tmp_path, text, name="objects.yaml"):
    (tmp_path / name).write_text(text)
    return cli("apply", "-f", str(tmp_path / name))


def test_apply_stores_each_kind_with_what_the_scheduler_reads_and_says_it_as_kubectl(tmp_path):
    result = apply_text(tmp_path, OBJECTS)
    assert result.code == 0, result.err
    assert result.out.splitlines() == ["namespace/shop created", "service/web created", "replicaset.apps/web-7d9 created",
                                       "statefulset.apps/db created", "replicationcontroller/legacy created"]
    rows = {o.kind: o for o in ClusterObject.objects.all()}
    assert rows["Namespace"].labels == {"team": "web"} and rows["Namespace"].namespace == ""
    assert rows["Service"].selector == {"app": "web"}
    assert rows["ReplicaSet"].selector == {"matchLabels": {"app": "web"}} and rows["ReplicaSet"].replicas == 3
    # As SetDefaults_ReplicationController: no selector means the template's labels.
    assert rows["ReplicationController"].selector == {"app": "legacy"}
    assert apply_text(tmp_path, OBJECTS).out.splitlines()[0] == "namespace/shop unchanged"


def test_get_prints_the_objects_as_kubectl_does(tmp_path):
    apply_text(tmp_path, NODE + "---\n" + OBJECTS + "---\n" + POD)
    # The counts are the controllers' status: one pass of theirs writes what they found (the RS's bound pod).
    from scheduler.controllers import workloads

    workloads.sync_all()
    out = cli("get", "rs", "-n", "shop", "-o", "wide").out.splitlines()
    assert out[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert out[1].split()[:4] == ["web-7d9", "3", "1", "1"] and out[1].split()[-3:] == ["nginx", "nginx:1.27", "app=web"]
    assert cli("get", "sts", "-n", "shop").out.splitlines()[1].split()[:2] == ["db", "0/2"]
    svc = cli("get", "svc", "-A", "-o", "wide").out.splitlines()
    assert svc[0].split() == ["NAMESPACE", "NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    assert svc[1].split()[:6] == ["shop", "web", "ClusterIP", "10.0.0.10", "<none>", "80/TCP"]
    assert cli("get", "ns").out.splitlines()[1].split()[:2] == ["shop", "Active"]
    missing = cli("get", "rc", "nope", "-n", "shop")
    assert missing.code == 1 and missing.err.strip() == 'Error from server (NotFound): replicationcontrollers "nope" not found'


def test_delete_removes_an_object_and_reports_a_missing_one_as_kubectl(tmp_path):
    apply_text(tmp_path, OBJECTS)
    assert cli("delete", "svc", "web", "-n", "shop").out.strip() == 'service "web" deleted from shop namespace'
    assert cli("delete", "ns", "shop").out.strip() == 'namespace "shop" deleted'
    gone = cli("delete", "sts", "nope", "-n", "shop")
    assert gone.code == 1 and gone.err.strip() == 'Error from server (NotFound): statefulsets.apps "nope" not found'
    assert set(ClusterObject.objects.exclude(kind="PriorityClass").values_list("kind", flat=True)) == {
        "ReplicaSet", "StatefulSet", "ReplicationController"}  # (the system PriorityClasses are cluster-wide)


def problems(text):
    with pytest.raises(ManifestError) as info:
        parse_documents(text, "bad.yaml")
    return [(p.path, p.message) for p in info.value.problems]


def test_bad_controllers_are_refused_with_the_api_servers_words():
    assert problems("""\
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  replicas: -1
  selector: {matchLabels: {app: web}}
  template: {metadata: {labels: {app: other}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sts}
spec: {selector: {}, template: {metadata: {labels: {app: x}}}}
---
apiVersion: v1
kind: ReplicaSet
metadata: {name: old}
spec: {selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}}}
""") == [
        ("spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
        ("spec.template.metadata.labels", 'Invalid value: {"app":"other"}: `selector` does not match template `labels`'),
        ("spec.selector", "Invalid value: {}: empty selector is invalid for statefulset"),
        ("apiVersion", 'unsupported apiVersion "v1" for ReplicaSet (only apps/v1)'),
    ]


POD_WITH_TERMS = """\
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {app: web, pod-template-hash: abc}}
spec:
  containers: [{name: c, image: nginx}]
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {app: web}}
    matchLabelKeys: [pod-template-hash]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector: {matchLabels: {app: web}}
        mismatchLabelKeys: [pod-template-hash]
    podAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector: {matchLabels: {app: cache}}
          namespaceSelector: {}
"""


def test_a_pods_terms_are_decoded_and_the_label_keys_merged_as_the_api_server_does_at_creation():
    [parsed] = parse_documents(POD_WITH_TERMS, "pod.yaml")
    spec, manifest = parsed.spec, parsed.manifest
    [c] = spec.topology_spread_constraints
    assert [(r.key, r.operator, r.values) for r in c.label_selector.match_expressions] == [
        ("pod-template-hash", "In", ("abc",))]
    [anti] = spec.pod_anti_affinity.required
    assert [(r.key, r.operator, r.values) for r in anti.label_selector.match_expressions] == [
        ("pod-template-hash", "NotIn", ("abc",))]
    [pref] = spec.pod_affinity.preferred
    assert pref.weight == 10 and pref.term.namespace_selector is not None and pref.term.namespace_selector.match_labels == ()
    # The stored manifest says the same, so a worker that reads it back sees what the API server would hold.
    stored = manifest["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"]
    assert stored == [{"key": "pod-template-hash", "operator": "In", "values": ["abc"]}]
    from scheduler.manifests.objects import pod_from_manifest

    again = pod_from_manifest(manifest)
    assert again.topology_spread_constraints == spec.topology_spread_constraints


def test_a_match_label_key_the_selector_names_too_is_refused_once_merged():
    # The pod has the label, so the API server's merge adds `app In (web)` beside matchLabels' app.
    assert problems(POD_WITH_TERMS.replace("matchLabelKeys: [pod-template-hash]", "matchLabelKeys: [app]")) == [
        ("spec.topologySpreadConstraints[0][0]",
         'Invalid value: "app": exists in both matchLabelKeys and labelSelector')]


@pytest.mark.parametrize(("kind", "path"), [
    # Upstream indexes the term's own path (validateMatchLabelKeysAndMismatchLabelKeys' fldPath.Index(i)), as its
    # test "invalid soft pod affinity, key exists in both matchLabelKeys and labelSelector" expects.
    ("requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: zone, labelSelector: {matchLabels: {app: x}}, "
     "matchLabelKeys: [tier, app]}]",
     "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0][1]"),
    ("preferredDuringSchedulingIgnoredDuringExecution: [{weight: 10, podAffinityTerm: {topologyKey: zone, "
     "labelSelector: {matchLabels: {app: x}}, matchLabelKeys: [app]}}]",
     "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm[0]"),
])
def test_an_affinity_terms_match_label_key_in_its_selector_too_is_refused_at_upstreams_path(kind, path):
    assert problems(f"""\
apiVersion: v1
kind: Pod
metadata: {{name: p, labels: {{app: web, tier: front}}}}
spec:
  containers: [{{name: c, image: nginx}}]
  affinity:
    podAffinity:
      {kind}
""") == [(path, 'Invalid value: "app": exists in both matchLabelKeys and labelSelector')]


def test_bad_pod_terms_are_refused_with_the_api_servers_words_and_paths():
    assert problems("""\
apiVersion: v1
kind: Pod
metadata:
  name: p
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: "", uid: ""}]
spec:
  containers: [{name: c, image: nginx}]
  topologySpreadConstraints:
  - {maxSkew: 0, topologyKey: "", whenUnsatisfiable: Sometimes, minDomains: 2}
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, matchLabelKeys: [app]}
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Maybe}
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: ""
        labelSelector: {matchExpressions: [{key: app, operator: In}]}
        namespaces: [Bad_NS]
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 101
        podAffinityTerm: {topologyKey: zone, labelSelector: {matchLabels: {app: x}}, matchLabelKeys: [app]}
""") == [
        ("metadata.ownerReferences[0].name", 'Invalid value: "": name must not be empty'),
        ("metadata.ownerReferences[0].uid", 'Invalid value: "": uid must not be empty'),
        ("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector"
         ".matchExpressions[0].values", "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        ("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespace",
         'Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '
         "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
         "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
        ("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
         "Required value: can not be empty"),
        # As upstream: ValidateLabelName runs on the empty key too.
        ("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
         'Invalid value: "": name part must be non-empty'),
        ("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
         "Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
         "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
         "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        ("spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
         "Invalid value: 101: must be in the range 1-100"),
        ("spec.topologySpreadConstraints[0].maxSkew", "Invalid value: 0: must be greater than zero"),
        ("spec.topologySpreadConstraints[0].topologyKey", "Required value: can not be empty"),
        ("spec.topologySpreadConstraints[0].whenUnsatisfiable",
         'Unsupported value: "Sometimes": supported values: "DoNotSchedule", "ScheduleAnyway"'),
        ("spec.topologySpreadConstraints[0].minDomains",
         "Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not Sometimes"),
        ("spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}",
         'Duplicate value: "{zone, DoNotSchedule}"'),
        ("spec.topologySpreadConstraints[1].matchLabelKeys", "Forbidden: must not be specified when labelSelector is not set"),
        ("spec.topologySpreadConstraints[2].nodeTaintsPolicy",
         'Unsupported value: "Maybe": supported values: "Honor", "Ignore"'),
    ]
