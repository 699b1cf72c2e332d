"""The built-in demo cluster: a few zones of mixed nodes (taints, labels, a GPU pool, a cordoned
node), workloads that exercise PodTopologySpread and InterPodAffinity, and a steady trickle of pods,
some unschedulable on purpose, some that finish."""

from __future__ import annotations

import random
import zlib

ZONES = ("zone-a", "zone-b", "zone-c")
SIZES = {  # instance type -> (cpu, memory)
    "small": ("2", "4Gi"),
    "medium": ("4", "16Gi"),
    "large": ("16", "64Gi"),
}
# The trickle's namespaces (the demo's finished pods are deleted only from these: the workloads below stay).
TRICKLE_NAMESPACES = ("default", "default", "shop", "batch")
DEMO_NAMESPACE = "storefront"
MONITORING_NAMESPACE = "monitoring"
ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"
# The trickle's urgent pods name this class (Priority admission gives them its value); the others get 0.
DEMO_HIGH_PRIORITY_CLASS = "demo-high"
IMAGES = ["nginx:1.27", "redis:7.4", "postgres:17", "python:3.11-slim", "busybox:1.36"]


def _node(name: str, zone: str, size: str, *, gpu: int = 0, cordoned: bool = False, disk: str = "ssd") -> dict:
    cpu, memory = SIZES[size]
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "100Gi"}
    spec: dict = {}
    if gpu:
        allocatable["nvidia.com/gpu"] = str(gpu)
        spec["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    if cordoned:
        spec["unschedulable"] = True
        spec.setdefault("taints", []).append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    images = [{"names": [image], "sizeBytes": 50_000_000 + 40_000_000 * i} for i, image in enumerate(IMAGES) if zlib.crc32(f"{name}:{i}".encode()) % 2]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "topology.kubernetes.io/zone": zone,
            "node.kubernetes.io/instance-type": size,
            "disktype": disk,
        }},
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": dict(allocatable), "images": images,
                   "nodeInfo": {"kubeletVersion": "v1.34.0-schedboard"}},
    }


def seed_nodes() -> list[dict]:
    nodes = []
    sizes = ["small", "medium", "medium", "large"]
    for z, zone in enumerate(ZONES):
        for i, size in enumerate(sizes):
            nodes.append(_node(f"{zone}-{size}-{i}", zone, size, disk="hdd" if i == 0 else "ssd"))
    nodes.append(_node("gpu-0", "zone-a", "large", gpu=2))
    nodes.append(_node("gpu-1", "zone-b", "large", gpu=2))
    nodes.append(_node("maintenance-0", "zone-c", "medium", cordoned=True))
    return nodes


def trickle_pod(i: int, rng: random.Random) -> dict:
    """Pod number i of the demo trickle."""
    kind = rng.random()
    name = f"demo-{i:05d}"
    cpu = rng.choice(["100m", "250m", "500m", "1"])
    memory = rng.choice(["128Mi", "256Mi", "512Mi", "1Gi", "2Gi"])
    spec: dict = {"containers": [{"name": "app", "image": rng.choice(IMAGES),
                                  "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    annotations = {}
    if kind < 0.04:
        spec["containers"][0]["resources"]["requests"]["cpu"] = "64"  # no node is that big
        name = f"huge-{i:05d}"
    elif kind < 0.07:
        spec["nodeSelector"] = {"disktype": "nvme"}  # no such disks in this cluster
        name = f"nvme-{i:05d}"
    elif kind < 0.12:
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        spec["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
        spec["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
        name = f"train-{i:05d}"
    elif kind < 0.25:
        zone = rng.choice(ZONES)
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "preference": {"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}}]}}
    elif kind < 0.28:
        annotations["schedboard.io/fail-binds"] = "1"  # the first binding fails: watch the retry
        name = f"flaky-{i:05d}"
    if rng.random() < 0.2:
        spec["priorityClassName"] = DEMO_HIGH_PRIORITY_CLASS  # priority 1000, as admission resolves it
    meta: dict = {"name": name, "namespace": rng.choice(TRICKLE_NAMESPACES),
                  "labels": {"app": name.split("-")[0]}}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


# ---- the workloads that exercise PodTopologySpread and InterPodAffinity ---------------------------

def _container(name: str, image: str, cpu: str, memory: str) -> dict:
    return {"name": name, "image": image, "resources": {"requests": {"cpu": cpu, "memory": memory}}}


def _pod(name: str, namespace: str, labels: dict, spec: dict, **meta) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels, **meta},
            "spec": spec}


def demo_objects(nodes: list[dict]) -> list[dict]:
    """Applied before the demo's pods: the namespaces (with labels, for namespaceSelector), the ReplicaSet
    "web" whose template spreads over zones (its controller creates the pods), the StatefulSet "cache", and
    a node agent bound on every node, as a DaemonSet's pods would be."""
    web_template = {
        "metadata": {"labels": {"app": "web", "tier": "frontend"}},
        "spec": {"containers": [_container("nginx", "nginx:1.27", "250m", "256Mi")],
                 # Two per zone for six replicas: a zone may hold at most one more than the emptiest.
                 "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE_KEY, "whenUnsatisfiable": "DoNotSchedule",
                                                "labelSelector": {"matchLabels": {"app": "web"}}}]},
    }
    # As a DaemonSet's agents usually run: system-node-critical, so no trickle pod ever preempts them.
    agents = [_pod(f"node-agent-{n['metadata']['name']}", "kube-system", {"app": "node-agent"},
                   {"nodeName": n["metadata"]["name"], "priorityClassName": "system-node-critical",
                    "containers": [_container("agent", "busybox:1.36", "50m", "64Mi")]})
              for n in nodes]
    return [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": DEMO_HIGH_PRIORITY_CLASS},
         "value": 1000, "description": "The demo's urgent pods: they may preempt the others."},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DEMO_NAMESPACE, "labels": {"team": "storefront", "env": "demo"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MONITORING_NAMESPACE, "labels": {"team": "observability"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": DEMO_NAMESPACE},
         "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}}, "template": web_template}},
        # Its controller creates its pods (with the revision label it then keeps them at); Parallel, so its
        # first pass creates all three at once instead of one each time the previous is Ready.
        {"apiVersion": "apps/v1", "kind": "StatefulSet",
         "metadata": {"name": "cache", "namespace": DEMO_NAMESPACE},
         "spec": {"replicas": 3, "serviceName": "cache", "podManagementPolicy": "Parallel",
                  "selector": {"matchLabels": {"app": "cache"}},
                  "template": {"metadata": {"labels": {"app": "cache"}}, "spec": _cache_spec()}}},
        *agents,
    ]


def _cache_spec() -> dict:
    # One cache per host: required anti-affinity to the other caches by hostname.
    return {"containers": [_container("redis", "redis:7.4", "500m", "1Gi")],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": HOSTNAME_KEY}]}}}


def demo_pods() -> list[dict]:
    """Applied after the controllers' pods (the ReplicaSet's and the StatefulSet's), in this order:
    "cache-exporter" that must share a host with a cache (found through its namespace's labels), and
    "loner", anti-affine to every pod in every namespace, which no node can take (each holds a node agent)."""
    exporter = _pod("cache-exporter", MONITORING_NAMESPACE, {"app": "cache-exporter"}, {
        "containers": [_container("exporter", "busybox:1.36", "100m", "64Mi")],
        "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": HOSTNAME_KEY,
             "namespaceSelector": {"matchLabels": {"team": "storefront"}}}]}}})
    loner = _pod("loner", DEMO_NAMESPACE, {"app": "loner"}, {
        "containers": [_container("app", "busybox:1.36", "100m", "64Mi")],
        # An empty selector matches every pod, an empty namespaceSelector every namespace.
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {}, "namespaceSelector": {}, "topologyKey": HOSTNAME_KEY}]}}})
    return [exporter, loner]
