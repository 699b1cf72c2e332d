"""NodePorts, table-driven as upstream's node_ports_test.go, checked against the reference."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine.nodes import NodeSpec, NodeTable, NodeUsage
from scheduler.engine.plugins.node_ports import ERR_REASON, NodePorts
from scheduler.engine.pods import Container, HostPort, PodSpec
from scheduler.engine.reference import filters as ref


def pod_with(*ports, name="p"):
    """Ports as "protocol/ip/port" strings, as upstream's newPod helper."""
    hps = []
    for p in ports:
        protocol, ip, port = p.split("/")
        hps.append(HostPort(port=int(port), protocol=protocol, ip=ip))
    return PodSpec("ns", name, containers=(Container("c", ports=tuple(hps)),))


def engine_reasons(pod, usages):
    table = NodeTable([NodeSpec(f"n{i}") for i in range(len(usages))], usages)
    res = NodePorts().filter(pod, table)
    out = [[text for text, mask in res.reasons if mask[i]] for i in range(len(usages))]
    assert [not r for r in out] == list(res.passed)
    return out


FIT = []
CONFLICT = [ERR_REASON]
CASES = [
    ("nothing running", pod_with(), pod_with(), FIT),
    ("other port", pod_with("UDP/127.0.0.1/8080"), pod_with("UDP/127.0.0.1/9090"), FIT),
    ("same udp port", pod_with("UDP/127.0.0.1/8080"), pod_with("UDP/127.0.0.1/8080"), CONFLICT),
    ("same tcp port", pod_with("TCP/127.0.0.1/8080"), pod_with("TCP/127.0.0.1/8080"), CONFLICT),
    ("different host ip", pod_with("TCP/127.0.0.1/8080"), pod_with("TCP/127.0.0.2/8080"), FIT),
    ("different protocol", pod_with("UDP/127.0.0.1/8080"), pod_with("TCP/127.0.0.1/8080"), FIT),
    ("second udp port conflict", pod_with("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
     pod_with("UDP/127.0.0.1/8080"), CONFLICT),
    ("first tcp port conflict", pod_with("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
     pod_with("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"), CONFLICT),
    ("first tcp port conflict due to 0.0.0.0 hostIP", pod_with("TCP/0.0.0.0/8001"), pod_with("TCP/127.0.0.1/8001"), CONFLICT),
    ("TCP hostPort conflict due to 0.0.0.0 hostIP", pod_with("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
     pod_with("TCP/127.0.0.1/8001"), CONFLICT),
    ("second tcp port conflict to 0.0.0.0 hostIP", pod_with("TCP/127.0.0.1/8001"), pod_with("TCP/0.0.0.0/8001"), CONFLICT),
    ("second different protocol", pod_with("UDP/127.0.0.1/8001"), pod_with("TCP/0.0.0.0/8001"), FIT),
    ("UDP hostPort conflict due to 0.0.0.0 hostIP", pod_with("UDP/127.0.0.1/8001"),
     pod_with("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"), CONFLICT),
    ("empty ip means 0.0.0.0 and empty protocol means TCP", pod_with("//8001"), pod_with("TCP/10.0.0.1/8001"), CONFLICT),
    ("an empty used protocol is TCP", pod_with("TCP/10.0.0.1/8001"), pod_with("/10.0.0.1/8001"), CONFLICT),
]


@pytest.mark.parametrize("name,pod,existing,want", CASES, ids=[c[0] for c in CASES])
def test_it_finds_host_port_conflicts_as_upstream(name, pod, existing, want):
    usage = NodeUsage.of_pods([existing])
    assert engine_reasons(pod, [usage]) == [want]
    assert ref.node_ports(pod, usage) == want


def test_it_sees_sidecar_init_container_ports_and_ports_freed_by_removed_pods():
    pod = PodSpec("ns", "p", init_containers=(Container("i", ports=(HostPort(80),), restart_policy="Always"),))
    existing = pod_with("TCP/0.0.0.0/80", name="old")
    table = NodeTable([NodeSpec("n0")], [NodeUsage.of_pods([existing])])
    assert not NodePorts().filter(pod, table).passed[0]
    assert ref.node_ports(pod, table.usage_of(0)) == CONFLICT
    table.remove_pod(0, existing)
    assert NodePorts().filter(pod, table).passed[0]


def test_an_ordinary_init_container_holds_no_host_port():
    # As schedutil.GetHostPorts: an init container without restartPolicy Always has exited before
    # the pod's containers start, so its host ports neither conflict nor stay taken.
    pod = PodSpec("ns", "p", init_containers=(Container("i", ports=(HostPort(80),)),))
    existing = pod_with("TCP/0.0.0.0/80", name="old")
    table = NodeTable([NodeSpec("n0")], [NodeUsage.of_pods([existing])])
    assert NodePorts().filter(pod, table).passed[0]
    assert ref.node_ports(pod, table.usage_of(0)) == FIT
    assert pod.host_ports == ()

    init_only = PodSpec("ns", "old-init", init_containers=(Container("i", ports=(HostPort(443),)),))
    sidecar = PodSpec("ns", "old-sidecar", init_containers=(Container("s", ports=(HostPort(8080),), restart_policy="Always"),))
    table = NodeTable([NodeSpec("n0")])
    table.add_pod(0, init_only)
    table.add_pod(0, sidecar)
    assert NodePorts().filter(pod_with("TCP/0.0.0.0/443"), table).passed[0]
    assert not NodePorts().filter(pod_with("TCP/0.0.0.0/8080"), table).passed[0]


host_ports = st.builds(HostPort, port=st.sampled_from([80, 443]), protocol=st.sampled_from(["TCP", "UDP", ""]),
                       ip=st.sampled_from(["0.0.0.0", "", "10.0.0.1", "10.0.0.2"]))
pods = st.lists(host_ports, max_size=3).map(lambda ps: PodSpec("ns", "p", containers=(Container("c", ports=tuple(ps)),)))


@settings(max_examples=300, deadline=None)
@given(pods, st.lists(st.lists(pods, max_size=2), min_size=1, max_size=5))
def test_it_agrees_with_the_reference(pod, nodes_pods):
    usages = [NodeUsage.of_pods(ps) for ps in nodes_pods]
    assert engine_reasons(pod, usages) == [ref.node_ports(pod, u) for u in usages]
