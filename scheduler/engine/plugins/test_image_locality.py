"""ImageLocality: the table of kube-scheduler master's image_locality_test.go (init containers
count, thresholds scale with the number of containers), each case also checked against the
per-node reference; then a hypothesis property."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine.nodes import ImageState, NodeSpec, NodeTable
from scheduler.engine.plugins.image_locality import ImageLocality, normalized_image_name
from scheduler.engine.pods import Container, PodSpec
from scheduler.engine.reference import resources as ref

MB = 1024 * 1024


def pod(*images: str, init: tuple[str, ...] = ()) -> PodSpec:
    return PodSpec(
        "default", "p",
        containers=tuple(Container(f"c{i}", image=im) for i, im in enumerate(images)),
        init_containers=tuple(Container(f"i{i}", image=im) for i, im in enumerate(init)),
    )


def images(*entries: tuple[tuple[str, ...], int]) -> tuple[ImageState, ...]:
    return tuple(ImageState(names=names, size=size * MB) for names, size in entries)


NODE_40_300_2000 = images((("gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"), 40),
                          (("gcr.io/300:latest", "gcr.io/300:v1"), 300), (("gcr.io/2000:latest",), 2000))
NODE_250_10 = images((("gcr.io/250:latest",), 250), (("gcr.io/10:latest", "gcr.io/10:v1"), 10))
NODE_600_40_900 = images((("gcr.io/600:latest",), 600), (("gcr.io/40:latest",), 40), (("gcr.io/900:latest",), 900))
NODE_300_600_900 = images((("gcr.io/300:latest",), 300), (("gcr.io/600:latest",), 600), (("gcr.io/900:latest",), 900))
NODE_4000_30 = images((("gcr.io/4000:latest",), 4000), (("gcr.io/30:latest",), 30))
NODE_20_30_40 = images((("gcr.io/20:latest",), 20), (("gcr.io/30:latest",), 30), (("gcr.io/40:latest",), 40))
NO_IMAGES: tuple[ImageState, ...] = ()


def nodes(*imgs) -> list[NodeSpec]:
    return [NodeSpec(f"node{i + 1}", images=im) for i, im in enumerate(imgs)]


def run_score(p: PodSpec, specs: list[NodeSpec]) -> list[int]:
    table = NodeTable(specs)
    got = ImageLocality().score(p, table, np.arange(table.n))
    assert got.dtype == np.int64
    assert list(got) == [ref.image_locality_score(p, s, specs) for s in specs]
    return [int(x) for x in got]


CASES = [
    ("two images spread on two nodes, prefer the larger image one", pod("gcr.io/40", "gcr.io/250"),
     nodes(NODE_40_300_2000, NODE_250_10), [0, 5]),
    ("two images on one node, prefer this node", pod("gcr.io/40", "gcr.io/300"),
     nodes(NODE_40_300_2000, NODE_250_10), [7, 0]),
    ("if exceed limit, use limit", pod("gcr.io/10", "gcr.io/4000"), nodes(NODE_4000_30, NODE_250_10), [100, 0]),
    ("if exceed limit, use limit (with node which has no images present)", pod("gcr.io/10", "gcr.io/4000"),
     nodes(NODE_4000_30, NODE_250_10, NO_IMAGES), [66, 0, 0]),
    ("pod with multiple large images, node2 is preferred", pod("gcr.io/300", "gcr.io/600", "gcr.io/900"),
     nodes(NODE_600_40_900, NODE_300_600_900, NO_IMAGES), [32, 36, 0]),
    ("pod with multiple small images", pod("gcr.io/30", "gcr.io/40"), nodes(NODE_20_30_40, NODE_4000_30), [1, 0]),
    ("include InitContainers: two images spread on two nodes, prefer the larger image one",
     pod("gcr.io/30", init=("gcr.io/300",)), nodes(NODE_40_300_2000, NODE_20_30_40), [6, 0]),
]


@pytest.mark.parametrize("name,p,specs,want", CASES, ids=[c[0] for c in CASES])
def test_it_scores_as_upstream(name, p, specs, want):
    assert run_score(p, specs) == want


@pytest.mark.parametrize("name,want", [
    ("root", "root:latest"),
    ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
    ("root:tag", "root:tag"),
    ("root@sha256:" + "ab" * 32, "root@sha256:" + "ab" * 32),
])
def test_normalized_image_name_matches_upstream(name, want):
    assert normalized_image_name(name) == want
    assert ref.normalized_image_name(name) == want


def test_it_scores_only_the_candidate_rows_but_counts_every_node():
    specs = nodes(NODE_4000_30, NODE_250_10, NO_IMAGES)
    got = ImageLocality().score(pod("gcr.io/10", "gcr.io/4000"), NodeTable(specs), np.array([2, 0]))
    assert list(got) == [0, 66]


def test_a_pod_without_containers_scores_zero():
    assert run_score(PodSpec("d", "p"), nodes(NODE_4000_30)) == [0]


# ---- property: engine == reference ----------------------------------------------------------

IMAGE_NAMES = ["a", "a:latest", "a:v1", "reg:5000/b", "reg:5000/b:latest", "c@sha256:00", "d:latest"]


@st.composite
def scenario(draw):
    n = draw(st.integers(1, 6))
    specs = []
    for i in range(n):
        entries = draw(st.lists(st.tuples(st.lists(st.sampled_from(IMAGE_NAMES), min_size=1, max_size=3),
                                          st.integers(0, 3000 * MB)), max_size=6))
        specs.append(NodeSpec(f"n{i}", images=tuple(ImageState(tuple(ns), size) for ns, size in entries)))
    p = PodSpec("d", "p",
                containers=tuple(Container(f"c{i}", image=im) for i, im in
                                 enumerate(draw(st.lists(st.sampled_from(IMAGE_NAMES), min_size=1, max_size=3)))),
                init_containers=tuple(Container(f"i{i}", image=im) for i, im in
                                      enumerate(draw(st.lists(st.sampled_from(IMAGE_NAMES), max_size=2)))))
    return p, specs


@settings(max_examples=300, deadline=None)
@given(scenario())
def test_engine_agrees_with_reference(case):
    p, specs = case
    assert all(0 <= s <= 100 for s in run_score(p, specs))
