"""The built-in demo cluster: a few zones of mixed nodes (taints, labels, a GPU pool, a cordoned
node) and a steady trickle of pods, some unschedulable on purpose, some that finish."""

from __future__ import annotations

import random
import zlib

ZONES = ("zone-a", "zone-b", "zone-c")
SIZES = {  # instance type -> (cpu, memory)
    "small": ("2", "4Gi"),
    "medium": ("4", "16Gi"),
    "large": ("16", "64Gi"),
}
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
        spec["priority"] = 1000
    meta: dict = {"name": name, "namespace": rng.choice(["default", "default", "shop", "batch"]),
                  "labels": {"app": name.split("-")[0]}}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
