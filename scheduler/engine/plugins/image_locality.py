"""ImageLocality: favours nodes that already hold the pod's container images.

As kube-scheduler's imagelocality/image_locality.go in master: init containers count too, each
image found on a node adds its size scaled by the share of nodes holding it, and the sum is
clamped to [23MB, 1000MB x number of containers] and mapped to [0, MaxNodeScore].
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..nodes import NodeTable
from ..pods import PodSpec
from ..resources import MAX_NODE_SCORE

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """As normalizedImageName: add ":latest" unless a ':' follows the last '/' (a tag or digest)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def scaled_image_score(size: int, num_nodes: int, total_nodes: int) -> int:
    """As scaledImageScore: int64(float64(size) * (float64(numNodes) / float64(totalNumNodes)))."""
    spread = float(num_nodes) / float(total_nodes)
    return int(float(size) * spread)


class ImageLocality:
    name: ClassVar[str] = "ImageLocality"

    def score(self, pod: PodSpec, nodes: NodeTable, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        containers = pod.init_containers + pod.containers
        sums = np.zeros(nodes.n, dtype=np.int64)
        for c in containers:
            held = nodes.images.get(normalized_image_name(c.image))
            if held is None:
                continue
            image_rows, sizes = held
            holders = np.unique(image_rows)  # a node listing a name twice counts once (a set upstream)
            # As the scheduler cache: an image's size is the one first reported for that name.
            size = int(sizes[0])
            sums[holders] += scaled_image_score(size, len(holders), nodes.n)
        return calculate_priority(sums[rows], len(containers))

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        return scores


def calculate_priority(sums: np.ndarray, num_containers: int) -> np.ndarray:
    """As calculatePriority, over an int64 array."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    clamped = np.where(sums < MIN_THRESHOLD, MIN_THRESHOLD, np.where(sums > max_threshold, max_threshold, sums))
    span = max_threshold - MIN_THRESHOLD
    if span <= 0:
        # No containers: every sum clamps to the minimum, and Go's 0 / -23MB is 0.
        return np.zeros(len(sums), dtype=np.int64)
    return (MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // span).astype(np.int64)
