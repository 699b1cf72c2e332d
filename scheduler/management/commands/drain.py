"""`manage.py drain NODE [--force] [--ignore-daemonsets] [--grace-period N] [--timeout 30s]`: as kubectl drain
on the simulated cluster, with its output lines and exit codes (cmd/drain's RunDrain)."""

import time

from scheduler.controllers import drain
from scheduler.kubectl.printers import KubectlCommand, KubectlError
from scheduler.models import Node

EVICTION_RETRY_SECONDS = 5  # as kubectl's evictPods: a refused eviction is tried again after 5 s


class Command(KubectlCommand):
    help = "Cordon a simulated node and evict its pods, like kubectl drain."

    def add_arguments(self, parser):
        parser.add_argument("names", nargs="+")
        parser.add_argument("--force", action="store_true")
        parser.add_argument("--ignore-daemonsets", action="store_true")
        parser.add_argument("--delete-emptydir-data", action="store_true")
        parser.add_argument("--grace-period", type=int, default=-1,
                            help="accepted for kubectl's sake: the simulated kubelet stops a pod at once")
        parser.add_argument("--timeout", type=float, default=0.0,
                            help="seconds to keep retrying evictions a disruption budget refuses (0: try once)")

    def handle(self, *args, names, force, ignore_daemonsets, timeout, **options):
        for name in names:
            if not Node.objects.filter(name=name).exists():
                self.stderr.write(f'Error from server (NotFound): nodes "{name}" not found')
                raise KubectlError()
        for name in names:
            self.stdout.write(f"node/{name} {drain.cordon(name, True)}")
        drained: list[str] = []
        for name in names:
            error = self._drain_one(name, force=force, ignore_daemonsets=ignore_daemonsets, timeout=timeout)
            if error is None:
                drained.append(name)
                self.stdout.write(f"node/{name} drained")
                continue
            self.stderr.write(f'error: unable to drain node "{name}", aborting command...\n\n')
            pending = [n for n in names if n not in drained]
            self.stderr.write("There are pending nodes to be drained:")
            for n in pending:
                self.stderr.write(f" {n}")
            raise KubectlError(error)

    def _drain_one(self, name: str, *, force: bool, ignore_daemonsets: bool, timeout: float) -> str | None:
        plan = drain.plan(name, force=force, ignore_daemonsets=ignore_daemonsets)
        errors = plan.error_texts()
        if errors:
            # As utilerrors.NewAggregate's message: one error as it is, several in brackets.
            return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        if plan.warnings:
            self.stderr.write(f"Warning: {plan.warning_text()}")
        deadline = time.monotonic() + timeout
        pods = list(plan.evict)
        for pod in pods:
            self.stdout.write(f"evicting pod {pod.namespace}/{pod.name}")
        while pods:
            refused = []
            for pod in pods:
                got = drain.evict_pod(pod)
                if got is False:
                    self.stderr.write(f'error when evicting pods/"{pod.name}" -n "{pod.namespace}" '
                                      f"(will retry after {EVICTION_RETRY_SECONDS}s): {drain.PDB_VIOLATION}")
                    refused.append(pod)
                else:
                    self.stdout.write(f"pod/{pod.name} evicted")
            pods = refused
            if pods and time.monotonic() + EVICTION_RETRY_SECONDS > deadline:
                return (f"error when evicting pods/\"{pods[0].name}\" -n \"{pods[0].namespace}\": "
                        f"global timeout reached: {timeout:g}s")
            if pods:
                time.sleep(EVICTION_RETRY_SECONDS)
        return None
