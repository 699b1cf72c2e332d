"""`manage.py delete pod NS/NAME` (or NAME with -n) and `delete node NAME`."""

from scheduler.kubectl.printers import KubectlCommand, KubectlError
from scheduler.cluster.services import node_delete, pod_delete


class Command(KubectlCommand):
    help = "Delete pods (NS/NAME, or NAME with -n) or nodes from the simulated cluster, like kubectl delete --now."

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=["pod", "pods", "po", "node", "nodes", "no"])
        parser.add_argument("names", nargs="+")
        parser.add_argument("-n", "--namespace", default="default")

    def handle(self, *args, kind, names, namespace, **options):
        # As kubectl delete: each object in turn; a missing one is reported and the others still go; exit 1.
        missing = False
        for name in names:
            if kind.startswith("po"):
                ns, _, pod_name = name.rpartition("/")
                if pod_delete(namespace=ns or namespace, name=pod_name):
                    self.stdout.write(f'pod "{pod_name}" deleted')
                else:
                    self.stderr.write(f'Error from server (NotFound): pods "{pod_name}" not found')
                    missing = True
            elif node_delete(name=name):
                self.stdout.write(f'node "{name}" deleted')
            else:
                self.stderr.write(f'Error from server (NotFound): nodes "{name}" not found')
                missing = True
        if missing:
            raise KubectlError()
