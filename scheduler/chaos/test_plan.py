"""The chaos plan: reproducible from its seed, sized to fill the cluster, faults kept apart."""

from scheduler.chaos import hostile
from scheduler.chaos.plan import (GI, GPU, GPU_POD, HUGE, PORT, POSTGRES_OUTAGE, PREBOUND, REDIS_FLUSH, WORKER_KILL,
                                  make_plan)
from scheduler.engine.resources import CPU, EPHEMERAL_STORAGE, MEMORY
from scheduler.manifests.objects import node_from_manifest, pod_from_manifest


def plan(**kw):
    args = dict(pods=600, nodes=60, duration=120.0, seed=7, kills=20, hostile=len(hostile.KINDS),
                hostile_kinds=hostile.KINDS)
    args.update(kw)
    return make_plan(**args)


def test_the_same_seed_gives_the_same_plan_and_another_seed_another():
    assert plan() == plan()
    other = plan(seed=8)
    assert other.faults != plan().faults
    assert [p.fail_binds for p in other.pods] != [p.fail_binds for p in plan().pods]


def test_worker_kills_keep_a_quiet_gap_around_the_postgres_outage_and_the_redis_flush():
    for seed in range(20):
        p = plan(seed=seed)
        big = [f.at_s for f in p.faults if f.kind in (POSTGRES_OUTAGE, REDIS_FLUSH)]
        kills = [f.at_s for f in p.faults if f.kind == WORKER_KILL]
        assert len(kills) == 20 and len(big) == 2
        assert all(abs(k - b) >= 4.8 for k in kills for b in big), seed
        assert all(0 < f.at_s < p.duration_s for f in p.faults)


def test_a_fifth_of_the_pods_fail_their_first_bindings_and_none_of_them_arrives_bound():
    p = plan()
    failing = [x for x in p.pods if x.fail_binds]
    assert abs(len(failing) - 120) <= p.counts[PREBOUND]
    assert {x.fail_binds for x in failing} == {1, 2}
    assert not any(x.node_name for x in failing)


def test_gpu_and_host_port_pods_outnumber_the_room_for_them():
    p = plan()
    gpus = sum(n.allocatable.get(GPU, 0) for n in p.nodes)
    assert gpus < sum(x.gpus for x in p.pods)
    assert len(p.nodes) < sum(1 for x in p.pods if x.host_port)
    assert all(x.requests["cpu"] > 4000 for x in p.pods if x.kind == HUGE)


def test_pods_that_arrive_bound_come_first_one_per_node_with_memory_past_two_to_the_31():
    p = plan()
    prebound = [x for x in p.pods if x.kind == PREBOUND]
    assert prebound and p.pods[:len(prebound)] == prebound
    assert len({x.node_name for x in prebound}) == len(prebound)
    assert all(x.arrive_s == 0 and x.memory > 2**31 for x in prebound)


def test_every_manifest_parses_to_the_requests_the_plan_checks_against():
    p = plan()
    for node in p.nodes:
        spec = node_from_manifest(node.manifest())
        assert spec.allocatable[CPU] == node.allocatable["cpu"]
        assert spec.allocatable[MEMORY] == node.allocatable["memory"]
        assert spec.allocatable.get(GPU, 0) == node.allocatable.get(GPU, 0)
    for pod in p.pods + [x.resized() for x in p.pods if x.resize_s is not None]:
        spec = pod_from_manifest(pod.manifest())
        want = pod.requests
        assert spec.requests.get(CPU, 0) == want["cpu"]
        assert spec.requests.get(MEMORY, 0) == want["memory"]
        assert spec.requests.get(EPHEMERAL_STORAGE, 0) == want.get("ephemeral-storage", 0)
        assert spec.requests.get(GPU, 0) == want.get(GPU, 0)
        assert [hp.port for hp in spec.host_ports] == ([pod.host_port] if pod.host_port else [])
        assert spec.node_name == pod.node_name


def test_the_cluster_is_planned_to_end_about_four_fifths_full():
    p = plan(pods=2000, nodes=100)
    placeable = [x for x in p.pods if x.kind != HUGE]
    cpu = sum(x.cpu_m for x in placeable) / (4000 * 100)
    memory = sum(x.memory for x in placeable) / (32 * GI * 100)
    assert 0.7 < cpu < 0.9 and 0.7 < memory < 0.9


def test_pods_whose_room_is_counted_one_by_one_ask_for_memory_past_two_to_the_31():
    p = plan()
    assert all(x.memory > 2**31 for x in p.pods if x.kind in (GPU_POD, PORT, PREBOUND))


def test_hostile_applies_cycle_through_every_kind():
    p = plan(hostile=2 * len(hostile.KINDS))
    kinds = [h.kind for h in p.hostile]
    assert sorted(kinds) == sorted(hostile.KINDS * 2)
    assert len({h.index for h in p.hostile}) == len(kinds)
