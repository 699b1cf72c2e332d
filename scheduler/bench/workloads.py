"""scheduler_perf's workloads (`manage.py bench --workload NAME`): the shapes upstream's CI measures, each
as one entry of WORKLOADS, run through the engine alone and end to end.

As kubernetes/kubernetes test/integration/scheduler_perf (misc/, topology_spreading/ and affinity/
performance-config.yaml, the templates in templates/): nodes from node-default.yaml, each labelled
`kubernetes.io/hostname` with its name (IntegrationTestNodePreparer) and, where the workload says so, a
zone picked at random from a list (labelNodePrepareStrategy); the cluster objects (createNamespaces,
createAny); the init pods, scheduled by the scheduler before the clock starts; then the measured pods.
`threshold` is upstream's pods/s floor for the case named beside it (its CI machines are far bigger).

Adding a workload is one entry: its upstream name, cases, node labels, objects and the two pod templates.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..engine import perf
from ..engine.cache import Cache
from ..engine.config import default_config
from ..engine.framework import Algorithm
from ..engine.nodes import NodeTable
from ..manifests.objects import node_from_manifest, parse_object, pod_from_manifest
from ..state.placed_pods import cluster_objects_from_rows

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
PAUSE = "registry.k8s.io/pause:3.10.1"

# templates/node-default.yaml
NODE_DEFAULT = {
    "apiVersion": "v1", "kind": "Node", "spec": {},
    "status": {"capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
               "allocatable": {"pods": "110", "cpu": "4", "memory": "32Gi"},
               "conditions": [{"status": "True", "type": "Ready"}], "phase": "Running"},
}


def _pod(labels: dict | None = None, ports: bool = True, resources: bool = True, **spec) -> dict:
    container = {"image": PAUSE, "name": "pause"}
    if ports:
        container["ports"] = [{"containerPort": 80}]
    if resources:
        container["resources"] = {"limits": {"cpu": "100m", "memory": "500Mi"},
                                  "requests": {"cpu": "100m", "memory": "500Mi"}}
    meta = {"labels": dict(labels)} if labels else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {**spec, "containers": [container]}}


def _term(color: str, topology_key: str) -> dict:
    return {"labelSelector": {"matchLabels": {"color": color}}, "topologyKey": topology_key,
            "namespaces": ["sched-1", "sched-0"]}


# templates/pod-default.yaml
POD_DEFAULT = _pod(ports=False)
# templates/pod-with-topology-spreading.yaml and pod-with-preferred-topology-spreading.yaml
POD_WITH_TOPOLOGY_SPREADING = _pod({"color": "blue"}, topologySpreadConstraints=[
    {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
     "labelSelector": {"matchLabels": {"color": "blue"}}}])
POD_WITH_PREFERRED_TOPOLOGY_SPREADING = _pod({"color": "blue"}, topologySpreadConstraints=[
    {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
     "labelSelector": {"matchLabels": {"color": "blue"}}}])
# templates/pod-with-label.yaml (no requests: the scoring defaults count) and templates/service.yaml
POD_WITH_LABEL = _pod({"app": "scheduler-perf"}, ports=False, resources=False)
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "service-0", "namespace": "service-ns"},
           "spec": {"selector": {"app": "scheduler-perf"}, "ports": [{"protocol": "TCP", "port": 80, "targetPort": 8000}]}}
# templates/pod-with-pod-anti-affinity.yaml, pod-with-pod-affinity.yaml, pod-with-preferred-pod-affinity.yaml,
# pod-with-preferred-pod-anti-affinity.yaml
POD_WITH_POD_ANTI_AFFINITY = _pod({"color": "green"}, affinity={"podAntiAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": [_term("green", HOSTNAME)]}})
POD_WITH_POD_AFFINITY = _pod({"color": "blue"}, affinity={"podAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": [_term("blue", ZONE)]}})
POD_WITH_PREFERRED_POD_AFFINITY = _pod({"color": "red"}, affinity={"podAffinity": {
    "preferredDuringSchedulingIgnoredDuringExecution": [{"podAffinityTerm": _term("red", HOSTNAME), "weight": 1}]}})
POD_WITH_PREFERRED_POD_ANTI_AFFINITY = _pod({"color": "yellow"}, affinity={"podAntiAffinity": {
    "preferredDuringSchedulingIgnoredDuringExecution": [{"podAffinityTerm": _term("yellow", HOSTNAME), "weight": 1}]}})


# templates/pod-low-priority.yaml (priority 0) and pod-high-priority.yaml (spec.priority 10, no class: scheduler_perf's
# API server runs without the Priority admission plugin, so the bench loads them as it would store them).
POD_LOW_PRIORITY = _pod(terminationGracePeriodSeconds=0)
POD_LOW_PRIORITY["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "900m", "memory": "500Mi"},
                                                          "requests": {"cpu": "900m", "memory": "500Mi"}}
POD_HIGH_PRIORITY = _pod(priority=10)
POD_HIGH_PRIORITY["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "3000m", "memory": "500Mi"},
                                                           "requests": {"cpu": "3000m", "memory": "500Mi"}}


@dataclass(frozen=True)
class ChurnOp:
    """A churn op in mode create: one pod of `template` each `interval` seconds, as long as the measured pods run."""

    template: dict
    interval: float
    namespace: str


def _namespaces(*names: str) -> tuple[dict, ...]:
    return tuple({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in names)


@dataclass(frozen=True)
class Case:
    """One of upstream's workloads (params initNodes, initPods, measurePods) and its threshold, if any."""

    name: str
    nodes: int
    init_pods: int
    measure_pods: int
    threshold: float | None = None


@dataclass(frozen=True)
class Workload:
    name: str
    source: str  # upstream's file under test/integration/scheduler_perf/
    cases: tuple[Case, ...]  # the performance case with a threshold first (the default), then smaller ones
    measured_pod: dict
    init_pod: dict = field(default_factory=lambda: POD_DEFAULT)
    zones: tuple[str, ...] = ()  # labelNodePrepareStrategy's values for topology.kubernetes.io/zone
    objects: tuple[dict, ...] = ()  # Namespaces, Services... created before the pods
    init_namespace: str = "init"
    measured_namespace: str = "sched-test"
    e2e_case: str = ""  # the case `bench` runs end to end by default (2 cores in minutes); "" the first
    churn: ChurnOp | None = None  # pods created on a ticker while the measured ones are scheduled

    def case(self, name: str | None = None, *, e2e: bool = False) -> Case:
        wanted = name or (self.e2e_case if e2e else "") or self.cases[0].name
        for c in self.cases:
            if c.name == wanted:
                return c
        raise ValueError(f"{self.name} has no case {wanted!r} (cases: {', '.join(c.name for c in self.cases)})")

    @property
    def threshold(self) -> tuple[float | None, str]:
        """Upstream's threshold (pods/s) and the case it is set for."""
        for c in self.cases:
            if c.threshold is not None:
                return c.threshold, c.name
        return None, ""


MOON = ("moon-1", "moon-2", "moon-3")
_SPREADING_CASES = (Case("5000Nodes_5000Pods", 5000, 5000, 5000), Case("5000Nodes", 5000, 5000, 2000),
                    Case("500Nodes", 500, 1000, 1000), Case("5Nodes", 5, 10, 10))


def _cases(threshold: float, *cases: Case) -> tuple[Case, ...]:
    first, *rest = cases
    return (Case(first.name, first.nodes, first.init_pods, first.measure_pods, threshold), *rest)


_AFFINITY_CASES = (Case("5000Nodes_5000Pods", 5000, 5000, 5000), Case("5000Nodes", 5000, 5000, 1000),
                   Case("500Nodes", 500, 500, 1000), Case("5Nodes", 5, 5, 10))


def _affinity(name: str, template: dict, cases: tuple[Case, ...], **more) -> Workload:
    """affinity/performance-config.yaml's shape: init pods in sched-0, measured pods in sched-1, one template."""
    return Workload(name, "affinity/performance-config.yaml", cases, measured_pod=template, init_pod=template,
                    objects=_namespaces("sched-0", "sched-1"), init_namespace="sched-0", measured_namespace="sched-1",
                    **more)


WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("SchedulingBasic", "misc/performance-config.yaml",
             (Case("5000Nodes_10000Pods", 5000, 1000, 10000, 680), Case("5000Nodes", 5000, 1000, 1000),
              Case("500Nodes", 500, 500, 1000), Case("5Nodes", 5, 5, 10)),
             measured_pod=POD_DEFAULT),
    Workload("TopologySpreading", "topology_spreading/performance-config.yaml", _cases(460, *_SPREADING_CASES),
             measured_pod=POD_WITH_TOPOLOGY_SPREADING, zones=MOON),
    Workload("PreferredTopologySpreading", "topology_spreading/performance-config.yaml",
             _cases(340, *_SPREADING_CASES), measured_pod=POD_WITH_PREFERRED_TOPOLOGY_SPREADING, zones=MOON),
    Workload("DefaultTopologySpreading", "topology_spreading/performance-config.yaml",
             (Case("5000Nodes_50000Pods", 5000, 5000, 50000, 160), Case("5000Nodes_10000Pods", 5000, 5000, 10000),
              Case("500Nodes", 500, 1000, 1000), Case("5Nodes", 5, 10, 10)),
             measured_pod=POD_WITH_LABEL, zones=MOON, objects=(*_namespaces("service-ns"), SERVICE),
             measured_namespace="service-ns", e2e_case="5000Nodes_10000Pods"),
    _affinity("SchedulingPodAntiAffinity", POD_WITH_POD_ANTI_AFFINITY,
              (Case("5000Nodes_2000Pods", 5000, 1000, 2000, 60), Case("5000Nodes", 5000, 1000, 1000),
               Case("500Nodes", 500, 100, 400), Case("5Nodes", 5, 1, 4))),
    _affinity("SchedulingPodAffinity", POD_WITH_POD_AFFINITY, _cases(35, *_AFFINITY_CASES), zones=("zone1",)),
    _affinity("SchedulingPreferredPodAffinity", POD_WITH_PREFERRED_POD_AFFINITY, _cases(90, *_AFFINITY_CASES)),
    _affinity("SchedulingPreferredPodAntiAffinity", POD_WITH_PREFERRED_POD_ANTI_AFFINITY,
              _cases(90, *_AFFINITY_CASES)),
    # misc/performance-config.yaml: nodes of 4 low-priority pods each (3.6 of 4 CPU), a high-priority pod every
    # 200 ms that must preempt 3 of them (3 CPU), and the measured pods (100m) that always fit. Namespaces as
    # upstream's ops number them. The threshold is 2026's (the issue's); the stored config says 160.
    Workload("PreemptionAsync", "misc/performance-config.yaml",
             (Case("5000Nodes", 5000, 20000, 5000, 570), Case("500Nodes", 500, 2000, 500), Case("5Nodes", 5, 20, 5)),
             measured_pod=POD_DEFAULT, init_pod=POD_LOW_PRIORITY, init_namespace="namespace-1",
             measured_namespace="namespace-3", churn=ChurnOp(POD_HIGH_PRIORITY, 0.2, "namespace-2"),
             # End to end at 5000 nodes the measured pods starve on this 2-core machine: the preemptors (priority
             # 10) come first in activeQ and each attempt costs more than their 200 ms (README, Benchmark).
             e2e_case="500Nodes"),
)}


def workload(name: str) -> Workload:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r} (workloads: {', '.join(WORKLOADS)})") from None


# ---- one run's cluster --------------------------------------------------------------------

def node_manifest(w: Workload, i: int, rng: np.random.Generator) -> dict:
    name = f"node-{i}"
    labels = {HOSTNAME: name}
    if w.zones:
        labels[ZONE] = w.zones[int(rng.integers(len(w.zones)))]
    return {**copy.deepcopy(NODE_DEFAULT), "metadata": {"name": name, "labels": labels}}


def pod_manifest(template: dict, namespace: str, name: str) -> dict:
    m = copy.deepcopy(template)
    m["metadata"] = {**m["metadata"], "name": name, "namespace": namespace, "uid": f"{namespace}-{name}"}
    return m


@dataclass
class Run:
    """A workload's cluster with its init pods scheduled: the engine's cache and profile, and what the
    end-to-end run loads (node manifests, the init pods with their nodes, the objects)."""

    workload: Workload
    case: Case
    cache: Cache
    profile: object
    algorithm: Algorithm
    node_manifests: list[dict]
    placed: list[tuple[dict, str]]  # (init pod manifest, node name)
    unplaced_init: int

    def measured(self, count: int | None = None, start: int = 0) -> list[dict]:
        w = self.workload
        return [pod_manifest(w.measured_pod, w.measured_namespace, f"pod-{i}")
                for i in range(start, start + (self.case.measure_pods if count is None else count))]

    def churned(self, i: int) -> dict:
        churn = self.workload.churn
        return pod_manifest(churn.template, churn.namespace, f"churn-pod-{i}")


def prepare(w: Workload, case: Case, seed: int = 0, progress: Callable[[str], None] | None = None) -> Run:
    """Nodes, objects and the init pods, scheduled one by one by the engine (not timed), as upstream's
    createPods ops before the measured one."""
    rng = np.random.default_rng(seed)
    node_manifests = [node_manifest(w, i, rng) for i in range(case.nodes)]
    table = NodeTable([node_from_manifest(m) for m in node_manifests])
    parsed = [parse_object(copy.deepcopy(o))[1] for o in w.objects]
    table.objects = cluster_objects_from_rows((p.kind, p.namespace, p.name, p.labels, p.selector) for p in parsed)
    cache = Cache(table)
    profile = default_config().profiles[0].build()
    algorithm = Algorithm(seed=seed)
    if progress:
        progress(f"{w.name}/{case.name}: scheduling {case.init_pods} init pods on {case.nodes} nodes")
    placed, unplaced = [], 0
    for i in range(case.init_pods):
        m = pod_manifest(w.init_pod, w.init_namespace, f"init-pod-{i}")
        spec = pod_from_manifest(m)
        decision = algorithm.schedule(profile, spec, table)
        if decision.selected_row is None:
            unplaced += 1
            continue
        cache.assume(spec, decision.selected_row)
        placed.append((m, table.names[decision.selected_row]))
    return Run(w, case, cache, profile, algorithm, node_manifests, placed, unplaced)


def run_engine(w: Workload, case: Case, seed: int = 0, *, progress=None) -> dict:
    """The measured pods through the engine alone (schedulePod, then assume), after the init pods."""
    run = prepare(w, case, seed, progress)
    batch = [pod_from_manifest(m) for m in run.measured()]  # the informer's work, not timed
    if progress:
        progress(f"{w.name}/{case.name}: timing {len(batch)} measured pods through the engine")
    churn = None
    if w.churn is not None:
        from ..engine.nominator import Nominator

        run.algorithm.nominator = Nominator()  # upstream's, fed by the preemptors' PostFilter
        churn = perf.Churn(lambda i: pod_from_manifest(run.churned(i)), w.churn.interval)
    timed = perf.time_schedule(run.cache, run.profile, run.algorithm, batch, churn=churn)
    table = run.cache.table
    over = int(((table.requested_of("cpu") > table.allocatable_of("cpu"))
                | (table.requested_of("pods") > table.allocatable_of("pods"))).sum())
    return {"init_pods_unplaced": run.unplaced_init, "overcommitted_nodes": over, **timed}


# ---- end to end ---------------------------------------------------------------------------

# The 50 warm-up pods (default pods, in a namespace of their own so no selector of the workload counts them).
WARMUP_NAMESPACE = "bench-warmup"
WARMUP_PODS = 50


def e2e_loader(run: Run):
    """For e2e.run_e2e: the run's nodes, objects and init pods bound where the engine put them, the measured
    pods held, and the warm-up pods."""
    from . import e2e

    def load() -> e2e.Loaded:
        w = run.workload
        measured = run.measured()
        warmup = [pod_manifest(POD_DEFAULT, WARMUP_NAMESPACE, f"warm-{i}") for i in range(WARMUP_PODS)]
        extra = _namespaces(w.init_namespace, w.measured_namespace, *((w.churn.namespace,) if w.churn else ()))
        keys = e2e.load_manifests(nodes=run.node_manifests, placed=run.placed, pending=measured + warmup,
                                  held=len(measured), objects=[*w.objects, *_namespaces(WARMUP_NAMESPACE),
                                                               *(extra if w.churn else ())])
        churn = None
        if w.churn is not None:
            churn = e2e.ChurnLoad(make=run.churned, interval=w.churn.interval, namespace=w.churn.namespace)
        return e2e.Loaded(measured=keys[:len(measured)], warmup=keys[len(measured):],
                          namespaces=(w.measured_namespace, WARMUP_NAMESPACE), churn=churn)

    return load


def run_workload(w: Workload, *, case: Case, e2e_case: Case | None, engine_runs: int = 3, workers: int = 2,
                 seed: int = 0, progress=None) -> dict:
    """The engine (the median of `engine_runs`) on `case`, then, unless `e2e_case` is None, end to end on it:
    one JSON-ready dict with upstream's threshold beside the figures."""
    from . import e2e

    say = progress or (lambda msg: None)
    threshold, threshold_case = w.threshold
    result = {"workload": w.name, "case": case.name, "nodes": case.nodes, "placed": case.init_pods,
              "pods": case.measure_pods, "upstream_threshold_pods_per_s": threshold,
              "upstream_threshold_case": threshold_case, "upstream_config": w.source}
    runs = [run_engine(w, case, seed, progress=say) for _ in range(max(1, engine_runs))]
    engine = sorted(runs, key=lambda r: r["pods_per_second"] or 0)[len(runs) // 2]
    result.update({
        "engine_pods_per_s": engine["pods_per_second"],
        "engine_runs_pods_per_s": [r["pods_per_second"] for r in runs],
        "engine_pods_per_cpu_s": engine["pods_per_cpu_second"],
        "engine_p50_ms": engine["latency_ms"]["p50"],
        "engine_p99_ms": engine["latency_ms"]["p99"],
        "engine_scheduled": engine["scheduled"],
        "engine_batched_pods": engine["batched"],
        "engine_overcommitted_nodes": engine["overcommitted_nodes"],
        "init_pods_unplaced": engine["init_pods_unplaced"],
    })
    if w.churn is not None:
        result.update({f"engine_{k}": engine[k] for k in perf.Churn(None, 0).report()})
    if e2e_case is not None:
        run = prepare(w, e2e_case, seed, say)
        say(f"e2e {w.name}/{e2e_case.name}: {e2e_case.measure_pods} pods, {workers} worker processes")
        result.update({"e2e_case": e2e_case.name, "e2e_nodes": e2e_case.nodes, "e2e_placed": e2e_case.init_pods,
                       "e2e_pods": e2e_case.measure_pods})
        result.update(e2e.run_e2e(nodes=e2e_case.nodes, placed=e2e_case.init_pods, pods=e2e_case.measure_pods,
                                  workers=workers, seed=seed, progress=say, loader=e2e_loader(run)))
    return result
