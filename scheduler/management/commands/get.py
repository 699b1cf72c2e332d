"""`manage.py get pods|nodes|events [-n NS | -A] [-o wide|json]`, as kubectl get prints them."""

import json

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from scheduler import kubectl
from scheduler.models import Event, Node, Pod

KINDS = {"pod": "pods", "pods": "pods", "po": "pods", "node": "nodes", "nodes": "nodes", "no": "nodes",
         "event": "events", "events": "events", "ev": "events"}


class Command(BaseCommand):
    help = "Print pods, nodes or events of the cluster, like kubectl get."

    def add_arguments(self, parser):
        parser.add_argument("kind", help="pods, nodes or events")
        parser.add_argument("names", nargs="*", help="only these objects")
        parser.add_argument("-n", "--namespace", default="default")
        parser.add_argument("-A", "--all-namespaces", action="store_true")
        parser.add_argument("-o", "--output", choices=["wide", "json"], default=None)

    def handle(self, *args, kind, names, namespace, all_namespaces, output, **options):
        what = KINDS.get(kind.lower())
        if what is None:
            raise CommandError(f'the server doesn\'t have a resource type "{kind}"', returncode=1)
        now = timezone.now()
        wide = output == "wide"
        if what == "pods":
            objs = Pod.objects.all() if all_namespaces else Pod.objects.filter(namespace=namespace)
            objs = list(objs.filter(name__in=names) if names else objs)
            self._missing("pods", names, {o.name for o in objs})
            if output == "json":
                return self._json([kubectl.pod_object(p) for p in objs])
            text = kubectl.pods_table(objs, all_namespaces=all_namespaces, wide=wide, now=now)
        elif what == "nodes":
            objs = list(Node.objects.filter(name__in=names) if names else Node.objects.all())
            self._missing("nodes", names, {o.name for o in objs})
            if output == "json":
                return self._json([kubectl.node_object(n) for n in objs])
            text = kubectl.nodes_table(objs, wide=wide, now=now)
        else:
            objs = Event.objects.all() if all_namespaces else Event.objects.filter(involved_namespace=namespace)
            objs = list(objs.order_by("last_timestamp", "id"))
            if output == "json":
                return self._json([kubectl.event_object(e) for e in objs])
            text = kubectl.events_table(objs, all_namespaces=all_namespaces, wide=wide, now=now)
        if not objs:
            where = "" if all_namespaces or what == "nodes" else f" in {namespace} namespace"
            self.stderr.write(f"No resources found{where}.")
            return
        self.stdout.write(text)

    def _missing(self, plural, wanted, found):
        missing = [n for n in wanted if n not in found]
        if missing:
            raise CommandError("\n".join(f'Error from server (NotFound): {plural} "{n}" not found' for n in missing), returncode=1)

    def _json(self, items):
        self.stdout.write(json.dumps(kubectl.v1_list(items), indent=4))
