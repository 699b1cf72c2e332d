"""`manage.py run`: the whole service in one process (embedded mode): web server, scheduling loop,
reconciler, the simulated cluster's controllers (what beat runs in the full stack) and the demo trickle of
pods, on SQLite with an in-memory queue by default. `--scenario FILE` plays a scenario in the background
instead of the demo (its cluster comes from its own steps)."""

import logging
import random
import threading
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

from scheduler import loop, retention
from scheduler.controllers.control_plane import ControlPlane
from scheduler.controllers.scenario.runner import play
from scheduler.controllers.scenario.spec import ScenarioError, load
from scheduler.kubectl.printers import KubectlError
from scheduler.manifests.errors import ManifestError
from scheduler.manifests.files import parse_documents
from scheduler.models import Node, Pod
from scheduler.cluster.services import cluster_apply, pod_delete
from scheduler.cluster.simulation import (DEMO_NAMESPACE, MONITORING_NAMESPACE, TRICKLE_NAMESPACES, demo_objects,
                                          demo_pods, seed_nodes, trickle_pod)
from scheduler.controllers import replicaset, statefulset

log = logging.getLogger("schedboard.run")


class Command(BaseCommand):
    help = "Run schedboard in one process: web server, scheduling loop, reconciler and a demo trickle of pods."

    def add_arguments(self, parser):
        parser.add_argument("--addr", default="127.0.0.1:8000", help="address:port for the web server")
        parser.add_argument("--rate", type=float, default=None,
                            help="demo pods per second (0: none; default 2, or 0 with --scenario)")
        parser.add_argument("--lifetime", type=float, default=60.0, help="seconds a demo pod runs before it finishes")
        parser.add_argument("--no-seed", action="store_true", help="do not create the demo nodes")
        parser.add_argument("--no-web", action="store_true", help="run the loop only")
        parser.add_argument("--scenario", default="", help="a scenario file to play in the background (no demo "
                                                           "nodes or trickle unless asked)")
        parser.add_argument("--time-scale", type=float, default=1.0, help="the scenario's seconds per wall second")

    def handle(self, *args, addr, rate, lifetime, no_seed, no_web, scenario, time_scale, **options):
        played = None
        if scenario:
            try:
                played = load(scenario)  # checked whole before anything starts
            except ScenarioError as e:
                for problem in e.problems:
                    self.stderr.write(problem)
                raise KubectlError(f"{len(e.problems)} problem(s) in {scenario}; nothing was run") from None
            no_seed = True
        if rate is None:
            rate = 0.0 if scenario else 2.0
        # One process owns the metrics directory here: start it empty, as prometheus_client asks.
        for stale in Path(settings.PROMETHEUS_MULTIPROC_DIR).glob("*.db"):
            stale.unlink()
        if not no_seed and not Node.objects.exists():
            nodes = seed_nodes()
            result = cluster_apply(parse_documents_list(nodes))
            self.stdout.write(f"seeded {len(result.created)} nodes")
            seed_workloads(nodes)
            self.stdout.write(f"seeded the {DEMO_NAMESPACE} workloads: ReplicaSet web (zone spread), StatefulSet cache "
                              f"(one per host), pod {MONITORING_NAMESPACE}/cache-exporter (with a cache), pod loner "
                              "(anti-affine to everything: never placed)")
        if settings.EMBEDDED and not get_user_model().objects.filter(username="admin").exists():
            get_user_model().objects.create_superuser("admin", "admin@localhost", "admin")
            self.stdout.write("created the demo superuser admin / admin")
        stop = threading.Event()
        threading.Thread(target=scheduling_loop, args=(stop,), name="scheduler", daemon=True).start()
        if rate > 0:
            threading.Thread(target=trickle, args=(stop, rate, lifetime), name="trickle", daemon=True).start()
        if played is not None:
            threading.Thread(target=play_scenario, args=(stop, played, time_scale), name="scenario", daemon=True).start()
            self.stdout.write(f"playing scenario {played.name} ({len(played.steps)} steps over {played.duration:g}s, "
                              f"time scale {time_scale:g})")
        self.stdout.write(
            "\nschedboard is running ({} mode).\n"
            "  Dashboard:      http://{addr}/  (log in as admin / admin)\n"
            "  Django admin:   http://{addr}/admin/  (profiles and weights, versions, audit tables)\n"
            "  Watch pods:     python manage.py get pods -A -o wide\n"
            "  Nodes:          python manage.py get nodes\n"
            "  Events:         python manage.py get events -A\n"
            "  Why a pod:      python manage.py explain --cluster CLUSTER.yaml --pod POD.yaml\n".format(
                "embedded" if settings.EMBEDDED else "external", addr=addr)
        )
        try:
            if no_web:
                while True:
                    time.sleep(3600)
            call_command("runserver", addr, use_reloader=False, use_threading=True)
        finally:
            stop.set()


def seed_workloads(nodes: list[dict]) -> None:
    """The demo's topology workloads: the objects, the ReplicaSet's and the StatefulSet's pods (each
    controller's one pass), then the other pods one apply each, so the queue takes them in that order (the
    exporter after the caches it must join)."""
    cluster_apply(parse_documents_list(demo_objects(nodes)))
    replicaset.sync_all()
    statefulset.sync_all()
    for pod in demo_pods():
        cluster_apply(parse_documents_list([pod]))


def parse_documents_list(objects: list[dict]):
    import yaml

    return parse_documents(yaml.safe_dump_all(objects), "<demo>")


def scheduling_loop(stop: threading.Event) -> None:
    """The in-process worker: what `celery worker` and `celery beat` (reconcile, retention, recount, the
    controllers) do in the full stack."""
    plane = ControlPlane()
    next_reconcile = next_retention = 0.0
    next_recount = time.monotonic() + settings.SCHEDBOARD_RECOUNT_SECONDS
    while not stop.is_set():
        try:
            now = time.monotonic()
            if now >= next_reconcile:
                loop.reconcile()
                next_reconcile = now + settings.SCHEDBOARD_RECONCILE_SECONDS
            if now >= next_retention:  # what beat's "retention" entry does in the full stack
                next_retention = now + settings.SCHEDBOARD_RETENTION_PERIOD
                retention.purge()
            if now >= next_recount:
                loop.recount()
                next_recount = now + settings.SCHEDBOARD_RECOUNT_SECONDS
            if settings.SCHEDBOARD_BACKEND == "simulated":
                plane.tick()
            stats = loop.run_schedule_task()
            if not stats.popped:
                stop.wait(0.05)
        except Exception:  # keep the demo alive; the error is in the log
            log.exception("scheduling loop iteration failed")
            stop.wait(1.0)


def play_scenario(stop: threading.Event, scenario, time_scale: float) -> None:
    def report(result):
        log.info("scenario %s [%.1fs] steps[%d] %s%s: %s", scenario.name, result.at, result.step.index,
                    result.step.describe(), "" if result.ok else " FAILED", "; ".join(result.lines))
    try:
        play(scenario, time_scale=time_scale, report=report, stop=stop.is_set)
        log.info("scenario %s done", scenario.name)
    except Exception:
        log.exception("scenario %s failed", scenario.name)


def trickle(stop: threading.Event, rate: float, lifetime: float) -> None:
    rng = random.Random(42)
    i = Pod.objects.count()
    while not stop.wait(1.0 / rate):
        i += 1
        try:
            cluster_apply(parse_documents_list([trickle_pod(i, rng)]))
            # Pods that have "run" long enough finish, so the demo cluster never fills up.
            cutoff = time.time() - lifetime
            finished = Pod.objects.exclude(bound_at=None).filter(namespace__in=TRICKLE_NAMESPACES)
            for ns, name, bound_at in finished.values_list("namespace", "name", "bound_at")[:50]:
                if bound_at.timestamp() < cutoff:
                    pod_delete(namespace=ns, name=name)
        except ManifestError as e:
            log.error("demo pod rejected: %s", e)
        except Exception:
            log.exception("trickle iteration failed")
