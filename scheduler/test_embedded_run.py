"""`make run`'s service: one process on SQLite with an in-memory queue, no Postgres or Redis."""

import pytest

from scheduler.testing.embedded import embedded_run, manage, migrated_env, poll

pytestmark = pytest.mark.slow


def test_the_embedded_service_seeds_a_cluster_and_schedules_the_trickle_without_postgres_or_redis(tmp_path):
    env = migrated_env(tmp_path)
    with embedded_run(env, "--no-web", "--rate", "25") as run:
        # Enough bound, and at least one of the demo's unschedulable-on-purpose pods tried.
        pods, events = poll(lambda: (manage(env, "get", "pods", "-A", "-o", "wide").stdout,
                                     manage(env, "get", "events", "-A").stdout),
                            lambda seen: seen[0].count("Running") >= 20 and "FailedScheduling" in seen[1],
                            "the embedded loop did not schedule the trickle")
    out = run.out
    assert "seeded 15 nodes" in out and "schedboard is running (embedded mode)" in out
    # The loop and trickle threads share the SQLite file: writers wait their turn (BEGIN IMMEDIATE), and
    # none of their iterations fails on a lock.
    assert "database is locked" not in out, out[-4000:]
    assert "python manage.py get pods -A -o wide" in out
    nodes = manage(env, "get", "nodes").stdout
    assert "Ready,SchedulingDisabled" in nodes  # the cordoned node
    assert "Pending" in pods
    events = manage(env, "get", "events", "-A").stdout
    assert "Scheduled" in events and "Successfully assigned" in events
    # Some demo pods are unschedulable on purpose, with kube-scheduler's message.
    assert "FailedScheduling" in events and "nodes are available:" in events


OLD_ROWS = """
from datetime import timedelta
from django.utils import timezone
from scheduler.models import Attempt, ClusterEvent, Event
long_ago = timezone.now() - timedelta(days=30)
Attempt.objects.create(namespace="default", pod_name="old", number=1, result="unschedulable", started_at=long_ago)
Event.objects.create(dedup_key="old", type="Warning", reason="FailedScheduling", message="m", involved_kind="Pod",
                     involved_name="old", first_timestamp=long_ago, last_timestamp=long_ago)
for _ in range(2):
    ClusterEvent.objects.filter(pk=ClusterEvent.objects.create(kind="NodeAdd").pk).update(created_at=long_ago)
"""
LEFT = ("from scheduler.models import Attempt, ClusterEvent, Event; "
        "print(Attempt.objects.filter(pod_name='old').count(), Event.objects.filter(dedup_key='old').count(), "
        "ClusterEvent.objects.count())")


def test_the_embedded_service_deletes_rows_past_their_retention_on_sqlite(tmp_path):
    env = migrated_env(tmp_path)
    assert manage(env, "shell", "-c", OLD_ROWS).returncode == 0
    assert manage(env, "shell", "-c", LEFT).stdout.splitlines()[-1].split() == ["1", "1", "2"]
    with embedded_run(env, "--no-web", "--no-seed", "--rate", "0") as run:
        # The old attempt and event gone; of the cluster events, the newest stays.
        poll(lambda: manage(env, "shell", "-c", LEFT).stdout.splitlines()[-1].split(), lambda left: left == ["0", "0", "1"],
             "the embedded loop did not apply retention", interval=1)
    out = run.out
    assert "retention: deleted 1 attempts, 1 events, 1 cluster events" in out, out[-4000:]


def test_the_embedded_demo_places_the_topology_workloads_as_their_constraints_say(tmp_path):
    import json

    env = migrated_env(tmp_path)

    def seen():
        events = manage(env, "get", "events", "-n", "storefront").stdout
        listed = json.loads(manage(env, "get", "pods", "-A", "-o", "json").stdout or '{"items": []}')["items"]
        node_of = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["spec"].get("nodeName") for p in listed}
        return {k: v for k, v in node_of.items() if k.startswith(("storefront/", "monitoring/"))}, events

    with embedded_run(env, "--no-web", "--rate", "0") as run:
        demo, events = poll(seen, lambda s: len(s[0]) == 11 and sum(1 for v in s[0].values() if v) == 10
                            and "loner" in s[1], "the demo workloads were not placed")
    out = run.out
    assert "seeded the storefront workloads" in out
    web = [v for k, v in demo.items() if k.startswith("storefront/web-")]
    assert len(web) == 6 and sorted(n.split("-")[1] for n in web) == ["a", "a", "b", "b", "c", "c"]  # zone-X-...
    caches = {demo[f"storefront/cache-{i}"] for i in range(3)}
    assert len(caches) == 3 and demo["monitoring/cache-exporter"] in caches
    assert demo["storefront/loner"] is None
    assert "didn't match pod anti-affinity rules" in events
    assert "web" in manage(env, "get", "replicasets", "-n", "storefront").stdout
    assert "cache" in manage(env, "get", "statefulsets", "-n", "storefront").stdout
