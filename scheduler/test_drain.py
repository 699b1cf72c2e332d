"""`cordon`, `uncordon` and `drain` as kubectl prints them, on the real stack: evicted pods carry the Eviction
API's condition, their ReplicaSet replaces them elsewhere, and what kubectl refuses is refused with its words."""

import pytest

from scheduler.cluster import disruption
from scheduler.controllers import workloads
from scheduler.models import Node, Pod
from scheduler.testing.cli import cli
from scheduler.testing.loop import apply, drain, node, pod

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]

DS_OWNER = {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u1",
                                 "controller": True}]}


def rs(replicas):
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                         {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]}}}}


def test_cordon_and_uncordon_print_as_kubectl_and_the_node_controller_taints_it():
    apply(node("a"))
    assert cli("cordon", "a").out == "node/a cordoned\n"
    assert cli("cordon", "a").out == "node/a already cordoned\n"
    row = Node.objects.get(name="a")
    assert row.unschedulable and row.manifest["spec"]["taints"] == [
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    assert cli("uncordon", "a").out == "node/a uncordoned\n"
    assert cli("uncordon", "a").out == "node/a already uncordoned\n"
    assert "taints" not in Node.objects.get(name="a").manifest["spec"]
    r = cli("cordon", "nope")
    assert (r.code, r.err) == (1, 'Error from server (NotFound): nodes "nope" not found\n')


def test_drain_evicts_managed_pods_and_their_replica_set_puts_them_on_another_node(clock, monkeypatch):
    apply(node("a"), rs(2))
    workloads.sync_all()
    drain(clock)
    apply(node("b"))
    names = sorted(Pod.objects.values_list("name", flat=True))
    conditions = []
    real = disruption.pod_delete
    monkeypatch.setattr(disruption, "pod_delete", lambda *, namespace, name: (
        conditions.append(Pod.objects.get(name=name).manifest["status"]["conditions"]), real(namespace=namespace, name=name))[1])
    r = cli("drain", "a")
    assert (r.code, r.err) == (0, "")
    assert r.out == "".join(["node/a cordoned\n", *[f"evicting pod default/{n}\n" for n in names],
                             *[f"pod/{n} evicted\n" for n in names], "node/a drained\n"])
    assert [c[-1]["reason"] for c in conditions] == ["EvictionByEvictionAPI"] * 2
    assert conditions[0][-1]["message"] == "Eviction API: evicting"
    workloads.sync_all()
    drain(clock)
    assert sorted(Pod.objects.values_list("node_name", flat=True)) == ["b", "b"]


def test_drain_refuses_unmanaged_and_daemon_set_pods_with_kubectls_words_and_evicts_nothing():
    apply(node("a"), pod("lone", nodeName="a"), pod("agent-x", nodeName="a", meta=DS_OWNER))
    r = cli("drain", "a")
    assert r.code == 1
    assert r.out == "node/a cordoned\n"
    assert r.err == ('error: unable to drain node "a", aborting command...\n\n'
                     "There are pending nodes to be drained:\n a\n")
    assert Pod.objects.count() == 2
    with pytest.raises(Exception) as raised:
        from django.core.management import call_command
        call_command("drain", "a")
    assert str(raised.value) == (
        "[cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): default/agent-x, "
        "cannot delete Pods that declare no controller (use --force to override): default/lone]")
    r = cli("drain", "a", "--force", "--ignore-daemonsets", "--grace-period", "0")
    assert (r.code, r.out) == (0, "node/a already cordoned\nevicting pod default/lone\npod/lone evicted\nnode/a drained\n")
    assert r.err == "Warning: ignoring DaemonSet-managed Pods: default/agent-x; deleting Pods that declare no controller: default/lone\n"
    assert list(Pod.objects.values_list("name", flat=True)) == ["agent-x"]


def test_eviction_is_allowed_while_the_cluster_has_no_disruption_budgets():
    apply(node("a"), pod("p", nodeName="a"))
    assert disruption.eviction_allowed(Pod.objects.get(name="p")) is True


def test_eviction_is_refused_while_a_budget_selecting_the_pod_has_no_disruption_left():
    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db", "namespace": "default"},
              "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}}
    apply(node("a"), pod("db-0", nodeName="a", meta={"labels": {"app": "db"}}),
          pod("db-1", nodeName="a", meta={"labels": {"app": "db"}}), pod("other", nodeName="a"), budget)
    assert disruption.eviction_allowed(Pod.objects.get(name="db-0")) is True  # 2 healthy, 1 must stay
    Pod.objects.filter(name="db-1").delete()
    assert disruption.eviction_allowed(Pod.objects.get(name="db-0")) is False
    assert disruption.eviction_allowed(Pod.objects.get(name="other")) is True
