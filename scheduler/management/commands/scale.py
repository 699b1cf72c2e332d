"""`manage.py scale KIND/NAME --replicas N` (or KIND NAME): as kubectl scale, on the simulated cluster."""

from scheduler.controllers.scale import SCALABLE, scale
from scheduler.kubectl.printers import KubectlCommand, KubectlError


class Command(KubectlCommand):
    help = "Set a ReplicaSet's, Deployment's or StatefulSet's replicas, like kubectl scale."

    def add_arguments(self, parser):
        parser.add_argument("resource", nargs="+", help="KIND/NAME, or KIND NAME")
        parser.add_argument("--replicas", type=int, required=True)
        parser.add_argument("-n", "--namespace", default="default")

    def handle(self, *args, resource, replicas, namespace, **options):
        if len(resource) == 2 and "/" not in resource[0]:
            kind_name, name = resource
        elif len(resource) == 1 and "/" in resource[0]:
            kind_name, _, name = resource[0].partition("/")
        else:
            raise KubectlError("resource(s) were provided, but no name was specified")
        if kind_name.lower() not in SCALABLE:
            raise KubectlError(f'the server doesn\'t have a resource type "{kind_name}"')
        if replicas < 0:
            raise KubectlError("The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0")
        kind, printed = SCALABLE[kind_name.lower()]
        if not scale(kind=kind, namespace=namespace, name=name, replicas=replicas):
            plural = printed.replace(".", "s.", 1) if "." in printed else printed + "s"
            self.stderr.write(f'Error from server (NotFound): {plural} "{name}" not found')
            raise KubectlError()
        self.stdout.write(f"{printed}/{name} scaled")
