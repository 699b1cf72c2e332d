"""`manage.py apply -f FILE [-f FILE ...]`: load v1 Nodes and Pods into the simulated cluster, all or nothing."""

import sys

from django.core.management.base import BaseCommand, CommandError

from scheduler.manifests import ManifestError, parse_files
from scheduler.services import cluster_apply


class Command(BaseCommand):
    help = "Apply Kubernetes v1 Node and Pod manifests (YAML or JSON; '-' reads stdin), like kubectl apply."

    def add_arguments(self, parser):
        parser.add_argument("-f", "--filename", action="append", required=True, dest="files",
                            help="a manifest file, or - for standard input (repeatable)")

    def handle(self, *args, files, **options):
        stdin_text = sys.stdin.read() if "-" in files else None
        try:
            objects = parse_files(files, stdin_text=stdin_text)
            result = cluster_apply(objects)
        except ManifestError as e:
            for problem in e.problems:
                self.stderr.write(str(problem))
            raise CommandError(f"{len(e.problems)} problem(s); nothing was applied", returncode=1) from None
        except OSError as e:
            raise CommandError(f"{e.filename}: {e.strerror}", returncode=1) from None
        for name in result.created:
            self.stdout.write(f"{name} created")
        for name in result.configured:
            self.stdout.write(f"{name} configured")
        for name in result.unchanged:
            self.stdout.write(f"{name} unchanged")
