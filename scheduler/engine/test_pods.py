"""PodSpec's requests as resource.PodRequests computes them, pod-level resources (PodLevelResources) included.

Cases follow component-helpers/resource/helpers_test.go and the KEP-2837 rules: pod-level requests for
the resources they name (cpu, memory, hugepages-*) replace what the containers add up to; other
resources still come from the containers; overhead comes on top of either.
"""

import pytest

from .pods import Container, PodSpec, pod_requests
from .resources import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST

Gi = 1 << 30


def c(name, **requests):
    return Container(name=name, requests={k.replace("_", "-"): v for k, v in requests.items()})


def sidecar(name, **requests):
    return Container(name=name, requests=requests, restart_policy="Always")


CASES = [
    ("no pod-level resources: the containers' sum",
     [c("a", cpu=1000, memory=5), c("b", cpu=4000, memory=12)], [], {}, {}, {"cpu": 5000, "memory": 17}),
    ("pod-level cpu and memory replace the containers' sum",
     [c("a", cpu=1000, memory=Gi), c("b", cpu=1000, memory=Gi)], [], {}, {"cpu": 4000, "memory": 4 * Gi},
     {"cpu": 4000, "memory": 4 * Gi}),
    ("pod-level cpu only: memory still comes from the containers",
     [c("a", cpu=1000, memory=Gi), c("b", memory=2 * Gi)], [], {}, {"cpu": 3000}, {"cpu": 3000, "memory": 3 * Gi}),
    ("resources pod level cannot name still come from the containers",
     [c("a", cpu=100, ephemeral_storage=10, **{"example.com/gpu": 1})], [], {}, {"cpu": 2000},
     {"cpu": 2000, "ephemeral-storage": 10, "example.com/gpu": 1}),
    ("a larger init container does not matter once the pod sets cpu",
     [c("a", cpu=1000)], [c("init", cpu=8000, memory=Gi)], {}, {"cpu": 2000}, {"cpu": 2000, "memory": Gi}),
    ("sidecars count in the containers' sum, which pod-level requests replace",
     [c("a", cpu=1000)], [sidecar("s", cpu=1000)], {}, {"cpu": 4000}, {"cpu": 4000}),
    ("overhead comes on top of pod-level requests",
     [c("a", cpu=1000)], [], {"cpu": 250, "memory": Gi}, {"cpu": 2000, "memory": 2 * Gi}, {"cpu": 2250, "memory": 3 * Gi}),
    ("pod-level hugepages replace the containers' hugepages",
     [c("a", cpu=1000, **{"hugepages-2Mi": 2 << 20})], [], {}, {"hugepages-2Mi": 8 << 20},
     {"cpu": 1000, "hugepages-2Mi": 8 << 20}),
]


@pytest.mark.parametrize("containers, init, overhead, pod_level, expected",
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_pod_requests_with_pod_level_resources(containers, init, overhead, pod_level, expected):
    assert pod_requests(containers, init, overhead, pod_level) == expected
    pod = PodSpec("default", "p", containers=tuple(containers), init_containers=tuple(init), overhead=overhead,
                  pod_level_requests=pod_level)
    assert pod.requests == {**expected, "pods": 1}


NONZERO = [
    # As calculateResourceAllocatableRequest / NodeInfo's non0 requests: a container without a cpu or memory
    # request counts the defaults, then a pod-level request replaces the sum for what it names.
    ("no requests anywhere: the defaults", [c("a"), c("b")], {},
     {"cpu": 2 * DEFAULT_MILLI_CPU_REQUEST, "memory": 2 * DEFAULT_MEMORY_REQUEST}),
    ("pod-level cpu and memory: those, whatever the containers say", [c("a"), c("b")], {"cpu": 1500, "memory": Gi},
     {"cpu": 1500, "memory": Gi}),
    ("pod-level cpu only: memory defaults per container", [c("a"), c("b", memory=Gi)], {"cpu": 1500},
     {"cpu": 1500, "memory": DEFAULT_MEMORY_REQUEST + Gi}),
    ("pod-level memory only: cpu defaults per container", [c("a", cpu=300), c("b")], {"memory": Gi},
     {"cpu": 300 + DEFAULT_MILLI_CPU_REQUEST, "memory": Gi}),
]


@pytest.mark.parametrize("containers, pod_level, expected", [case[1:] for case in NONZERO], ids=[case[0] for case in NONZERO])
def test_scoring_non_zero_requests_with_pod_level_resources(containers, pod_level, expected):
    pod = PodSpec("default", "p", containers=tuple(containers), pod_level_requests=pod_level)
    assert pod.nonzero_requests == expected
