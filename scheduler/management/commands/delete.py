"""`manage.py delete pod NS/NAME` and `delete node NAME`."""

from django.core.management.base import BaseCommand, CommandError

from scheduler.services import node_delete, pod_delete


class Command(BaseCommand):
    help = "Delete a pod (NS/NAME, or NAME with -n) or a node from the simulated cluster."

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=["pod", "pods", "node", "nodes"])
        parser.add_argument("names", nargs="+")
        parser.add_argument("-n", "--namespace", default="default")

    def handle(self, *args, kind, names, namespace, **options):
        missing = []
        for name in names:
            if kind.startswith("pod"):
                ns, _, pod_name = name.rpartition("/")
                ns = ns or namespace
                if pod_delete(namespace=ns, name=pod_name):
                    self.stdout.write(f'pod "{pod_name}" deleted')
                else:
                    missing.append(f'Error from server (NotFound): pods "{pod_name}" not found')
            else:
                if node_delete(name=name):
                    self.stdout.write(f'node "{name}" deleted')
                else:
                    missing.append(f'Error from server (NotFound): nodes "{name}" not found')
        for line in missing:
            self.stderr.write(line)
        if missing:
            raise CommandError("some objects were not found", returncode=1)
