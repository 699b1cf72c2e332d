"""`manage.py cordon NODE...`: as kubectl cordon (node/NAME cordoned, or already cordoned)."""

from scheduler.controllers.drain import cordon
from scheduler.kubectl.printers import KubectlCommand, KubectlError

class Command(KubectlCommand):
    help = "Mark simulated nodes unschedulable, like kubectl cordon."
    desired = True  # uncordon's command is this one with False

    def add_arguments(self, parser):
        parser.add_argument("names", nargs="+")

    def handle(self, *args, names, **options):
        missing = False
        for name in names:
            said = cordon(name, self.desired)
            if said is None:
                self.stderr.write(f'Error from server (NotFound): nodes "{name}" not found')
                missing = True
            else:
                self.stdout.write(f"node/{name} {said}")
        if missing:
            raise KubectlError()
