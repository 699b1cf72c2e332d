"""`manage.py apply -f FILE [-f FILE ...]`: load v1 Nodes and Pods (and the Namespaces, Services and controllers the
scheduler reads) into the simulated cluster, all or nothing."""

import sys

from scheduler.kubectl.printers import KubectlCommand, KubectlError
from scheduler.cluster.objects import resource_name
from scheduler.manifests.cluster_objects import ParsedObject
from scheduler.manifests.errors import ManifestError
from scheduler.manifests.files import STDIN, parse_files
from scheduler.manifests.objects import ParsedPod
from scheduler.cluster.services import cluster_apply


class Command(KubectlCommand):
    help = "Apply Kubernetes v1 Node and Pod manifests (YAML or JSON; '-' reads stdin), like kubectl apply."

    def add_arguments(self, parser):
        parser.add_argument("-f", "--filename", action="append", required=True, dest="files",
                            help="a manifest file or directory, or - for standard input (repeatable)")

    def handle(self, *args, files, **options):
        stdin_text = sys.stdin.read() if STDIN in files else None
        try:
            objects = parse_files(files, stdin_text=stdin_text)
            if not objects:
                # As kubectl apply on a file without objects.
                raise KubectlError("no objects passed to apply")
            result = cluster_apply(objects)
        except ManifestError as e:
            for problem in e.problems:
                self.stderr.write(str(problem))
            count = len(e.problems)
            raise KubectlError(f"{count} problem{'s' if count != 1 else ''} found; nothing was applied") from None
        # As kubectl apply: one line per object, in the order given.
        for obj in objects:
            if isinstance(obj, ParsedObject):
                key = (obj.kind, obj.namespace, obj.name)
                self.stdout.write(f"{resource_name(obj.kind)}/{obj.name} {result.statuses[key]}")
                continue
            if isinstance(obj, ParsedPod):
                key = ("Pod", obj.spec.namespace, obj.spec.name)
            else:
                key = ("Node", "", obj.spec.name)
            self.stdout.write(f"{key[0].lower()}/{key[2]} {result.statuses[key]}")
