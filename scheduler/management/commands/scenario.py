"""`manage.py scenario FILE [--time-scale N] [--check]`: play a scenario against the cluster (see
scheduler/controllers/scenario/spec.py for the format). The file is checked whole first; with a problem,
each is printed (file, step, field, what) and nothing changes. While it plays, this process ticks the
control plane on the scenario's clock; the scheduler is whatever runs (workers, or `manage.py run`)."""

from django.conf import settings

from scheduler.controllers.scenario.runner import play
from scheduler.controllers.scenario.spec import ScenarioError, load
from scheduler.kubectl.printers import KubectlCommand, KubectlError


def positive(value: str) -> float:
    import argparse

    try:
        got = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {value!r}") from None
    if got <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {value!r}")
    return got


class Command(KubectlCommand):
    help = "Play a scenario file (node failures, drains, scaling, applies, deletes at given times)."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--time-scale", type=positive, default=1.0,
                            help="scenario seconds per wall second (60: a 300 s toleration runs out in 5 s)")
        parser.add_argument("--check", action="store_true", help="only check the file")

    def handle(self, *args, file, time_scale, check, **options):
        try:
            scenario = load(file)
        except ScenarioError as e:
            for problem in e.problems:
                self.stderr.write(problem)
            n = len(e.problems)
            raise KubectlError(f"{n} problem{'s' if n != 1 else ''} found; nothing was run") from None
        if check:
            self.stdout.write(f"scenario {scenario.name}: {len(scenario.steps)} steps over {scenario.duration:g}s, ok")
            return
        failed = []

        def report(result):
            mark = "" if result.ok else " FAILED"
            self.stdout.write(f"[{result.at:7.1f}s] steps[{result.step.index}] {result.step.describe()}{mark}")
            for line in result.lines:
                (self.stdout if result.ok else self.stderr).write(f"    {line}")
            if not result.ok:
                failed.append(result.step.index)

        if settings.EMBEDDED:
            # Embedded, the scheduler is `manage.py run`'s loop, with its queue in its own memory: it finds
            # this process's pods only when its reconciler looks. Playing inside it is the way.
            self.stderr.write("note: embedded mode: pods are scheduled only by a running `manage.py run`; "
                              "`make run SCENARIO=FILE` plays the scenario inside it")
        self.stdout.write(f"scenario {scenario.name}: {len(scenario.steps)} steps over {scenario.duration:g}s "
                          f"(time scale {time_scale:g})")
        play(scenario, time_scale=time_scale, report=report)
        self.stdout.write(f"scenario {scenario.name}: done")
        if failed:
            raise KubectlError(f"steps {', '.join(f'steps[{i}]' for i in failed)} failed")
