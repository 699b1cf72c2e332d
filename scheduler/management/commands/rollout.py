"""`manage.py rollout status deployment/NAME|statefulset/NAME [-w=false] [--timeout D] [--revision N]`: as
kubectl rollout status, from the status the controllers write (beat's, or the embedded loop's): each new line
while the rollout goes, until it is done (exit 0), cannot finish (exit 1), or the timeout passes."""

import time

from scheduler.controllers.scenario.spec import parse_duration
from scheduler.kubectl.printers import KubectlCommand, KubectlError
from scheduler.kubectl.rollout import RolloutError, deployment_status, statefulset_status
from scheduler.models import ClusterObject

_KINDS = {name: ("Deployment", "deployments.apps") for name in ("deployment", "deployments", "deploy",
                                                                 "deployment.apps")}
_KINDS.update({name: ("StatefulSet", "statefulsets.apps") for name in ("statefulset", "statefulsets", "sts",
                                                                        "statefulset.apps")})
POLL_SECONDS = 1.0


def _bool(text: str) -> bool:
    if text.lower() in ("true", "t", "1"):
        return True
    if text.lower() in ("false", "f", "0"):
        return False
    raise KubectlError(f'invalid argument "{text}" for "-w, --watch" flag: strconv.ParseBool: parsing "{text}": '
                       "invalid syntax")


class Command(KubectlCommand):
    help = "Show the status of a Deployment's or StatefulSet's rollout, like kubectl rollout status."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["status"])
        parser.add_argument("resource", nargs="+", help="KIND/NAME, or KIND NAME")
        parser.add_argument("-n", "--namespace", default="default")
        parser.add_argument("-w", "--watch", default="true", help="watch until the rollout is done (default true)")
        parser.add_argument("--timeout", default="0s", help="stop watching after this long (0: never)")
        parser.add_argument("--revision", type=int, default=0, help="the revision to follow (Deployments)")

    def handle(self, *args, action, resource, namespace, watch, timeout, revision, **options):
        if len(resource) == 2 and "/" not in resource[0]:
            kind_name, name = resource
        elif len(resource) == 1 and "/" in resource[0]:
            kind_name, _, name = resource[0].partition("/")
        else:
            raise KubectlError("required resource not specified")
        if kind_name.lower() not in _KINDS:
            raise KubectlError(f'no status viewer has been implemented for {kind_name}')
        kind, plural = _KINDS[kind_name.lower()]
        watch = _bool(watch.removeprefix("="))
        limit = parse_duration(timeout)
        if limit is None:
            raise KubectlError(f'invalid argument "{timeout}" for "--timeout" flag: time: invalid duration "{timeout}"')
        deadline = time.monotonic() + limit if limit else None
        last = None
        while True:
            obj = ClusterObject.objects.filter(kind=kind, namespace=namespace, name=name).first()
            if obj is None:
                self.stderr.write(f'Error from server (NotFound): {plural} "{name}" not found')
                raise KubectlError()
            replicas = obj.replicas if obj.replicas is not None else 1
            try:
                line, done = (deployment_status(obj.manifest, replicas, revision) if kind == "Deployment"
                              else statefulset_status(obj.manifest, replicas))
            except RolloutError as e:
                raise KubectlError(str(e))
            if line != last:
                self.stdout.write(line)
                last = line
            if done or not watch:
                return
            if deadline is not None and time.monotonic() >= deadline:
                raise KubectlError("timed out waiting for the condition")
            time.sleep(POLL_SECONDS)
