"""NodeTable's usage bookkeeping: the cached least free room stays exact through assume and forget."""

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
