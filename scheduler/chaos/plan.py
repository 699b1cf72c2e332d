"""The seeded plan of one chaos run: the nodes, the pods (their shapes, arrival, deletion, resize,
injected bind failures), the faults and the hostile manifests, each at a time in seconds from the
start of the run. Pure: the same arguments and seed give the same plan, so a run that found a
violation can be repeated fault for fault (timing on a shared machine still varies).

The cluster is sized so that it ends about 80 % full in cpu and memory, with GPU and host-port pods
slightly more numerous than the room for them, and a quarter of the nodes holding a pod that arrived
already bound: nodes fill up, reservations conflict, and a lost or corrupted usage delta shows as an
overcommitted node rather than as spare room nobody notices.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace

from ..backends.simulated import FAIL_BINDS_ANNOTATION

NAMESPACE = "chaos"
WARMUP_NAMESPACE = "chaos-warmup"
HOSTILE_NAMESPACE = "chaos-hostile"
GPU = "example.com/gpu"
HOST_PORT = 8080

MI = 1024 * 1024
GI = 1024 * MI
NODE_CPU_M, NODE_MEMORY, NODE_EPHEMERAL, NODE_PODS, NODE_GPUS = 4000, 32 * GI, 100 * GI, 110, 2

PLAIN, GPU_POD, PORT, HUGE, PREBOUND = "plain", "gpu", "port", "huge", "prebound"
# Memory past 2^31 bytes (where a usage delta sent as a 32-bit integer would wrap) for the pods whose
# room is counted one pod at a time: those arriving already bound (another scheduler's, a DaemonSet's),
# and the GPU and host-port pods (extended resources and ports are reserved pod by pod).
PREBOUND_MEMORY, GPU_POD_MEMORY, PORT_POD_MEMORY = 3 * GI, 3 * GI, 5 * GI // 2

WORKER_KILL, REDIS_FLUSH, POSTGRES_OUTAGE = "worker_kill", "redis_flush", "postgres_outage"
APISERVER_RESTART, LEADER_KILL = "apiserver_restart", "leader_kill"
# Where in the run (fractions of its duration) each of the big faults falls; worker kills are spread
# over KILL_BAND and kept a quiet gap away from these, so each recovery is measured on its own.
BANDS = {
    APISERVER_RESTART: (0.18, 0.28),
    POSTGRES_OUTAGE: (0.30, 0.45),
    REDIS_FLUSH: (0.50, 0.62),
    LEADER_KILL: (0.68, 0.80),
}
KILL_BAND = (0.08, 0.85)
HOSTILE_BAND = (0.05, 0.80)
DELETE_SHARE, RESIZE_SHARE = 0.03, 0.03


@dataclass(frozen=True)
class NodePlan:
    name: str
    gpus: int = 0

    @property
    def allocatable(self) -> dict[str, int]:
        out = {"cpu": NODE_CPU_M, "memory": NODE_MEMORY, "ephemeral-storage": NODE_EPHEMERAL, "pods": NODE_PODS}
        if self.gpus:
            out[GPU] = self.gpus
        return out

    def manifest(self) -> dict:
        alloc = {"cpu": str(NODE_CPU_M // 1000), "memory": f"{NODE_MEMORY // GI}Gi",
                 "ephemeral-storage": f"{NODE_EPHEMERAL // GI}Gi", "pods": str(NODE_PODS)}
        if self.gpus:
            alloc[GPU] = str(self.gpus)
        labels = {"kubernetes.io/hostname": self.name, **({"schedboard.io/gpu": "true"} if self.gpus else {})}
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.name, "labels": labels},
                "status": {"allocatable": alloc, "capacity": dict(alloc)}}


@dataclass(frozen=True)
class PodPlan:
    name: str
    kind: str
    cpu_m: int
    memory: int
    ephemeral: int = 0
    gpus: int = 0
    host_port: int = 0
    node_name: str = ""  # set for a pod that arrives bound
    fail_binds: int = 0  # the first N bindings are refused (injected)
    arrive_s: float = 0.0
    delete_s: float | None = None
    resize_s: float | None = None  # re-applied, while probably still pending, with twice the cpu

    @property
    def key(self) -> str:
        return f"{NAMESPACE}/{self.name}"

    @property
    def requests(self) -> dict[str, int]:
        """What the pod takes from its node, in the units NodePlan.allocatable uses (and the pod itself)."""
        out = {"cpu": self.cpu_m, "memory": self.memory, "pods": 1}
        if self.ephemeral:
            out["ephemeral-storage"] = self.ephemeral
        if self.gpus:
            out[GPU] = self.gpus
        return out

    def resized(self) -> PodPlan:
        return replace(self, cpu_m=self.cpu_m * 2, resize_s=None)

    def manifest(self, *, scheduler_name: str = "default-scheduler") -> dict:
        requests = {"cpu": f"{self.cpu_m}m", "memory": f"{self.memory // MI}Mi"}
        if self.ephemeral:
            requests["ephemeral-storage"] = f"{self.ephemeral // MI}Mi"
        limits = {}
        if self.gpus:
            requests[GPU] = str(self.gpus)
            limits[GPU] = str(self.gpus)  # extended resources need limits = requests
        container = {"name": "app", "image": "registry.k8s.io/pause:3.10",
                     "resources": {"requests": requests, **({"limits": limits} if limits else {})}}
        if self.host_port:
            container["ports"] = [{"containerPort": 80, "hostPort": self.host_port, "protocol": "TCP"}]
        meta = {"name": self.name, "namespace": NAMESPACE, "labels": {"app": "chaos", "shape": self.kind}}
        if self.fail_binds:
            meta["annotations"] = {FAIL_BINDS_ANNOTATION: str(self.fail_binds)}
        spec = {"schedulerName": scheduler_name, "containers": [container]}
        if self.node_name:
            spec["nodeName"] = self.node_name
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


@dataclass(frozen=True)
class Fault:
    at_s: float
    kind: str
    target: int = 0  # which worker, for a worker kill


@dataclass(frozen=True)
class HostileApply:
    at_s: float
    kind: str  # a name in hostile.CATALOGUE
    index: int  # makes the object names of this apply unique


@dataclass
class Plan:
    seed: int
    duration_s: float
    nodes: list[NodePlan]
    pods: list[PodPlan]
    faults: list[Fault]
    hostile: list[HostileApply]
    counts: dict[str, int] = field(default_factory=dict)

    def pods_by_name(self) -> dict[str, PodPlan]:
        return {p.name: p for p in self.pods}


def _sizes(pods: int, nodes: int) -> dict[str, int]:
    gpu_nodes = max(1, nodes // 10)
    gpu = min(pods // 10, math.ceil(1.25 * NODE_GPUS * gpu_nodes))
    port = min(pods // 5, math.ceil(1.1 * nodes))
    huge = max(1, pods // 200) if pods >= 20 else 0
    prebound = min(pods // 20, max(1, nodes // 4)) if pods >= 20 else 0
    return {"gpu_nodes": gpu_nodes, GPU_POD: gpu, PORT: port, HUGE: huge, PREBOUND: prebound,
            PLAIN: pods - gpu - port - huge - prebound}


def _spread(rng: random.Random, band: tuple[float, float], count: int, duration: float) -> list[float]:
    """`count` times in `band` (fractions of the duration), one in each equal slice of it."""
    lo, hi = band
    width = (hi - lo) / max(count, 1)
    return [round(duration * (lo + width * (i + rng.random())), 3) for i in range(count)]


def make_plan(*, pods: int, nodes: int, duration: float, seed: int, workers: int = 2, kills: int = 20,
              redis_flushes: int = 1, postgres_outages: int = 1, apiserver_restarts: int = 0, leader_kills: int = 0,
              hostile: int = 0, hostile_kinds: list[str] | None = None, bind_failure_share: float = 0.2,
              resizes: bool = True) -> Plan:
    if pods < 1 or nodes < 1 or duration <= 0:
        raise ValueError("pods, nodes and duration must be positive")
    rng = random.Random(seed)
    sizes = _sizes(pods, nodes)
    node_plans = [NodePlan(f"node-{i:04d}", gpus=NODE_GPUS if i < sizes["gpu_nodes"] else 0) for i in range(nodes)]

    kinds = [GPU_POD] * sizes[GPU_POD] + [PORT] * sizes[PORT] + [HUGE] * sizes[HUGE] + [PLAIN] * sizes[PLAIN]
    rng.shuffle(kinds)
    kinds = [PREBOUND] * sizes[PREBOUND] + kinds  # the pods already bound arrive first, one per node
    # Plain and port pods share what is left of 80 % of the cluster's cpu; plain pods what is left of 80 %
    # of its memory.
    sized = max(1, sizes[PLAIN] + sizes[PORT])
    mean_cpu = max(20, min(2000, int((0.8 * NODE_CPU_M * nodes - 500 * sizes[GPU_POD] - 100 * sizes[PREBOUND]) / sized)))
    mean_memory = max(16 * MI, min(8 * GI, int((0.8 * NODE_MEMORY * nodes - GPU_POD_MEMORY * sizes[GPU_POD]
                                                - PORT_POD_MEMORY * sizes[PORT] - PREBOUND_MEMORY * sizes[PREBOUND])
                                               / max(1, sizes[PLAIN]))))
    failing = set(rng.sample(range(pods), round(bind_failure_share * pods)))
    pod_plans = []
    for i, kind in enumerate(kinds):
        scale = rng.choice((0.5, 1.0, 1.5))
        cpu = max(10, int(mean_cpu * scale) // 10 * 10)
        memory = max(MI, int(mean_memory * rng.choice((0.5, 1.0, 1.5))) // MI * MI)
        ephemeral = GI if rng.random() < 0.2 else 0
        gpus, port, node_name = 0, 0, ""
        if kind == PREBOUND:
            cpu, memory, ephemeral, node_name = 100, PREBOUND_MEMORY, 0, node_plans[i % nodes].name
        elif kind == GPU_POD:
            cpu, memory, gpus = 500, GPU_POD_MEMORY, 1
        elif kind == PORT:
            memory, port = PORT_POD_MEMORY, HOST_PORT
        elif kind == HUGE:
            cpu = 64 * NODE_CPU_M  # fits no node: stays pending with a reason
        fail_binds = (2 if rng.random() < 0.25 else 1) if i in failing and kind != PREBOUND else 0
        arrive = 0.0 if kind == PREBOUND else round(duration * i / pods, 3)
        delete = resize = None
        if kind not in (HUGE, PREBOUND) and rng.random() < DELETE_SHARE:
            delete = round(min(duration, arrive + rng.uniform(3.0, 15.0)), 3)
        elif resizes and kind == PLAIN and rng.random() < RESIZE_SHARE:
            resize = round(arrive + rng.uniform(0.05, 1.0), 3)
        pod_plans.append(PodPlan(f"pod-{i:05d}", kind, cpu, memory, ephemeral, gpus, port, node_name, fail_binds,
                                 arrive, delete, resize))

    big = []
    for kind, count in ((APISERVER_RESTART, apiserver_restarts), (POSTGRES_OUTAGE, postgres_outages),
                        (REDIS_FLUSH, redis_flushes), (LEADER_KILL, leader_kills)):
        big += [Fault(t, kind) for t in _spread(rng, BANDS[kind], count, duration)]
    quiet = max(2.0, min(8.0, 0.04 * duration))
    kill_times: list[float] = []
    tries = 0
    while len(kill_times) < kills:
        t = round(rng.uniform(KILL_BAND[0] * duration, KILL_BAND[1] * duration), 3)
        tries += 1
        # Keep the quiet gap around big faults, unless the run is too short to have room for it.
        if tries < 1000 * max(kills, 1) and any(abs(t - f.at_s) < quiet for f in big):
            continue
        kill_times.append(t)
    faults = big + [Fault(t, WORKER_KILL, target=rng.randrange(max(workers, 1))) for t in kill_times]
    faults.sort(key=lambda f: (f.at_s, f.kind))

    catalogue = list(hostile_kinds or [])
    order = []
    while catalogue and len(order) < hostile:
        batch = catalogue[:]
        rng.shuffle(batch)
        order += batch
    times = sorted(round(rng.uniform(HOSTILE_BAND[0] * duration, HOSTILE_BAND[1] * duration), 3)
                   for _ in range(hostile if catalogue else 0))
    hostile_plan = [HostileApply(t, kind, i) for i, (t, kind) in enumerate(zip(times, order[:hostile]))]

    counts = dict(sizes)
    counts.update({"bind_failure_pods": sum(p.fail_binds > 0 for p in pod_plans),
                   "deletions": sum(p.delete_s is not None for p in pod_plans),
                   "resizes": sum(p.resize_s is not None for p in pod_plans)})
    return Plan(seed=seed, duration_s=duration, nodes=node_plans, pods=pod_plans, faults=faults,
                hostile=hostile_plan, counts=counts)
