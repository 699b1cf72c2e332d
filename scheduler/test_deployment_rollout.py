"""A Deployment's rollout as upstream's deployment controller does it (rolling.go, recreate.go, sync.go): the
RollingUpdate steps bounded by maxSurge and maxUnavailable, proportional scaling in the middle of a rollout,
minReadySeconds, revisions and rollback, pausing, the progress deadline, and the status written."""

from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from scheduler.controllers import deployment, replicaset, workloads
from scheduler.controllers.deployment_util import (Deployment, max_surge, max_unavailable, resolve_fenceposts,
                                                   int_or_percent)
from scheduler.models import ClusterObject, Event, Pod
from scheduler.testing.loop import apply, drain, node
from scheduler.testing.workloads import settle, workload

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


@pytest.mark.parametrize("desired, surge, unavailable, want", [
    # ResolveFenceposts' own examples: surge rounds up, unavailable down, both zero -> one unavailable.
    (2, "0%", "1%", (0, 1)),
    (1, "0%", "1%", (0, 1)),
    (2, "1%", "25%", (1, 0)),
    (1, "1%", "25%", (1, 0)),
    (2, "1%", "0%", (1, 0)),
    (3, "25%", "25%", (1, 0)),
    (10, "25%", "25%", (3, 2)),
    (10, 3, 2, (3, 2)),
    (4, 0, "50%", (0, 2)),
])
def test_max_surge_rounds_up_and_max_unavailable_down(desired, surge, unavailable, want):
    assert resolve_fenceposts(surge, unavailable, desired) == want


def test_max_unavailable_is_capped_at_the_replicas_and_zero_for_recreate_or_no_replicas():
    def view(replicas, **strategy):
        row = ClusterObject(kind="Deployment", name="d", replicas=replicas,
                            manifest={"spec": {"replicas": replicas, "strategy": strategy}})
        return Deployment.of(row)
    assert max_unavailable(view(2, type="RollingUpdate", rollingUpdate={"maxSurge": 0, "maxUnavailable": 5})) == 2
    assert max_unavailable(view(0, type="RollingUpdate", rollingUpdate={"maxSurge": 1, "maxUnavailable": 1})) == 0
    assert (max_surge(view(4, type="Recreate")), max_unavailable(view(4, type="Recreate"))) == (0, 0)
    assert int_or_percent("33%", 10, True) == 4 and int_or_percent("33%", 10, False) == 3


def scaling_messages():
    return [e.message for e in Event.objects.filter(involved_kind="Deployment", reason="ScalingReplicaSet").order_by("id")]


def round_(clock):
    """One round as beat and the workers run it: the Deployment, the ReplicaSets, then the scheduler."""
    deployment.sync_all()
    replicaset.sync_all()
    drain(clock)


def test_a_rolling_update_steps_one_surge_pod_up_and_one_unavailable_pod_down_at_a_time(clock):
    apply(node("a"), workload("Deployment", replicas=4))
    settle(clock)
    old = ClusterObject.objects.get(kind="ReplicaSet").name
    before = len(scaling_messages())
    apply(workload("Deployment", replicas=4, image="httpd"))
    history = []
    for _ in range(12):
        round_(clock)
        pods = [p for p in Pod.objects.all() if not p.deleting]
        bound = [p for p in pods if p.node_name]
        history.append((len(pods), len(bound)))
        # 4 replicas, 25%/25%: never more than 5 pods, never fewer than 3 of them running.
        assert len(pods) <= 5 and len(bound) >= 3, history
    new = ClusterObject.objects.filter(kind="ReplicaSet").exclude(name=old).get().name
    # Each resize as the controller decides it when the ReplicaSets' statuses are one round behind.
    assert scaling_messages()[before:] == [
        f"Scaled up replica set {new} to 1", f"Scaled down replica set {old} to 3 from 4",
        f"Scaled up replica set {new} to 2 from 1", f"Scaled down replica set {old} to 2 from 3",
        f"Scaled up replica set {new} to 3 from 2", f"Scaled down replica set {old} to 1 from 2",
        f"Scaled up replica set {new} to 4 from 3", f"Scaled down replica set {old} to 0 from 1"]
    settle(clock)
    assert {p.manifest["spec"]["containers"][0]["image"] for p in Pod.objects.all()} == {"httpd"}
    d = ClusterObject.objects.get(kind="Deployment")
    assert d.manifest["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    status = d.manifest["status"]
    assert {k: status[k] for k in ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas",
                                   "availableReplicas")} == {"observedGeneration": 2, "replicas": 4,
                                                             "updatedReplicas": 4, "readyReplicas": 4,
                                                             "availableReplicas": 4}
    conditions = {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}
    assert conditions == {"Available": ("True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
                          "Progressing": ("True", "NewReplicaSetAvailable",
                                          f'ReplicaSet "{new}" has successfully progressed.')}


def test_a_deployment_scaled_in_the_middle_of_a_rollout_resizes_both_replica_sets_in_proportion(clock):
    # The documentation's example: 10 replicas, maxSurge 3, maxUnavailable 2, a new template whose pods never
    # run (no node has the label); the rollout stops at 8 old + 5 new, then the Deployment is scaled to 15.
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
    apply(node("a", cpu="8"), workload("Deployment", replicas=10, strategy=strategy))
    settle(clock)
    old = ClusterObject.objects.get(kind="ReplicaSet").name
    apply(workload("Deployment", replicas=10, strategy=strategy, template_spec={"nodeSelector": {"disk": "nvme"}}))
    settle(clock)
    new = ClusterObject.objects.filter(kind="ReplicaSet").exclude(name=old).get().name
    sizes = dict(ClusterObject.objects.filter(kind="ReplicaSet").values_list("name", "replicas"))
    assert sizes == {old: 8, new: 5}
    apply(workload("Deployment", replicas=15, strategy=strategy, template_spec={"nodeSelector": {"disk": "nvme"}}))
    deployment.sync_all()
    # allowed 15 + 3 = 18 over 13: old 8 * 18 / 13 = 11.08 -> 11, new 5 * 18 / 13 = 6.92 -> 7.
    sizes = dict(ClusterObject.objects.filter(kind="ReplicaSet").values_list("name", "replicas"))
    assert sizes == {old: 11, new: 7}
    assert scaling_messages()[-2:] == [f"Scaled up replica set {old} to 11 from 8",
                                       f"Scaled up replica set {new} to 7 from 5"]
    # 8 available of 15 wanted, at most 2 unavailable: the Deployment lost its minimum availability.
    status = ClusterObject.objects.get(kind="Deployment").manifest["status"]
    available = [c for c in status["conditions"] if c["type"] == "Available"][0]
    assert (available["status"], available["reason"]) == ("False", "MinimumReplicasUnavailable")
    assert (status["availableReplicas"], status["unavailableReplicas"]) == (8, 5)


def test_min_ready_seconds_holds_the_old_pods_until_the_new_ones_have_been_ready_that_long(clock):
    apply(node("a"), workload("Deployment", replicas=2, minReadySeconds=30,
                              strategy={"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}))
    settle(clock)
    old = ClusterObject.objects.get(kind="ReplicaSet")
    assert old.manifest["spec"]["minReadySeconds"] == 30
    Pod.objects.update(bound_at=F("bound_at") - timedelta(seconds=60))  # the old pods have run for a minute
    apply(workload("Deployment", replicas=2, image="httpd", minReadySeconds=30,
                   strategy={"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}))
    for _ in range(4):
        workloads.sync_all()
        drain(clock)
    assert ClusterObject.objects.get(pk=old.pk).manifest["status"]["availableReplicas"] == 2
    # The surge pod runs and is Ready, but not for 30 s: no old pod may go (maxUnavailable 0).
    assert ClusterObject.objects.get(pk=old.pk).replicas == 2
    new = ClusterObject.objects.filter(kind="ReplicaSet").exclude(pk=old.pk).get()
    assert new.manifest["status"]["readyReplicas"] == 1 and "availableReplicas" not in new.manifest["status"]
    later = timezone.now() + timedelta(seconds=31)
    for _ in range(3):
        workloads.sync_all(later)
        drain(clock)
    assert ClusterObject.objects.get(pk=old.pk).replicas == 1


def test_rolling_back_to_an_earlier_template_revives_its_replica_set_under_the_next_revision(clock):
    apply(node("a"), workload("Deployment", replicas=1))
    settle(clock)
    first = ClusterObject.objects.get(kind="ReplicaSet").name
    apply(workload("Deployment", replicas=1, image="httpd"))
    settle(clock)
    apply(workload("Deployment", replicas=1))
    settle(clock)
    rses = {r.name: r for r in ClusterObject.objects.filter(kind="ReplicaSet")}
    assert len(rses) == 2 and rses[first].replicas == 1
    annotations = rses[first].manifest["metadata"]["annotations"]
    assert (annotations["deployment.kubernetes.io/revision"], annotations["deployment.kubernetes.io/revision-history"]) \
        == ("3", "1")
    d = ClusterObject.objects.get(kind="Deployment")
    assert d.manifest["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"


def test_a_paused_deployment_does_not_roll_out_until_it_is_resumed(clock):
    apply(node("a"), workload("Deployment", replicas=2))
    settle(clock)
    apply(workload("Deployment", replicas=2, image="httpd", paused=True))
    settle(clock)
    assert ClusterObject.objects.filter(kind="ReplicaSet").count() == 1
    progressing = [c for c in ClusterObject.objects.get(kind="Deployment").manifest["status"]["conditions"]
                   if c["type"] == "Progressing"][0]
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "Unknown", "DeploymentPaused", "Deployment is paused")
    apply(workload("Deployment", replicas=2, image="httpd"))
    settle(clock)
    assert {p.manifest["spec"]["containers"][0]["image"] for p in Pod.objects.all()} == {"httpd"}


def test_a_rollout_without_progress_past_its_deadline_is_marked_progress_deadline_exceeded(clock):
    apply(node("a"), workload("Deployment", replicas=1, progressDeadlineSeconds=60))
    settle(clock)
    apply(workload("Deployment", replicas=1, progressDeadlineSeconds=60,
                   template_spec={"nodeSelector": {"disk": "nvme"}}))
    settle(clock)
    later = timezone.now() + timedelta(seconds=61)
    workloads.sync_all(later)
    d = ClusterObject.objects.get(kind="Deployment")
    new = ClusterObject.objects.filter(kind="ReplicaSet", replicas=1).exclude(
        manifest__spec__template__spec__nodeSelector__isnull=True).get()
    progressing = [c for c in d.manifest["status"]["conditions"] if c["type"] == "Progressing"][0]
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "False", "ProgressDeadlineExceeded", f'ReplicaSet "{new.name}" has timed out progressing.')


def test_the_api_server_defaults_and_checks_a_deployments_strategy():
    apply(workload("Deployment", replicas=3))
    spec = ClusterObject.objects.get(kind="Deployment").manifest["spec"]
    assert (spec["strategy"], spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (
        {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}, 10, 600)
    from scheduler.manifests.errors import ManifestError

    bad = [({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}},
            "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"),
           ({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}},
            'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0%": may not be 0 when `maxSurge` is 0'),
           ({"rollingUpdate": {"maxUnavailable": "150%"}},
            'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be greater than 100%'),
           ({"rollingUpdate": {"maxSurge": "lots"}},
            "spec.strategy.rollingUpdate.maxSurge: Invalid value: \"lots\": a valid percent string must be a numeric "
            "string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"),
           ({"rollingUpdate": {"maxSurge": -1}},
            "spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0")]
    for strategy, message in bad:
        with pytest.raises(ManifestError) as e:
            apply(workload("Deployment", name="bad", strategy=strategy))
        assert message in [f"{p.path}: {p.message}" for p in e.value.problems], e.value.problems
    with pytest.raises(ManifestError) as e:
        apply(workload("Deployment", name="bad", minReadySeconds=600))
    assert [f"{p.path}: {p.message}" for p in e.value.problems] == [
        "spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds"]


def test_get_prints_the_counts_of_a_stuck_rollout_from_the_status_as_kubectl_does(clock):
    import json
    import re

    import yaml

    from scheduler.testing.cli import cli

    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
    apply(node("a", cpu="8"), workload("Deployment", replicas=10, strategy=strategy))
    settle(clock)
    old = ClusterObject.objects.get(kind="ReplicaSet").name
    apply(workload("Deployment", replicas=10, strategy=strategy, template_spec={"nodeSelector": {"disk": "nvme"}}))
    settle(clock)
    new = ClusterObject.objects.filter(kind="ReplicaSet").exclude(name=old).get().name
    rows = [re.split(r"\s{2,}", line) for line in cli("get", "deployments").out.splitlines()]
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"] and rows[1][:4] == ["web", "8/10", "5", "8"]
    rows = {r[0]: r[1:4] for r in (re.split(r"\s{2,}", line) for line in cli("get", "rs").out.splitlines()[1:])}
    assert rows == {old: ["8", "8", "8"], new: ["5", "5", "0"]}
    status = json.loads(cli("get", "deployment", "web", "-o", "json").out)["status"]
    assert {k: status[k] for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                                   "unavailableReplicas")} == {"replicas": 13, "updatedReplicas": 5,
                                                               "readyReplicas": 8, "availableReplicas": 8,
                                                               "unavailableReplicas": 5}
    text = cli("get", "rs", new, "-o", "yaml").out  # created at 3, scaled to 5: generation 2
    assert yaml.safe_load(text)["status"] == {"observedGeneration": 2, "replicas": 5, "fullyLabeledReplicas": 5,
                                              "terminatingReplicas": 0}
    assert text.startswith("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  annotations:\n")  # keys sorted
    assert re.search(r'^  creationTimestamp: "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"$', text, re.M)  # quoted as go-yaml


def rollout_status(*args):
    """(exit status, stdout, the `error: ...` kubectl would print) of `rollout status ARGS`."""
    import io

    from django.core.management import call_command
    from django.core.management.base import CommandError

    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("rollout", "status", *args, stdout=out, stderr=err)
    except CommandError as e:
        return e.returncode, out.getvalue(), f"error: {e}" if str(e) else err.getvalue().strip()
    return 0, out.getvalue(), ""


def test_rollout_status_follows_the_rollout_as_kubectl_and_says_when_it_cannot_finish(clock):

    apply(node("a"), workload("Deployment", replicas=2, progressDeadlineSeconds=60))
    settle(clock)
    assert rollout_status("deployment/web") == (0, 'deployment "web" successfully rolled out\n', "")
    apply(workload("Deployment", replicas=2, progressDeadlineSeconds=60, template_spec={"nodeSelector": {"disk": "x"}}))
    assert rollout_status("deploy", "web", "--watch=false")[1] == "Waiting for deployment spec update to be observed...\n"
    settle(clock)
    assert rollout_status("deployment/web", "-w", "false")[1] == (
        'Waiting for deployment "web" rollout to finish: 1 out of 2 new replicas have been updated...\n')
    code, out, err = rollout_status("deployment/web", "--timeout", "1s")
    assert (code, err) == (1, "error: timed out waiting for the condition")
    workloads.sync_all(timezone.now() + timedelta(seconds=61))
    assert rollout_status("deployment/web")[::2] == (1, 'error: deployment "web" exceeded its progress deadline')
    assert rollout_status("deployment/nope")[::2] == (
        1, 'Error from server (NotFound): deployments.apps "nope" not found')


def test_rollout_status_of_a_stateful_set_reads_its_partitioned_rolling_update(clock):
    apply(node("a"), workload("StatefulSet", name="db", replicas=2))
    spec = ClusterObject.objects.get(kind="StatefulSet").manifest["spec"]
    # SetDefaults_StatefulSet: an unset strategy is RollingUpdate with partition 0.
    assert (spec["updateStrategy"], spec["podManagementPolicy"], spec["revisionHistoryLimit"]) == (
        {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}, "OrderedReady", 10)
    settle(clock)
    assert rollout_status("sts/db")[1] == "partitioned roll out complete: 2 new pods have been updated...\n"
    apply(workload("StatefulSet", name="db", replicas=2, updateStrategy={"type": "OnDelete"}))
    assert rollout_status("sts/db")[::2] == (1, "error: rollout status is only available for RollingUpdate strategy type")
