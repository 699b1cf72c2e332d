"""The heart of replay: a run of the real loop (simulated backend, one worker), recorded from the
database and replayed under its own configuration, reproduces every binding it made.

Conditions pinned here, where replay must match: one worker (no reservation races), a fixed
SCHEDBOARD_SEED (the tie-break among equal scores), a worker started within the trace (its RNG
and round-robin index start where the replay's do), and the database's clock and the queue's clock
the same (the test moves both by hand), so backoff waits line up with the recorded times.
"""

import io
import json
from datetime import datetime, timedelta, timezone as dt_timezone

import pytest
import yaml
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from scheduler import loop
from scheduler.telemetry import metrics
from scheduler.queue import queues
from scheduler.engine.config import load_config
from scheduler.manifests.files import parse_documents
from scheduler.controllers.drain import cordon
from scheduler.models import Attempt, Binding, DeletedNode, DeletedPod, NodeRevision, Pod
from scheduler.replay.record import record_from_database
from scheduler.versions.services import config_version_create
from scheduler.queue.redis_queue import RedisQueue
from scheduler.cluster.services import cluster_apply, node_delete, pod_delete

pytestmark = pytest.mark.django_db(transaction=True)

MOST_ALLOCATED = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
"""


class Clock:
    """One clock for the queue and for every timestamp the database writes (timezone.now)."""

    def __init__(self, now=1_800_000_000.0):
        self.now = now

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds

    def datetime(self):
        return datetime.fromtimestamp(self.now, dt_timezone.utc)


@pytest.fixture
def clock(monkeypatch, settings):
    settings.SCHEDBOARD_SEED = 7
    c = Clock()
    monkeypatch.setattr(timezone, "now", c.datetime)
    queues.reset_queue(RedisQueue(queues.get_redis(), prefix=settings.SCHEDBOARD_QUEUE_PREFIX, clock=c,
                                  on_incoming=metrics.count_incoming))
    return c


def node(name, cpu, memory="16Gi", zone="z1"):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone, "kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def pod(name, cpu, memory="1Gi", labels=None):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "nginx",
                                     "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}


def apply(*objs):
    cluster_apply(parse_documents(yaml.safe_dump_all(objs), "test.yaml"))


def drain(clock):
    for _ in range(50):
        loop.reconcile()
        if loop.run_schedule_task().popped:
            continue
        if queues.get_queue().lengths()["backoff"]:
            clock.advance(11)
            continue
        return
    raise AssertionError("queue never drained")


def live_run(clock):
    """Ties (four identical nodes), failures that wait for a node, a configuration switch."""
    apply(*[node(f"a{i}", "4", zone=f"z{i % 2}") for i in range(4)], node("b0", "8", "32Gi"), node("c0", "2", "4Gi"))
    clock.advance(1)
    apply(*[pod(f"p{i:02d}", cpu) for i, cpu in enumerate(["500m", "1", "250m", "2", "1500m", "750m"] * 3)])
    drain(clock)
    clock.advance(5)
    apply(*[pod(f"big{i}", "6", "4Gi") for i in range(3)], pod("huge", "64"))  # fit no node yet; huge never
    drain(clock)
    clock.advance(30)
    apply(node("d0", "16", "64Gi", zone="z2"))  # two of the three fit now
    drain(clock)
    clock.advance(20)
    apply(*[pod(f"q{i:02d}", "1", "2Gi") for i in range(6)])
    drain(clock)
    clock.advance(60)
    config_version_create(config=load_config(MOST_ALLOCATED, "most.yaml"), reason="pack the nodes")
    clock.advance(1)
    apply(*[pod(f"r{i:02d}", cpu) for i, cpu in enumerate(["500m", "1", "250m", "750m"] * 2)])
    drain(clock)
    clock.advance(10)


def stamp(clock):
    """The triggers (migrations 0011, 0014) stamp their rows with the database's clock; this test runs on
    its own, so the rows of what it just did get its time."""
    when = clock.datetime()
    DeletedPod.objects.filter(deleted_at__lt=when - timedelta(days=1)).update(deleted_at=when)
    DeletedNode.objects.filter(deleted_at__lt=when - timedelta(days=1)).update(deleted_at=when)
    NodeRevision.objects.filter(replaced_at__lt=when - timedelta(days=1)).update(replaced_at=when)


def changes_run(clock):
    """After live_run: a node cordoned (an update) while pods arrive, bound pods and a pending one deleted
    (room freed, the queue moved), a node added then deleted before the next pods, the node uncordoned."""
    live_run(clock)
    cordon("b0")
    stamp(clock)
    clock.advance(3)
    for name in ("p00", "p03", "q01", "huge"):
        pod_delete(namespace="default", name=name)
        stamp(clock)
        clock.advance(1)
    apply(node("x0", "32", "128Gi"))
    clock.advance(5)
    node_delete(name="x0")
    stamp(clock)
    clock.advance(1)
    flaky = pod("flaky", "100m", "64Mi")  # the simulated backend refuses its first binding: the replay must too
    flaky["metadata"]["annotations"] = {"schedboard.io/fail-binds": "1"}
    apply(flaky)
    drain(clock)
    clock.advance(1)
    # A Service from now on: default spreading (PodTopologySpread's system defaults) counts the pods it selects.
    apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    clock.advance(1)
    apply(*[pod(f"s{i:02d}", "500m", "1Gi", labels={"app": "web"}) for i in range(12)])
    drain(clock)
    clock.advance(15)
    cordon("b0", False)
    stamp(clock)
    clock.advance(1)
    apply(*[pod(f"t{i:02d}", "2", "1Gi") for i in range(4)])
    drain(clock)
    clock.advance(10)


def live_tables():
    from scheduler.models import Attempt, ClusterEvent, Event, Node

    rows = {m.__name__: sorted(m.objects.values_list("pk", flat=True)) for m in (Pod, Node, Binding, Attempt, Event, ClusterEvent)}
    pods = sorted(Pod.objects.values_list("namespace", "name", "node_name", "assumed_node"))
    nodes = sorted(Node.objects.values_list("name", "req_cpu", "req_memory", "req_pods"))
    return rows, pods, nodes, queues.get_queue().lengths()


def record_and_replay(tmp_path, *replay_args):
    path = tmp_path / "trace.jsonl"
    call_command("record", "--since", "1h", "-o", str(path), stdout=io.StringIO())
    out = io.StringIO()
    call_command("replay", str(path), "--json", *replay_args, stdout=out)
    return path, json.loads(out.getvalue())


def test_replaying_a_recorded_run_under_its_own_configuration_reproduces_every_binding(clock, tmp_path):
    live_run(clock)
    bindings = dict(((f"{ns}/{name}", node) for ns, name, node in Binding.objects.values_list("namespace", "pod_name", "node_name")))
    pods = {p.key: p.node_name or None for p in Pod.objects.all()}
    assert len(bindings) >= 30 and list(pods.values()).count(None) >= 1  # the run had work, and a pod left pending

    tables = live_tables()
    _, report = record_and_replay(tmp_path)
    assert live_tables() == tables  # nothing live touched: rows, and the queue

    run = report["configs"][0]
    assert run["config"] == "recorded" and report["trace"]["recorded_bindings"] == len(bindings)
    assert run["recorded_differs"] == [] and run["recorded_matches"] == len(bindings)
    assert run["placements"] == pods  # and where every pod still there ended up, the pending one included
    assert run["pending"] == list(pods.values()).count(None)


def test_replay_under_another_seed_or_configuration_does_not_reproduce_it(clock, tmp_path):
    """The reproduction above is not vacuous: the tie-break seed and the configuration both show."""
    live_run(clock)
    path, _ = record_and_replay(tmp_path)
    out = io.StringIO()
    call_command("replay", str(path), "--json", "--seed", "8", stdout=out)
    assert json.loads(out.getvalue())["configs"][0]["recorded_differs"] != []
    least = tmp_path / "least.yaml"
    least.write_text(MOST_ALLOCATED.replace("MostAllocated", "LeastAllocated"))
    out = io.StringIO()
    call_command("replay", str(path), "--json", "--config", str(least), stdout=out)
    assert json.loads(out.getvalue())["configs"][0]["recorded_differs"] != []


def ties_run(clock, workers, pods=24):
    """Four equal nodes and equal pods a few at a time, the workers taking batches in turn: ties all along."""
    for i in range(pods // 4):
        apply(*[pod(f"w{i:02d}-{j}-{clock.now:.0f}", "500m", "512Mi") for j in range(4)])
        for _ in range(2):
            loop.reset_worker(workers[i % len(workers)])
            loop.reconcile()
            loop.run_schedule_task()
        clock.advance(2)


def window_bindings(start):
    return {f"{ns}/{name}": node for ns, name, node in Binding.objects.filter(bound_at__gt=start).values_list(
        "namespace", "pod_name", "node_name")}


def replay_window(start, clock, strip_tiebreaks=False):
    from scheduler.replay.run import replay_trace

    trace = record_from_database(start=start, end=clock.datetime())
    if strip_tiebreaks:
        for e in trace.events:
            e.pop("tiebreaks", None)
        trace.pod_tiebreaks.clear()
    return trace, replay_trace(trace, [("recorded", None)])["configs"][0]


def test_an_unseeded_worker_that_ran_before_the_trace_is_reproduced_with_no_seed_given(clock, settings):
    """The worker drew a seed of its own and made many draws before the window: each attempt recorded where its
    draws stood, so the replay draws the same with no --seed. Without those positions it does not reproduce."""
    settings.SCHEDBOARD_SEED = None
    settings.SCHEDBOARD_BATCH_SIZE = 2
    apply(*[node(f"a{i}", "64", "256Gi") for i in range(4)])
    worker = loop.Worker()
    ties_run(clock, [worker])
    clock.advance(30)
    start = clock.datetime()
    clock.advance(1)
    ties_run(clock, [worker])
    bindings = window_bindings(start)
    assert len(bindings) == 24
    trace, run = replay_window(start, clock)
    assert trace.header["seed"] == worker.algorithm.tiebreak.seed
    assert run["recorded_differs"] == [] and run["recorded_matches"] == len(bindings)
    _, blind = replay_window(start, clock, strip_tiebreaks=True)
    assert blind["recorded_differs"] != []


def test_two_workers_with_seeds_of_their_own_are_each_followed_where_their_draws_stood(clock, settings):
    """Two workers (seeds 5 and 9) take batches in turn: one replayer reproduces both, drawing each attempt from
    its own worker's stream; a single stream (the trace's seed alone) does not."""
    settings.SCHEDBOARD_BATCH_SIZE = 2
    start = clock.datetime()
    clock.advance(1)
    apply(*[node(f"a{i}", "64", "256Gi") for i in range(4)])
    ties_run(clock, [loop.Worker(seed=5), loop.Worker(seed=9)])
    bindings = window_bindings(start)
    assert len(bindings) == 24
    assert set(Attempt.objects.values_list("tiebreak_seed", flat=True)) == {5, 9}
    _, run = replay_window(start, clock)
    assert run["recorded_differs"] == [] and run["recorded_matches"] == len(bindings)
    _, blind = replay_window(start, clock, strip_tiebreaks=True)
    assert blind["recorded_differs"] != []


def test_a_name_used_again_is_recorded_and_replayed_as_another_pod_with_its_own_attempts(clock):
    """A StatefulSet's pod deleted and created anew under its name: each pod's live attempts (by uid) go with its
    own arrival, so each is tried where its own draws stood, and both bindings are compared in turn."""
    start = clock.datetime()
    clock.advance(1)
    apply(*[node(f"a{i}", "8", "32Gi") for i in range(4)])
    for turn in range(3):
        apply(pod("cache-0", "1", "1Gi"), *[pod(f"t{turn}-{j}", "1", "1Gi") for j in range(3)])
        drain(clock)
        clock.advance(5)
        pod_delete(namespace="default", name="cache-0")
        stamp(clock)
        clock.advance(5)
    trace, run = replay_window(start, clock)
    arrivals = [e for e in trace.events if e["kind"] == "pod_add" and e["manifest"]["metadata"]["name"] == "cache-0"]
    assert len(arrivals) == 3 and all(len(e["tiebreaks"]) == 1 for e in arrivals)
    assert len({e["manifest"]["metadata"]["uid"] for e in arrivals}) == 3
    assert trace.recorded_placements["default/cache-0"] == list(
        Binding.objects.filter(pod_name="cache-0").order_by("bound_at").values_list("node_name", flat=True))
    assert run["recorded_differs"] == [] and run["recorded_matches"] == Binding.objects.count() == 12


def test_a_run_with_deletions_node_updates_and_a_node_removed_replays_to_the_same_bindings(clock, tmp_path):
    changes_run(clock)
    bindings = {f"{ns}/{name}": node for ns, name, node in Binding.objects.values_list("namespace", "pod_name", "node_name")}
    pods = {p.key: p.node_name or None for p in Pod.objects.all()}

    path, report = record_and_replay(tmp_path)

    kinds = [json.loads(line)["kind"] for line in path.read_text().splitlines()]
    # Each cordon is two updates: spec.unschedulable, then the node lifecycle's unschedulable taint.
    assert kinds.count("pod_delete") == 4 and kinds.count("node_update") == 4
    assert kinds.count("node_delete") == 1 and kinds.count("node_add") == 8 and kinds.count("object_add") == 1
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [x["pods"] for x in lines if x["kind"] == "bind_failures"] == [{"default/flaky": 1}]
    flaky = [x for x in lines if x["kind"] == "pod_add" and x["manifest"]["metadata"]["name"] == "flaky"]
    assert flaky and all(x["first_snapshot_t"] >= x["first_attempt_t"] for x in flaky)  # read after it started
    run = report["configs"][0]
    assert run["recorded_differs"] == [] and run["recorded_matches"] == len(bindings)
    assert run["bind_failures"] == 1
    assert run["placements"] == pods  # the deleted ones gone, pending "huge" too
    assert run["pending"] == list(pods.values()).count(None)


def test_a_trace_starts_with_each_node_as_it_was_then_and_each_change_after(clock):
    changes_run(clock)
    cordoned_at = Pod.objects.get(name="s00").queued_at  # b0 was cordoned then, uncordoned since
    trace = record_from_database(start=cordoned_at, end=clock.datetime())
    b0 = next(m for m in trace.nodes if m["metadata"]["name"] == "b0")
    assert b0["spec"]["unschedulable"] is True
    assert "x0" not in {m["metadata"]["name"] for m in trace.nodes}  # deleted before the start
    updates = [e for e in trace.events if e["kind"] == "node_update"]
    assert {e["manifest"]["metadata"]["name"] for e in updates} == {"b0"} and len(updates) == 2  # uncordon, untaint
    assert not updates[-1]["manifest"]["spec"].get("unschedulable") and not updates[-1]["manifest"]["spec"].get("taints")
    assert [e for e in trace.events if e["kind"] in ("pod_delete", "node_delete")] == []  # all before the start
    # The Service came before the start: among the objects the plugins read, as a v1 Service.
    [service] = trace.objects
    assert (service["apiVersion"], service["kind"], service["metadata"]["name"]) == ("v1", "Service", "web")
    assert service["spec"]["selector"] == {"app": "web"}


def test_a_pod_bound_before_the_start_is_recorded_as_started_when_it_was_bound(clock):
    """The simulated cluster has no kubelet to write status.startTime; the live snapshot reads a placed pod's
    start as its binding time (preemption prefers the victims that started last): the trace says so too."""
    live_run(clock)
    start = Pod.objects.get(name="q00").queued_at
    trace = record_from_database(start=start, end=clock.datetime())
    bound = {f"{ns}/{name}": when for ns, name, when in Pod.objects.exclude(bound_at=None).values_list(
        "namespace", "name", "bound_at")}
    started = {f"{m['metadata']['namespace']}/{m['metadata']['name']}": m["status"]["startTime"]
               for m, node_name in trace.pods if node_name}
    assert len(started) >= 10
    assert all(datetime.fromisoformat(when) == bound[key] <= start for key, when in started.items())


def test_a_node_status_heartbeat_is_no_node_update_but_a_label_change_is():
    from scheduler.cluster.services import node_manifest_update

    start = timezone.now()
    apply(node("n1", "4"))

    def heartbeat(m):
        m.setdefault("status", {})["conditions"] = [{"type": "Ready", "status": "True",
                                                      "lastHeartbeatTime": "2026-12-01T10:00:00Z"}]

    def relabel(m):
        m["metadata"]["labels"]["disktype"] = "nvme"

    assert node_manifest_update(name="n1", mutate=heartbeat) is not None
    assert node_manifest_update(name="n1", mutate=relabel)
    assert NodeRevision.objects.filter(name="n1").count() == 2  # the trigger keeps both
    trace = record_from_database(start=start, end=timezone.now())
    updates = [e for e in trace.events if e["kind"] == "node_update"]
    assert len(updates) == 1 and updates[0]["manifest"]["metadata"]["labels"]["disktype"] == "nvme"
    [added] = [e for e in trace.events if e["kind"] == "node_add"]
    assert "disktype" not in added["manifest"]["metadata"]["labels"]  # as it was when added
