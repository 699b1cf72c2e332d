"""RunFilterPluginsWithNominatedPods' node-local fast path: the nominated pods counted on their nodes' usage
columns for the pass gives the verdicts (and reasons) that adding each pod to the table gives, and leaves the
table as it was."""

from __future__ import annotations

import numpy as np

from .config import default_config
from .framework import _filters_with_nominated_usage, run_filters, run_filters_with_nominated_pods
from .nodes import NodeSpec, NodeTable
from .pods import Container, HostPort, PodSpec


def _pod(name, rng, *, port=False):
    ports = (HostPort(port=int(rng.integers(8000, 8003))),) if port else ()
    return PodSpec("default", name, uid=name, priority=int(rng.integers(0, 3)),
                   containers=(Container("c", requests={"cpu": int(rng.integers(0, 1500)),
                                                        "memory": int(rng.integers(0, 3)) * 2**30}, ports=ports),))


def _table(rng, n):
    table = NodeTable([NodeSpec(f"n{i}", allocatable={"cpu": 2000, "memory": 4 * 2**30, "pods": int(rng.integers(1, 4))})
                       for i in range(n)])
    for i in range(n):
        for k in range(int(rng.integers(0, 2))):
            table.add_pod(i, _pod(f"placed-{i}-{k}", rng, port=rng.random() < 0.3))
    return table


def _state(table):
    return ({r: c.tolist() for r, c in table.requested.items()}, {r: c.tolist() for r, c in table.nonzero_requested.items()},
            {k: {row: list(ips) for row, ips in v.items()} for k, v in table.ports.items()})


def test_the_fast_path_gives_the_verdicts_of_adding_each_pod_and_restores_the_table():
    profile = default_config().profiles[0].build()
    rng = np.random.default_rng(7)
    for trial in range(60):
        table = _table(rng, 12)
        incoming = _pod(f"in-{trial}", rng, port=rng.random() < 0.5)
        nominated = [(int(rng.integers(0, 12)), _pod(f"nom-{trial}-{k}", rng, port=rng.random() < 0.3))
                     for k in range(int(rng.integers(1, 8)))]
        before = _state(table)
        table.min_free("cpu")
        fast = _filters_with_nominated_usage(profile, incoming, table, nominated)
        assert _state(table) == before and table._min_free.get("cpu") is not None
        for row, p in nominated:  # the table's own path
            table.add_pod(row, p)
        slow = run_filters(profile, incoming, table)
        for row, p in reversed(nominated):
            table.remove_pod(row, p)
        assert list(fast.rejected_by) == list(slow.rejected_by), trial
        for f, s in zip(fast.filter_results, slow.filter_results):
            assert (f is None) == (s is None)
            if f is not None:
                assert [(text, list(m)) for text, m in f.reasons] == [(text, list(m)) for text, m in s.reasons], trial
        # And the whole two-pass result is what it was.
        plain = run_filters(profile, incoming, table)
        whole = run_filters_with_nominated_pods(profile, incoming, table, nominated, plain=plain)
        assert (whole.rejected_by >= 0).sum() >= (plain.rejected_by >= 0).sum()


def test_the_nominators_columns_are_the_pods_it_counts():
    from .nominator import Nominator

    rng = np.random.default_rng(3)
    table = _table(rng, 6)
    nom = Nominator()
    pods = [_pod(f"nom-{k}", rng) for k in range(9)]
    for k, p in enumerate(pods):
        nom.add(p, f"n{k % 6}" if k != 8 else "gone")  # one nominated to a node the table does not have
    import dataclasses

    incoming = dataclasses.replace(pods[0], priority=1)  # itself (on n0) never counted, nor what is below 1
    counted = nom.counted_for(incoming, table)
    # By node in nomination order, then in each node's own order (the nominator's), on the table's nodes.
    expected = [p.key for node in range(6) for k, p in enumerate(pods[:8]) if k % 6 == node and k and p.priority >= 1]
    assert expected and [p.key for _, p in counted] == expected
    assert all(table.names[r] == nom.node_of(p.key) for r, p in counted)
    rows, requests, nonzero = counted.usage
    assert list(rows) == [r for r, _ in counted]
    assert list(requests["cpu"]) == [p.requests.get("cpu", 0) for _, p in counted]
    assert list(nonzero["memory"]) == [p.nonzero_requests["memory"] for _, p in counted]
    nom.delete(pods[1])  # a change: the columns follow
    assert pods[1].key not in [p.key for _, p in nom.counted_for(incoming, table)]
