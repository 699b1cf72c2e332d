"""NodeTable's usage bookkeeping: the cached least free room stays exact through assume and forget, and replacing
some rows' usage holds what loading every row holds."""

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine.nodes import NodeSpec, NodeTable, NodeUsage
from scheduler.engine.pods import Container, PodSpec

RESOURCES = ("cpu", "memory", "pods", "example.com/gpu")


def pod(i, cpu, memory, gpu):
    requests = {"cpu": cpu, "memory": memory}
    if gpu:
        requests["example.com/gpu"] = gpu
    return PodSpec("default", f"p{i}", containers=(Container("c", requests=requests),))


steps = st.lists(st.tuples(st.booleans(), st.integers(0, 4), st.integers(0, 3000), st.integers(0, 4096),
                           st.integers(0, 2)), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(steps, st.lists(st.integers(0, 2), min_size=1, max_size=4))
def test_min_free_matches_a_full_recount_after_every_change(script, gpus):
    specs = [NodeSpec(f"n{i}", allocatable={"cpu": 4000, "memory": 8192, "pods": 3, "example.com/gpu": g})
             for i, g in enumerate(gpus)]
    table = NodeTable(specs, [NodeUsage() for _ in specs])
    placed = []
    for i, (add, row, cpu, memory, gpu) in enumerate(script):
        for r in RESOURCES:
            table.min_free(r)  # warm the cache so the incremental path is what gets tested
        row %= table.n
        if add or not placed:
            p = pod(i, cpu, memory, gpu)
            table.add_pod(row, p)
            placed.append((row, p))
        else:
            r0, p = placed.pop(row % len(placed))
            table.remove_pod(r0, p)
        for r in RESOURCES:
            assert table.min_free(r) == int((table.allocatable_of(r) - table.requested_of(r)).min()), r


usage_rows = st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 8192), st.integers(0, 3), st.integers(0, 2),
                                st.sampled_from([(), (("TCP", 80, "0.0.0.0"),), (("UDP", 53, "10.0.0.1"),)])),
                      min_size=4, max_size=4)


def _columns(rows):
    from scheduler.engine.pods import HostPort

    standard = {"cpu": [r[0] for r in rows], "memory": [r[1] for r in rows], "pods": [r[2] for r in rows]}
    scalars = {i: {"example.com/gpu": r[3]} for i, r in enumerate(rows) if r[3]}
    ports = {i: [HostPort(port=p, protocol=proto, ip=ip) for proto, p, ip in r[4]] for i, r in enumerate(rows) if r[4]}
    return standard, [r[0] for r in rows], [r[1] for r in rows], scalars, ports


@settings(max_examples=200, deadline=None)
@given(usage_rows, usage_rows, st.sets(st.integers(0, 3)))
def test_replacing_some_rows_usage_holds_what_loading_every_row_holds(before, after, changed):
    """load_usage_rows (the snapshot's read of the changed nodes) on the rows that changed == load_usage of all."""
    import numpy as np

    specs = [NodeSpec(f"n{i}", allocatable={"cpu": 4000, "memory": 8192, "pods": 3, "example.com/gpu": 2})
             for i in range(4)]
    now = [after[i] if i in changed else before[i] for i in range(4)]
    partial, full = NodeTable(specs), NodeTable(specs)
    standard, cpu, memory, scalars, ports = _columns(before)
    partial.load_usage({k: np.asarray(v) for k, v in standard.items()}, np.asarray(cpu), np.asarray(memory), scalars, ports)
    for r in RESOURCES:
        partial.min_free(r)  # a cached least free room must not survive the replacement
    rows = sorted(changed)
    standard, cpu, memory, scalars, ports = _columns([now[i] for i in rows])
    partial.load_usage_rows(np.asarray(rows, dtype=np.int64), {k: np.asarray(v) for k, v in standard.items()},
                            np.asarray(cpu), np.asarray(memory), {rows[i]: v for i, v in scalars.items()},
                            {rows[i]: v for i, v in ports.items()})
    standard, cpu, memory, scalars, ports = _columns(now)
    full.load_usage({k: np.asarray(v) for k, v in standard.items()}, np.asarray(cpu), np.asarray(memory), scalars, ports)
    for r in RESOURCES:
        assert partial.requested_of(r).tolist() == full.requested_of(r).tolist(), r
        assert partial.min_free(r) == full.min_free(r), r
    for k in full.nonzero_requested:
        assert partial.nonzero_requested[k].tolist() == full.nonzero_requested[k].tolist()
    assert {k: dict(v) for k, v in partial.ports.items()} == {k: dict(v) for k, v in full.ports.items()}
