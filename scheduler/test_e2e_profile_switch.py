"""A configuration change while real worker processes schedule: each batch runs one version, and
once the new version has been used anywhere, nothing later runs the old one."""

import pytest
from django.db.models import Count

from scheduler.models import Attempt, SchedulerConfigVersion
from scheduler.testing.cli import cli
from scheduler.testing.e2e import apply, assert_invariants, bound_count, node, pod, wait_for_workers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

MOST_ALLOCATED = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
"""


def test_a_configuration_imported_while_workers_run_governs_every_later_attempt(workers, tmp_path):
    apply([node(f"node-{i:03d}") for i in range(200)])
    apply([pod(f"p-{i:04d}") for i in range(4000)])
    workers(2, SCHEDBOARD_BATCH_SIZE="32")
    wait_for_workers(lambda: bound_count() >= 400, "some pods bound on version 0")
    config = tmp_path / "most-allocated.yaml"
    config.write_text(MOST_ALLOCATED)
    assert cli("profiles", "import", str(config), "--reason", "pack the nodes").code == 0
    switched = SchedulerConfigVersion.objects.get(active=True)
    wait_for_workers(lambda: bound_count() == 4000, "every pod bound")
    assert_invariants()

    attempts = Attempt.objects.order_by("started_at")
    assert set(attempts.values_list("profile_version", flat=True)) == {0, switched.number}
    first_new = attempts.filter(profile_version=switched.number).first()
    late_old = attempts.filter(profile_version=0, started_at__gt=first_new.started_at)
    assert not late_old.exists(), list(late_old.values("pod_name", "worker", "started_at"))
    # A batch is one version: attempts of one batch share a worker and a start time.
    mixed = attempts.values("worker", "started_at").annotate(n=Count("profile_version", distinct=True)).filter(n__gt=1)
    assert not mixed.exists()
    # MostAllocated packs: the new version's pods land on fewer nodes than as many pods spread out would.
    new_pods = attempts.filter(profile_version=switched.number, result="scheduled")
    nodes_used = new_pods.values("node_name").distinct().count()
    assert nodes_used < min(200, new_pods.count())
    pickup = (first_new.started_at - switched.created_at).total_seconds()
    print(f"switch-over: first attempt on version {switched.number} started {pickup * 1000:.1f} ms after the save; "
          f"{attempts.filter(profile_version=0).count()} attempts on version 0, {new_pods.count()} pods placed on "
          f"version {switched.number} across {nodes_used} nodes")
