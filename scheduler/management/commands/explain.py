"""`manage.py explain --cluster CLUSTER.yaml --pod POD.yaml [--profile CONFIG.yaml] [--seed N] [--preempt]`: one dry-run
cycle; with --preempt a pod that fits nowhere also runs PostFilter (preemption) as a dry run."""

import json

from scheduler.cluster.dryrun import DryRunError, explain_files
from scheduler.kubectl.printers import KubectlCommand, KubectlError


class Command(KubectlCommand):
    help = "Run one scheduling cycle for a pod as a dry run over a cluster file and print the decision as JSON."

    def add_arguments(self, parser):
        parser.add_argument("--cluster", required=True, help="Nodes and already-bound Pods (YAML or JSON)")
        parser.add_argument("--pod", required=True, help="the Pod to schedule")
        parser.add_argument("--profile", help="a kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration")
        parser.add_argument("--scheduler-name", help="which profile to use (default: the pod's spec.schedulerName)")
        parser.add_argument("--seed", type=int, default=None, help="seed for the tie-break among top scores")
        parser.add_argument("--preempt", action="store_true",
                            help="when the pod fits nowhere, run the profile's PostFilter (DefaultPreemption) as a dry "
                                 "run: adds the nominated node and the victims; nothing is evicted")

    def handle(self, *args, cluster, pod, profile, scheduler_name, seed, preempt=False, **options):
        try:
            result = explain_files(cluster=cluster, pod=pod, profile=profile, scheduler_name=scheduler_name, seed=seed,
                                   preempt=preempt)
        except DryRunError as e:
            for line in e.lines:
                self.stderr.write(line)
            raise KubectlError() from None
        self.stdout.write(json.dumps(result, indent=2))
