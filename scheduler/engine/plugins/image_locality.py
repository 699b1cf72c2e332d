"""ImageLocality: favours nodes that already hold the pod's container images.

As kube-scheduler's imagelocality/image_locality.go in master: init containers count too, each
image found on a node adds its size scaled by the share of nodes holding it, and the sum is
clamped to [23MB, 1000MB x number of containers] and mapped to [0, MaxNodeScore].
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..nodes import NodeTable
from ..pods import PodSpec, derived
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
    usage_dependent: ClassVar[bool] = False  # the nodes' images only
    score_extensions: ClassVar[bool] = False  # no NormalizeScore

    def sign(self, pod: PodSpec, nodes: NodeTable):
        """The pod's signature element (KEP-5598): its containers' images, init containers first
        (their number sets the score's upper threshold)."""
        init = pod.init_containers
        return (tuple([c.image for c in init]) if init else ()), tuple([c.image for c in pod.containers])

    def score(self, pod: PodSpec, nodes: NodeTable, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        containers = pod.init_containers + pod.containers
        names = derived(pod, "ImageLocality", (pod.init_containers, pod.containers), lambda: [normalized_image_name(c.image) for c in containers])
        sums = None
        for name in names:
            held = image_spread(nodes, name)
            if held is None:
                continue
            holders, score = held
            if sums is None:
                sums = np.zeros(nodes.n, dtype=np.int64)
            sums[holders] += score
        if sums is None:
            # No image of the pod is on any node: every sum is 0, clamped to the minimum threshold,
            # which calculatePriority maps to 0.
            return np.zeros(len(rows), dtype=np.int64)
        return calculate_priority(sums[rows], len(containers))

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        return scores


def image_spread(nodes: NodeTable, name: str) -> tuple[np.ndarray, int] | None:
    """(the rows holding image `name`, its scaled score), or None when no node holds it.

    Depends only on the table's static image columns, so it is kept on the table.
    """
    memo = nodes.__dict__.setdefault("_image_spread", {})
    if name in memo:
        return memo[name]
    held = nodes.images.get(name)
    if held is None:
        value = None
    else:
        image_rows, sizes = held
        holders = np.unique(image_rows)  # a node listing a name twice counts once (a set upstream)
        # As the scheduler cache: an image's size is the one first reported for that name.
        value = (holders, scaled_image_score(int(sizes[0]), len(holders), nodes.n))
    memo[name] = value
    return value


def calculate_priority(sums: np.ndarray, num_containers: int) -> np.ndarray:
    """As calculatePriority, over an int64 array."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    clamped = np.where(sums < MIN_THRESHOLD, MIN_THRESHOLD, np.where(sums > max_threshold, max_threshold, sums))
    span = max_threshold - MIN_THRESHOLD
    if span <= 0:
        # No containers: every sum clamps to the minimum, and Go's 0 / -23MB is 0.
        return np.zeros(len(sums), dtype=np.int64)
    return (MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // span).astype(np.int64)
