"""Two real worker processes scheduling anti-affine and spread pods at the same time: each sees only
its own assumed pods, so only the claim's check on the committed state (scheduler/topology_claims.py)
keeps two replicas off one host and the zones within maxSkew."""

import time
from collections import Counter

import pytest
import yaml

from scheduler.cluster.services import cluster_apply
from scheduler.manifests.files import parse_documents
from scheduler.models import Attempt, Pod
from scheduler.testing.topology import ZONE, anti, node, pod, spread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def apply(objs):
    return cluster_apply(parse_documents(yaml.safe_dump_all(objs), "e2e.yaml"))


def wait_for(predicate, what, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def test_two_workers_keep_zone_spread_within_max_skew_on_the_committed_state(workers):
    apply([node(f"{z}{i}", z) for z in "abc" for i in range(300)])
    workers(2, SCHEDBOARD_BATCH_SIZE="8")
    apply([pod(f"warm-{i}") for i in range(8)])
    wait_for(lambda: Pod.objects.filter(name__startswith="warm-").exclude(node_name="").count() == 8, "warm-up")
    apply([pod(f"spread-{i:02d}", {"app": "spread"}, topologySpreadConstraints=spread(ZONE, app="spread"))
           for i in range(60)])
    wait_for(lambda: Pod.objects.filter(name__startswith="spread-").exclude(node_name="").count() == 60, "every pod bound")
    per_zone = Counter(n[0] for n in Pod.objects.filter(name__startswith="spread-").values_list("node_name", flat=True))
    # maxSkew 1 after every placement: 60 pods end 20 / 20 / 20.
    assert per_zone == {"a": 20, "b": 20, "c": 20}, per_zone
    assert Attempt.objects.values("worker").distinct().count() == 2  # both processes scheduled


def test_two_workers_racing_for_three_zones_bind_one_zone_anti_affine_pod_per_zone(workers):
    # Many nodes and batches of eight: a batch takes long enough between its snapshot and its claims
    # that the two workers' batches overlap.
    apply([node(f"{z}{i}", z) for z in "abc" for i in range(600)])
    workers(2, SCHEDBOARD_BATCH_SIZE="8")
    # Warm both workers up (process start, configuration, snapshot), so that they pop the groups at once.
    apply([pod(f"warm-{i}") for i in range(8)])
    wait_for(lambda: Pod.objects.filter(name__startswith="warm-").exclude(node_name="").count() == 8, "warm-up")
    # Ten groups: at most one pod of each per zone. Each batch holds pods of four groups, and both
    # workers place pods of the same groups at the same time.
    groups = 10
    apply([pod(f"zone-{i:02d}", {"app": f"g{i % groups}"}, affinity=anti(ZONE, app=f"g{i % groups}")) for i in range(80)])
    wait_for(lambda: Pod.objects.filter(name__startswith="zone-", scheduled_reason="Unschedulable").count()
             + Pod.objects.filter(name__startswith="zone-").exclude(node_name="").count() == 80,
             "every pod bound or found unschedulable")
    placed = Pod.objects.filter(name__startswith="zone-").exclude(node_name="").values_list("manifest", "node_name")
    per_group_zone = Counter((m["metadata"]["labels"]["app"], n[0]) for m, n in placed)
    assert set(per_group_zone.values()) == {1} and len(per_group_zone) == 3 * groups, per_group_zone
