"""Property: the columnar preemption evaluator, the exact node-by-node one and the per-node reference
(reference/preemption.py) agree on the potential nodes, the candidates with their victims and PDB
violations, the chosen node and the failure message, on random clusters where the pod fits nowhere:
pods of mixed priorities and start times, host ports, taints and cordoned nodes, node selectors,
PodDisruptionBudgets (with disruptedPods), nominated pods, and random offsets and candidate counts."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from ..cluster_objects import PodDisruptionBudget
from ..framework import Algorithm, Handle, Profile
from ..labels import LabelSelector
from ..nodes import NodeSpec, NodeTable
from ..nominator import Nominator
from ..plugins.node_affinity import NodeAffinity
from ..plugins.node_name import NodeName
from ..plugins.node_ports import NodePorts
from ..plugins.node_resources_fit import NodeResourcesFit
from ..plugins.node_unschedulable import NodeUnschedulable
from ..plugins.taint_toleration import TaintToleration
from ..pods import NO_SCHEDULE, Container, HostPort, PodSpec, Taint, Toleration
from ..reference.preemption import reference_preempt
from .evaluator import Evaluator, fit_error_message

FILTERS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit")
NOW = 10_000.0
PRIORITIES = (-5, 0, 0, 5, 10, 20)
APPS = ("a", "b", "c")


def random_pod(rng: random.Random, name: str, priority: int | None = None, big: bool = False) -> PodSpec:
    cpu = rng.choice((1000, 1500, 2000, 3000)) if big else rng.choice((0, 100, 250, 500, 1000))
    req = {"cpu": cpu, "memory": rng.choice((0, 1, 2, 4)) << 28}
    ports = (HostPort(rng.choice((80, 443))),) if rng.random() < 0.15 else ()
    labels = {"app": rng.choice(APPS)} if rng.random() < 0.8 else {}
    return PodSpec("default", name, uid=name, priority=rng.choice(PRIORITIES) if priority is None else priority,
                   containers=(Container("c", requests={k: v for k, v in req.items() if v}, ports=ports),),
                   labels=labels, start_time=rng.choice((None, 1.0, 2.0, 3.0, 5.0)))


@st.composite
def cases(draw):
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    n = rng.randint(1, 12)
    nodes = []
    for i in range(n):
        taints = (Taint("dedicated", "x", NO_SCHEDULE),) if rng.random() < 0.1 else ()
        nodes.append(NodeSpec(f"n{i}", labels={"zone": rng.choice("ab")}, taints=taints,
                              unschedulable=rng.random() < 0.05,
                              allocatable={"cpu": rng.choice((1000, 2000, 4000)), "memory": 4 << 30,
                                           "pods": rng.choice((3, 5, 110))}))
    pods_by_node = [[random_pod(rng, f"p{i}-{j}") for j in range(rng.randint(0, 8))] for i in range(n)]
    incoming = random_pod(rng, "incoming", priority=rng.choice((0, 5, 10, 20, 30, 30)), big=True)
    incoming.node_selector = {"zone": "a"} if rng.random() < 0.2 else {}
    if rng.random() < 0.2:
        incoming.tolerations = (Toleration("dedicated", "Equal", "x", NO_SCHEDULE),)
    pdbs = []
    for k in range(rng.randint(0, 3)):
        disrupted = frozenset(rng.sample([p.name for ps in pods_by_node for p in ps], k=min(1, sum(map(len, pods_by_node)))))
        pdbs.append(PodDisruptionBudget("default", f"pdb{k}", LabelSelector.of({"app": rng.choice(APPS)}),
                                        rng.randint(0, 2), disrupted if rng.random() < 0.3 else frozenset()))
    nominated = [(rng.randrange(n), random_pod(rng, f"nominated{k}")) for k in range(rng.randint(0, 2))]
    offset_frac = rng.random()
    pct, absolute = rng.choice(((10, 100), (40, 1), (50, 2), (100, 1), (0, 3)))
    return nodes, pods_by_node, incoming, pdbs, nominated, offset_frac, pct, absolute


def _count(pct: int, absolute: int, num: int) -> int:
    n = num * pct // 100
    return min(max(n, absolute), num)


def _run_engine(nodes, pods_by_node, incoming, pdbs, nominated, offset_of, count_of, node_by_node):
    table = NodeTable(nodes)
    for row, pods in enumerate(pods_by_node):
        for p in pods:
            table.add_pod(row, p)
    table.objects.pdbs = list(pdbs)
    nominator = Nominator()
    for row, p in nominated:
        nominator.add(p, nodes[row].name)
    profile = Profile(filters=[NodeUnschedulable(), NodeName(), TaintToleration(), NodeAffinity(), NodePorts(),
                               NodeResourcesFit()])
    decision = Algorithm(seed=1, nominator=nominator).schedule(profile, incoming, table)
    if decision.scheduled:
        return None
    evaluator = Evaluator(lambda p: (offset_of(p), count_of(p)), clock=lambda: NOW, node_by_node=node_by_node)
    result = evaluator.preempt(incoming, table, decision, Handle(profile, nominator))
    return table, decision, result


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(cases())
def test_the_evaluator_matches_the_reference(case):
    nodes, pods_by_node, incoming, pdbs, nominated, offset_frac, pct, absolute = case

    def offset_of(p: int) -> int:
        return int(offset_frac * p)

    def count_of(p: int) -> int:
        return _count(pct, absolute, p)

    got = _run_engine(nodes, pods_by_node, incoming, pdbs, nominated, offset_of, count_of, node_by_node=False)
    assume(got is not None)  # the pod fit somewhere: no preemption
    table, decision, result = got
    want = reference_preempt(nodes, pods_by_node, incoming, FILTERS, pdbs, nominated, offset_of, count_of, NOW)

    assert [table.names[r] for r in decision.unschedulable_rows()] == want.potential
    event("preempts" if want.chosen else "no candidate")
    if any(n for _, _, n in want.candidates):
        event("a candidate violates a PDB")
    if len(want.candidates) > 1:
        event("several candidates")
    if decision.nominated_pods_counted:
        event("nominated pods counted")
    detail = result.detail
    if detail is None:  # not eligible: cannot happen here (no Never, no nomination)
        raise AssertionError(result.message)
    got_candidates = [(c.node, [v.name for v in c.victims], c.num_pdb_violations) for c in detail.dry_run.candidates]
    assert got_candidates == want.candidates
    if want.chosen is None:
        assert result.nominated_node == ""
        assert {k: v.reasons for k, v in detail.dry_run.statuses.items()} == want.statuses
        want_statuses = {k: type("S", (), {"reasons": v})() for k, v in want.statuses.items()}
        assert result.message == fit_error_message(len(nodes), want_statuses)
    else:
        assert result.nominated_node == want.chosen
        assert [v.name for v in result.victims] == want.victims

    # The exact node-by-node dry run (used when filters read other nodes' pods) agrees too.
    _, _, exact = _run_engine(nodes, pods_by_node, incoming, pdbs, nominated, offset_of, count_of, node_by_node=True)
    assert (exact.code, exact.message, exact.nominated_node) == (result.code, result.message, result.nominated_node)
    assert [v.key for v in exact.victims] == [v.key for v in result.victims]
    assert [(c.node, [v.key for v in c.victims], c.num_pdb_violations) for c in exact.detail.dry_run.candidates] == \
        [(c.node, [v.key for v in c.victims], c.num_pdb_violations) for c in detail.dry_run.candidates]
