"""The loop in one process, for tests: v1 objects to apply, a clock the test moves by hand, and drain()
(schedule batches, binding inline, until nothing is active). The `clock` fixture is in fixtures.py."""

import yaml

from scheduler import loop
from scheduler.queue import queues
from scheduler.manifests.files import parse_documents
from scheduler.cluster.services import cluster_apply


def node(name, cpu="4", memory="8Gi", pods="110", **extra):
    obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": extra.pop("labels", {})},
           "spec": extra.pop("spec", {}), "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}}}
    return obj


def pod(name, cpu="1", memory="1Gi", ns="default", **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, **spec.pop("meta", {})},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
                     **spec}}


def apply(*objs):
    return cluster_apply(parse_documents(yaml.safe_dump_all(objs), "test.yaml"))


class FakeClock:
    def __init__(self, now=1_000_000.0):
        self.now = now

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


def drain(clock=None, max_rounds=50):
    """Run batches (binding runs inline in tests) until nothing is active; with a clock, wait out backoffs too."""
    for _ in range(max_rounds):
        loop.reconcile()
        if loop.run_schedule_task().popped:
            continue
        if clock is not None and queues.get_queue().lengths()["backoff"]:
            clock.advance(11)
            continue
        return
    raise AssertionError("queue never drained")
