"""`manage.py node fail NAME [--unreachable]` and `node recover NAME`: the kubelet's side of a node going
NotReady (Ready=False), unreachable (Ready=Unknown, as the node controller marks a node whose kubelet
stopped posting) or back, on the simulated cluster; the node controller then taints it at once."""

from scheduler.controllers.node_lifecycle import node_set_ready
from scheduler.kubectl.printers import KubectlCommand, KubectlError


class Command(KubectlCommand):
    help = "Make a simulated node NotReady or unreachable (fail) or Ready again (recover)."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["fail", "recover"])
        parser.add_argument("names", nargs="+")
        parser.add_argument("--unreachable", action="store_true",
                            help="Ready=Unknown (the kubelet stopped posting) instead of Ready=False")

    def handle(self, *args, action, names, unreachable, **options):
        status = "True" if action == "recover" else ("Unknown" if unreachable else "False")
        word = {"True": "Ready", "False": "NotReady", "Unknown": "unreachable"}[status]
        missing = False
        for name in names:
            if node_set_ready(name=name, status=status) is None:
                self.stderr.write(f'Error from server (NotFound): nodes "{name}" not found')
                missing = True
            else:
                self.stdout.write(f"node/{name} {word}")
        if missing:
            raise KubectlError()
