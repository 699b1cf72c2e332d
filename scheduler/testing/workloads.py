"""Driving the workload controllers and the scheduler in one process, for tests: what beat's workloads task
and the workers do, in rounds, until nothing changes (the controllers' statuses included: a Deployment
cleans up once the status it last wrote says its rollout is complete)."""

import json

from scheduler.controllers import workloads
from scheduler.models import ClusterObject, Pod
from scheduler.testing.loop import apply, drain


def cluster_state() -> str:
    objects = list(ClusterObject.objects.order_by("kind", "namespace", "name").values_list("kind", "name", "manifest"))
    pods = list(Pod.objects.order_by("namespace", "name").values_list("name", "node_name", "phase"))
    return json.dumps([objects, pods], sort_keys=True, default=str)


def settle(clock=None, rounds: int = 60, now=None) -> int:
    """Controllers then scheduler, round after round, until two rounds change nothing; the rounds run."""
    quiet, before = 0, cluster_state()
    for i in range(rounds):
        workloads.sync_all(now)
        drain(clock)
        after = cluster_state()
        quiet = quiet + 1 if after == before else 0
        before = after
        if quiet == 2:
            return i + 1
    raise AssertionError(f"the workloads never settled in {rounds} rounds")


def workload(kind, name="web", replicas=3, api="apps/v1", image="nginx", cpu="100m", **spec):
    """A Deployment, ReplicaSet, StatefulSet or ReplicationController of `replicas` one-container pods."""
    selector = {"app": name} if kind == "ReplicationController" else {"matchLabels": {"app": name}}
    template_spec = {"containers": [{"name": "c", "image": image, "resources": {"requests": {"cpu": cpu}}}],
                     **spec.pop("template_spec", {})}
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": selector,
                     "template": {"metadata": {"labels": {"app": name}}, "spec": template_spec}, **spec}}


__all__ = ["apply", "cluster_state", "settle", "workload"]
