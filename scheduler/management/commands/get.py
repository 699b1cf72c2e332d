"""`manage.py get pods|nodes|events|KIND [NAME ...] [-n NS | -A] [-o wide|json|yaml]`, as kubectl get prints them
(KIND: the cluster objects, priorityclasses and poddisruptionbudgets included)."""

from django.utils import timezone

from scheduler.kubectl import printers as kubectl
from scheduler.models import Event, Node, Pod
from scheduler.kubectl.objects import CLUSTER_SCOPED, RESOURCES, objects_table
from scheduler.models import POD_DISRUPTION_BUDGET, ClusterObject
from scheduler.state.budgets import with_status

# As kubectl's resource names and short names.
KINDS = {"pod": "pods", "pods": "pods", "po": "pods", "node": "nodes", "nodes": "nodes", "no": "nodes",
         "event": "events", "events": "events", "ev": "events"}


class Command(kubectl.KubectlCommand):
    help = "Print pods, nodes or events of the cluster, like kubectl get."

    def add_arguments(self, parser):
        parser.add_argument("kind", help="pods, nodes or events")
        parser.add_argument("names", nargs="*", help="only these objects")
        parser.add_argument("-n", "--namespace", default="default")
        parser.add_argument("-A", "--all-namespaces", action="store_true")
        parser.add_argument("-o", "--output", choices=["wide", "json", "yaml"], default=None)

    def handle(self, *args, kind, names, namespace, all_namespaces, output, **options):
        what = KINDS.get(kind.lower())
        if what is None and kind.lower() in RESOURCES:
            return self._objects(kind.lower(), names, namespace, all_namespaces, output)
        if what is None:
            raise kubectl.KubectlError(f'the server doesn\'t have a resource type "{kind}"')
        if names and all_namespaces:
            # As kubectl: a name is looked up in one namespace.
            raise kubectl.KubectlError("a resource cannot be retrieved by name across all namespaces")
        now = timezone.now()
        wide = output == "wide"
        if what == "pods":
            objs = Pod.objects.all() if all_namespaces else Pod.objects.filter(namespace=namespace)
            objs = list(objs.filter(name__in=names) if names else objs)
            objs = self._in_order(objs, names)
            if output in ("json", "yaml"):
                self._json([kubectl.pod_object(p) for p in objs], names, output)
            elif objs:
                self.stdout.write(kubectl.pods_table(objs, all_namespaces=all_namespaces, wide=wide, now=now))
        elif what == "nodes":
            objs = list(Node.objects.filter(name__in=names) if names else Node.objects.all())
            objs = self._in_order(objs, names)
            if output in ("json", "yaml"):
                self._json([kubectl.node_object(n) for n in objs], names, output)
            elif objs:
                self.stdout.write(kubectl.nodes_table(objs, wide=wide, now=now))
        else:
            objs = Event.objects.all()
            if not all_namespaces:
                objs = objs.filter(involved_namespace__in=[namespace, ""] if namespace == "default" else [namespace])
            objs = self._in_order(list(objs.order_by("last_timestamp", "id")), names)
            if output in ("json", "yaml"):
                self._json([kubectl.event_object(e) for e in objs], names, output)
            elif objs:
                self.stdout.write(kubectl.events_table(objs, all_namespaces=all_namespaces, wide=wide, now=now))
        missing = [n for n in dict.fromkeys(names) if n not in {_name(o) for o in objs}]
        for name in missing:
            # As kubectl: found objects are printed, then one NotFound line per missing name; exit 1.
            self.stderr.write(f'Error from server (NotFound): {what} "{name}" not found')
        if missing:
            raise kubectl.KubectlError()
        if not objs and not names and output not in ("json", "yaml"):
            where = "" if all_namespaces or what == "nodes" else f" in {namespace} namespace"
            self.stderr.write(f"No resources found{where}.")

    def _objects(self, resource, names, namespace, all_namespaces, output):
        """Namespaces, Services, ReplicaSets, StatefulSets, ReplicationControllers."""
        object_kind, plural = RESOURCES[resource]
        namespaced = object_kind not in CLUSTER_SCOPED
        objs = ClusterObject.objects.filter(kind=object_kind)
        if namespaced and not all_namespaces:
            objs = objs.filter(namespace=namespace)
        objs = list(objs.filter(name__in=names) if names else objs.order_by("namespace", "name"))
        objs = self._in_order(objs, names)
        if object_kind == POD_DISRUPTION_BUDGET:
            for obj, status in with_status(objs):  # as the disruption controller keeps it
                obj.manifest = {**obj.manifest, "status": status}
        if output in ("json", "yaml"):
            self._json([o.manifest for o in objs], names, output)
        elif objs:
            self.stdout.write(objects_table(object_kind, objs, all_namespaces=all_namespaces, wide=output == "wide",
                                            now=timezone.now()))
        missing = [n for n in dict.fromkeys(names) if n not in {o.name for o in objs}]
        for name in missing:
            self.stderr.write(f'Error from server (NotFound): {plural} "{name}" not found')
        if missing:
            raise kubectl.KubectlError()
        if not objs and not names and output not in ("json", "yaml"):
            where = f" in {namespace} namespace" if namespaced and not all_namespaces else ""
            self.stderr.write(f"No resources found{where}.")

    @staticmethod
    def _in_order(objs, names):
        if not names:
            return objs
        by_name = {_name(o): o for o in objs}
        return [by_name[n] for n in dict.fromkeys(names) if n in by_name]

    def _json(self, items, names, output="json"):
        # As kubectl: one object asked for by name prints as itself; anything else as a v1 List.
        obj = items[0] if len(names) == 1 and len(items) == 1 else kubectl.v1_list(items)
        if output == "yaml":
            self.stdout.write(kubectl.go_yaml(obj), ending="")
        else:
            self.stdout.write(kubectl.go_json(obj))


def _name(obj) -> str:
    return kubectl.event_name(obj) if isinstance(obj, Event) else obj.name
