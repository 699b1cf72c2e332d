"""/metrics: kube-scheduler's names, labels and buckets, values equal to the rows in Postgres.

The in-process test reads only this process's metric files (symlinked into a private directory),
so other test sessions sharing the default directory cannot disturb the counts; it compares
what changed between two scrapes with the rows the test created.
"""

import glob
import os
import time

import pytest
from django.conf import settings
from django.db.models import Count
from django.test import override_settings
from prometheus_client.parser import text_string_to_metric_families

from scheduler.telemetry import metrics
from scheduler.models import Attempt, Node, Pod
from scheduler.queue.queues import get_queue

from scheduler.testing.loop import apply, drain, node, pod

# The shared Redis queue on a hand-moved clock (the `clock` fixture) for every test here.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def exponential(start, factor, count):
    # As Go's prometheus.ExponentialBuckets: multiplied step by step.
    out = []
    for _ in range(count):
        out.append(start)
        start *= factor
    return out


def scrape(client, path):
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    samples = {}
    families = {}
    for family in text_string_to_metric_families(response.content.decode()):
        families[family.name] = family
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return families, samples


def own_files_dir(tmp_path):
    """A directory holding only this process's metric files."""
    d = tmp_path / "own"
    d.mkdir(exist_ok=True)
    for f in glob.glob(os.path.join(settings.PROMETHEUS_MULTIPROC_DIR, f"*_{os.getpid()}.db")):
        link = d / os.path.basename(f)
        if not link.exists():
            link.symlink_to(f)
    return d


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(before, after, name, **labels):
    return value(after, name, **labels) - value(before, name, **labels)


def test_it_exports_kube_schedulers_metrics_with_values_equal_to_the_rows(client, tmp_path, clock):
    # Make sure every labelled series of the test exists before the first scrape.
    metrics.schedule_attempts.labels("scheduled", "default-scheduler")
    own = own_files_dir(tmp_path)
    with override_settings(PROMETHEUS_MULTIPROC_DIR=str(own)):
        _, before = scrape(client, own)
    apply(node("small", cpu="2"), node("other", cpu="2"),
          *[pod(f"p{i}", cpu="500m") for i in range(5)], pod("huge", cpu="64"),
          pod("flaky", cpu="100m", meta={"annotations": {"schedboard.io/fail-binds": "1"}}))
    drain(clock)
    own = own_files_dir(tmp_path)
    with override_settings(PROMETHEUS_MULTIPROC_DIR=str(own)):
        families, after = scrape(client, own)

    # Attempts by result equal the Attempt rows (a failed binding is an "error", as upstream).
    rows = dict(Attempt.objects.values_list("result").annotate(n=Count("id")))
    assert rows.get("scheduled") == 6 and rows.get("unschedulable", 0) >= 1 and rows.get("bind_failed") == 1
    name = "scheduler_schedule_attempts_total"
    assert delta(before, after, name, result="scheduled", profile="default-scheduler") == rows["scheduled"]
    assert delta(before, after, name, result="unschedulable", profile="default-scheduler") == rows["unschedulable"]
    assert delta(before, after, name, result="error", profile="default-scheduler") == rows["bind_failed"] + rows.get("error", 0)
    for result in ("scheduled", "unschedulable", "error"):
        assert (delta(before, after, "scheduler_scheduling_attempt_duration_seconds_count", result=result,
                      profile="default-scheduler")
                == delta(before, after, name, result=result, profile="default-scheduler"))
    assert delta(before, after, "scheduler_scheduling_algorithm_duration_seconds_count") == 7  # 6 placed + flaky once more
    # Every bound pod counts once in pod_scheduling_attempts and in the SLI, by its attempts.
    bound = Pod.objects.exclude(node_name="")
    assert delta(before, after, "scheduler_pod_scheduling_attempts_count") == bound.count() == 6
    assert delta(before, after, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") == 5
    assert delta(before, after, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="2") == 1
    assert delta(before, after, "scheduler_framework_extension_point_duration_seconds_count",
                 extension_point="Bind", status="Success", profile="default-scheduler") == 6
    assert delta(before, after, "scheduler_framework_extension_point_duration_seconds_count",
                 extension_point="Bind", status="Error", profile="default-scheduler") == 1
    # Extension points, every pod (not a sample): PreFilter once per algorithm run, Score when there
    # was more than one feasible node to rank.
    runs = Attempt.objects.count()
    ranked = Attempt.objects.filter(feasible_nodes__gt=1).count()
    assert ranked >= 1
    assert delta(before, after, "scheduler_framework_extension_point_duration_seconds_count",
                 extension_point="PreFilter", status="Success", profile="default-scheduler") == runs
    assert delta(before, after, "scheduler_framework_extension_point_duration_seconds_count",
                 extension_point="Score", status="Success", profile="default-scheduler") == ranked
    # Pods entering the queue: seven added; every failed attempt put back (flaky's refused binding too).
    incoming = "scheduler_queue_incoming_pods_total"
    assert delta(before, after, incoming, queue="active", event="UnschedulablePodAdd") == 7
    failures = Attempt.objects.exclude(result="scheduled").count()
    assert (delta(before, after, incoming, queue="backoff", event="ScheduleAttemptFailure")
            + delta(before, after, incoming, queue="unschedulable", event="ScheduleAttemptFailure")) == failures
    assert delta(before, after, incoming, queue="backoff", event="ScheduleAttemptFailure") >= 1

    # Current state, read at scrape time: the queue's lengths and the cache.
    lengths = get_queue().lengths()
    for queue in ("active", "backoff", "unschedulable"):
        assert value(after, "scheduler_pending_pods", queue=queue) == lengths[queue]
    assert value(after, "scheduler_pending_pods", queue="unschedulable") + value(after, "scheduler_pending_pods", queue="backoff") == 1
    assert value(after, "scheduler_pending_pods", queue="gated") == 0
    assert value(after, "scheduler_scheduler_cache_size", type="nodes") == Node.objects.count() == 2
    assert value(after, "scheduler_scheduler_cache_size", type="pods") == 6
    assert value(after, "scheduler_scheduler_cache_size", type="assumed_pods") == 0

    # Upstream's help texts and bucket boundaries.
    assert families["scheduler_schedule_attempts"].documentation.startswith("Number of attempts to schedule pods, by the result.")
    expected_buckets = {
        "scheduler_scheduling_attempt_duration_seconds": exponential(0.001, 2, 15),
        "scheduler_scheduling_algorithm_duration_seconds": exponential(0.001, 2, 15),
        "scheduler_pod_scheduling_sli_duration_seconds": exponential(0.01, 2, 20),
        "scheduler_pod_scheduling_attempts": exponential(1, 2, 5),
        "scheduler_framework_extension_point_duration_seconds": exponential(0.0001, 2, 12),
    }
    for family_name, bounds in expected_buckets.items():
        les = {float(s.labels["le"]) for s in families[family_name].samples if s.name.endswith("_bucket")}
        assert les == {*bounds, float("inf")}, family_name


def test_sampled_pods_record_plugin_and_extension_point_durations(client, tmp_path, clock, monkeypatch):
    monkeypatch.setattr(metrics, "should_sample_plugins", lambda: True)
    metrics.schedule_attempts.labels("scheduled", "default-scheduler")
    own = own_files_dir(tmp_path)
    with override_settings(PROMETHEUS_MULTIPROC_DIR=str(own)):
        _, before = scrape(client, own)
    # Three signatures (the requests differ): each pod runs every plugin itself (see the next test for pods
    # that share a signature).
    apply(node("a"), node("b"), *[pod(f"p{i}", cpu=f"{100 * (i + 1)}m") for i in range(3)])
    drain(clock)
    own = own_files_dir(tmp_path)
    with override_settings(PROMETHEUS_MULTIPROC_DIR=str(own)):
        families, after = scrape(client, own)
    assert delta(before, after, "scheduler_plugin_execution_duration_seconds_count", plugin="NodeResourcesFit",
                 extension_point="Filter", status="Success") == 3
    assert delta(before, after, "scheduler_plugin_execution_duration_seconds_count", plugin="NodeResourcesFit",
                 extension_point="Score", status="Success") == 3
    assert delta(before, after, "scheduler_framework_extension_point_duration_seconds_count", extension_point="Score",
                 status="Success", profile="default-scheduler") == Attempt.objects.filter(feasible_nodes__gt=1).count()
    les = {float(s.labels["le"]) for s in families["scheduler_plugin_execution_duration_seconds"].samples
           if s.name.endswith("_bucket")}
    assert les == {*exponential(0.00001, 1.5, 20), float("inf")}


def test_a_pod_reading_its_signatures_batch_runs_no_filter_plugin(client, tmp_path, clock, monkeypatch):
    # Opportunistic batching: the first pod of a signature runs alone, the second builds the batch (running
    # the filters over every node), the third reads the batch's verdicts, so Filter runs twice for three pods.
    monkeypatch.setattr(metrics, "should_sample_plugins", lambda: True)
    own = own_files_dir(tmp_path)
    with override_settings(PROMETHEUS_MULTIPROC_DIR=str(own)):
        _, before = scrape(client, own)
    apply(node("a"), node("b"), *[pod(f"p{i}", cpu="100m") for i in range(3)])
    drain(clock)
    own = own_files_dir(tmp_path)
    with override_settings(PROMETHEUS_MULTIPROC_DIR=str(own)):
        _, after = scrape(client, own)
    assert Pod.objects.exclude(node_name="").count() == 3
    assert delta(before, after, "scheduler_plugin_execution_duration_seconds_count", plugin="NodeResourcesFit",
                 extension_point="Filter", status="Success") == 2


@pytest.mark.slow
def test_counters_sum_across_two_real_worker_processes(client, tmp_path, workers):
    shared = tmp_path / "prom"
    shared.mkdir()
    apply(*[node(f"n{i:02d}") for i in range(20)], *[pod(f"p{i:03d}", cpu="100m", memory="100Mi") for i in range(400)])
    workers(2, PROMETHEUS_MULTIPROC_DIR=str(shared), SCHEDBOARD_BATCH_SIZE="16")
    deadline = time.monotonic() + 180
    while Pod.objects.exclude(node_name="").count() < 400:
        assert time.monotonic() < deadline, "timed out waiting for 400 bindings"
        time.sleep(0.25)
    assert Attempt.objects.values("worker").distinct().count() == 2  # both processes scheduled
    with override_settings(PROMETHEUS_MULTIPROC_DIR=str(shared)):
        deadline = time.monotonic() + 30
        while True:  # the last bind batch observes right after its commit
            _, samples = scrape(client, shared)
            total = value(samples, "scheduler_schedule_attempts_total", result="scheduled", profile="default-scheduler")
            if total == 400 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    assert total == Attempt.objects.filter(result="scheduled").count() == 400
    assert value(samples, "scheduler_pod_scheduling_attempts_count") == 400
    assert len(glob.glob(str(shared / "counter_*.db"))) >= 2
