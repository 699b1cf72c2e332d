"""`manage.py delete pod NS/NAME` (or NAME with -n), `delete node NAME`, and the Namespaces, Services,
ReplicaSets, StatefulSets, ReplicationControllers and Deployments (with their dependents, as kubectl's
default background propagation has the garbage collector do)."""

from scheduler.kubectl.printers import KubectlCommand, KubectlError
from scheduler.cluster.objects import ObjectForbidden
from scheduler.cluster.services import node_delete, pod_delete
from scheduler.controllers.garbage import delete_with_dependents

# kubectl's names for the cluster objects: resource -> (kind, plural as kubectl prints it, namespaced)
OBJECTS = {}
for _kind, _plural, _names, _namespaced in (
        ("Namespace", "namespaces", ("namespace", "namespaces", "ns"), False),
        ("Service", "services", ("service", "services", "svc"), True),
        ("ReplicaSet", "replicasets.apps", ("replicaset", "replicasets", "rs"), True),
        ("StatefulSet", "statefulsets.apps", ("statefulset", "statefulsets", "sts"), True),
        ("Deployment", "deployments.apps", ("deployment", "deployments", "deploy"), True),
        ("ReplicationController", "replicationcontrollers", ("replicationcontroller", "replicationcontrollers", "rc"),
         True)):
    for _name in _names:
        OBJECTS[_name] = (_kind, _plural, _namespaced)
# ---- preemption's kinds ----
for _kind, _plural, _names, _namespaced in (
        ("PriorityClass", "priorityclasses.scheduling.k8s.io", ("priorityclass", "priorityclasses", "pc"), False),
        ("PodDisruptionBudget", "poddisruptionbudgets.policy", ("poddisruptionbudget", "poddisruptionbudgets", "pdb"),
         True)):
    for _name in _names:
        OBJECTS[_name] = (_kind, _plural, _namespaced)
# ---- end of preemption's kinds ----


def _singular(plural: str) -> str:
    """As kubectl names the deleted object, kind.group (the core group has none): "deployment.apps",
    "priorityclass.scheduling.k8s.io", "service"."""
    head, dot, group = plural.partition(".")
    one = head[:-2] if head.endswith("sses") else head[:-1]
    return f"{one}.{group}" if dot else one


def _deleted(resource: str, name: str, namespace: str | None) -> str:
    # As kubectl's DeleteOptions.PrintObj since kubernetes#126619 (1.32): a namespaced object names its namespace.
    return f'{resource} "{name}" deleted from {namespace} namespace' if namespace else f'{resource} "{name}" deleted'


class Command(KubectlCommand):
    help = "Delete pods (NS/NAME, or NAME with -n) or nodes from the simulated cluster, like kubectl delete --now."

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=["pod", "pods", "po", "node", "nodes", "no", *OBJECTS])
        parser.add_argument("names", nargs="+")
        parser.add_argument("-n", "--namespace", default="default")

    def handle(self, *args, kind, names, namespace, **options):
        # As kubectl delete: each object in turn; a missing one is reported and the others still go; exit 1.
        missing = False
        for name in names:
            if kind in OBJECTS:
                object_kind, plural, namespaced = OBJECTS[kind]
                ns, _, object_name = name.rpartition("/") if namespaced else ("", "", name)
                resource = _singular(plural)
                try:
                    deleted = delete_with_dependents(kind=object_kind, namespace=ns or namespace, name=object_name)
                except ObjectForbidden as exc:
                    self.stderr.write(f'Error from server (Forbidden): {plural} "{object_name}" is forbidden: {exc}')
                    missing = True
                    continue
                if deleted:
                    self.stdout.write(_deleted(resource, object_name, (ns or namespace) if namespaced else None))
                else:
                    self.stderr.write(f'Error from server (NotFound): {plural} "{object_name}" not found')
                    missing = True
            elif kind.startswith("po"):
                ns, _, pod_name = name.rpartition("/")
                if pod_delete(namespace=ns or namespace, name=pod_name):
                    self.stdout.write(_deleted("pod", pod_name, ns or namespace))
                else:
                    self.stderr.write(f'Error from server (NotFound): pods "{pod_name}" not found')
                    missing = True
            elif node_delete(name=name):
                self.stdout.write(_deleted("node", name, None))
            else:
                self.stderr.write(f'Error from server (NotFound): nodes "{name}" not found')
                missing = True
        if missing:
            raise KubectlError()
