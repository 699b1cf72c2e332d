"""`manage.py why NAMESPACE/NAME [--json] [--nearest N]`: why a pending pod is pending, and what would make it fit."""

import json

from django.core.management.base import CommandError

from scheduler.cluster.why import WhyError, pod_why
from scheduler.engine.why import NEAREST_NODES, why_text
from scheduler.kubectl.printers import KubectlCommand


class Command(KubectlCommand):
    help = ("For a pending pod: the nearest nodes (fewest failing filters), what each lacks, and which single "
            "change would make the pod fit, over the current nodes and the active configuration.")

    def add_arguments(self, parser):
        parser.add_argument("pod", help="NAMESPACE/NAME")
        parser.add_argument("--json", action="store_true", help="print the answer as JSON")
        parser.add_argument("--nearest", type=int, default=NEAREST_NODES, help="how many nearest nodes to describe")

    def handle(self, *args, pod, json: bool, nearest: int, **options):
        namespace, slash, name = pod.partition("/")
        if not slash or not namespace or not name:
            raise CommandError(f"pod: {pod!r} is not NAMESPACE/NAME")
        if nearest < 1:
            raise CommandError(f"--nearest: {nearest} is not a positive number")
        try:
            answer = pod_why(namespace=namespace, name=name, nearest=nearest)
        except WhyError as e:
            raise CommandError(str(e)) from None
        if json:
            self.stdout.write(_dumps(answer))
        elif "bound" in answer:
            self.stdout.write(f"Pod {answer['pod']} is not pending: it is placed on {answer['bound']}.")
        else:
            self.stdout.write(why_text(answer))


def _dumps(answer: dict) -> str:
    return json.dumps(answer, indent=2)
