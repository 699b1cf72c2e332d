"""scheduler_perf's workloads (`bench --workload`): the shapes are upstream's, the plugins really act on
them, and the command prints the figures with upstream's threshold beside them (no timing asserted)."""

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from django.conf import settings

from scheduler.bench import workloads
from scheduler.bench.workloads import HOSTNAME, ZONE, Case, prepare, run_engine, workload

BASE_DIR = Path(__file__).resolve().parents[2]


def test_every_workload_names_upstreams_threshold_case_first():
    for w in workloads.WORKLOADS.values():
        threshold, case = w.threshold
        assert threshold is not None and case == w.cases[0].name, w.name
        assert w.case(e2e=True) in w.cases


@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_each_workloads_small_case_schedules_every_pod_without_overcommitting(name):
    w = workload(name)
    figures = run_engine(w, w.case("5Nodes"))
    assert figures["init_pods_unplaced"] == 0
    assert figures["scheduled"] == w.case("5Nodes").measure_pods
    assert figures["overcommitted_nodes"] == 0


def test_nodes_carry_their_hostname_and_one_of_the_workloads_zones():
    run = prepare(workload("TopologySpreading"), Case("t", 30, 0, 0))
    labels = [m["metadata"]["labels"] for m in run.node_manifests]
    assert all(l[HOSTNAME] == m["metadata"]["name"] for l, m in zip(labels, run.node_manifests))
    assert {l[ZONE] for l in labels} == {"moon-1", "moon-2", "moon-3"}
    assert all(ZONE not in m["metadata"]["labels"] for m in prepare(workload("SchedulingBasic"), Case("t", 5, 0, 0)).node_manifests)


def test_anti_affinity_workload_puts_at_most_one_pod_per_host_and_leaves_the_sixth_unscheduled():
    # 5 nodes, 1 init pod, 5 measured: required anti-affinity on the hostname leaves one pod without a host.
    figures = run_engine(workload("SchedulingPodAntiAffinity"), Case("t", 5, 1, 5))
    assert figures["init_pods_unplaced"] == 0 and figures["scheduled"] == 4


def test_spreading_workload_keeps_zones_within_max_skew():
    w = workload("TopologySpreading")
    run = prepare(w, Case("t", 30, 0, 0))
    from scheduler.engine import perf
    from scheduler.manifests.objects import pod_from_manifest

    batch = [pod_from_manifest(m) for m in run.measured(60)]
    assert perf.time_schedule(run.cache, run.profile, run.algorithm, batch)["scheduled"] == 60
    zone_of = {m["metadata"]["name"]: m["metadata"]["labels"][ZONE] for m in run.node_manifests}
    per_zone = Counter(zone_of[run.cache.table.names[a.row]] for a in run.cache.assumed.values())
    assert max(per_zone.values()) - min(per_zone.values()) <= 5, per_zone  # the template's maxSkew


def test_default_spreading_workload_reads_the_service_selecting_its_pods():
    run = prepare(workload("DefaultTopologySpreading"), Case("t", 5, 0, 0))
    assert run.cache.table.objects.services == {"service-ns": [{"app": "scheduler-perf"}]}


def test_an_unknown_case_is_named_with_the_cases_there_are():
    with pytest.raises(ValueError, match=r"TopologySpreading has no case '1Node' \(cases: 5000Nodes_5000Pods, "):
        workload("TopologySpreading").case("1Node")


@pytest.mark.slow
def test_bench_workload_prints_the_figures_with_upstreams_threshold_end_to_end():
    env = dict(os.environ)
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "REDIS_URL": settings.REDIS_URL,
                "DJANGO_SECRET_KEY": "bench-test", "SCHEDBOARD_EAGER": "0"})
    env["DATABASE_URL"] = (os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/"
                           + os.environ.get("SCHEDBOARD_TEST_DB", "test_schedboard") + "_w")
    result = subprocess.run([sys.executable, "manage.py", "bench", "--workload", "SchedulingPodAntiAffinity",
                             "--case", "5Nodes", "--workers", "1", "--engine-runs", "1", "--json"],
                            cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)
    assert figures["workload"] == "SchedulingPodAntiAffinity" and figures["case"] == "5Nodes"
    assert figures["upstream_threshold_pods_per_s"] == 60 and figures["upstream_threshold_case"] == "5000Nodes_2000Pods"
    assert figures["engine_scheduled"] == 4 and figures["attempts"] == 4
    assert figures["overcommitted_nodes"] == 0 and figures["engine_overcommitted_nodes"] == 0
    assert figures["e2e_pods_per_s"] > 0 and figures["engine_pods_per_s"] > 0


@pytest.mark.slow
def test_bench_preemption_async_end_to_end_preempts_through_the_task_and_overcommits_nothing():
    env = dict(os.environ)
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "REDIS_URL": settings.REDIS_URL,
                "DJANGO_SECRET_KEY": "bench-test", "SCHEDBOARD_EAGER": "0"})
    env["DATABASE_URL"] = (os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/"
                           + os.environ.get("SCHEDBOARD_TEST_DB", "test_schedboard") + "_w")
    # 500 nodes full of low pods: the measured pods take seconds, so the 200 ms churn creates preemptors meanwhile.
    result = subprocess.run([sys.executable, "manage.py", "bench", "--workload", "PreemptionAsync", "--case", "500Nodes",
                             "--workers", "1", "--engine-runs", "1", "--json"],
                            cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    f = json.loads(result.stdout)
    assert f["upstream_threshold_pods_per_s"] == 570 and f["upstream_threshold_case"] == "5000Nodes"
    assert f["churned_pods"] >= 1 and f["preemptions"] >= 1
    assert f["preemption_victims"] == f["preempted_events"] == 3 * f["preemptions"]  # each really deleted by the task
    assert f["preemptors_bound"] + f["preemptors_pending"] == f["churned_pods"] and f["preemptors_pending"] == 0
    assert f["overcommitted_nodes"] == 0 and f["engine_overcommitted_nodes"] == 0
    assert f["attempts"] >= 500 - f["measured_pods_preempted"]


def test_bench_refuses_an_unknown_case_naming_the_cases():
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings", DJANGO_SECRET_KEY="bench-test")
    result = subprocess.run([sys.executable, "manage.py", "bench", "--workload", "TopologySpreading", "--case", "x",
                             "--skip-e2e"], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "TopologySpreading has no case 'x' (cases: 5000Nodes_5000Pods, 5000Nodes, 500Nodes, 5Nodes)" in result.stderr


def test_preemption_async_fills_each_node_with_four_low_pods_and_a_preemptor_evicts_three_then_binds():
    from scheduler.engine import perf
    from scheduler.engine.nominator import Nominator
    from scheduler.manifests.objects import pod_from_manifest

    w = workload("PreemptionAsync")
    assert (w.churn.interval, w.churn.namespace, w.init_namespace, w.measured_namespace) == (
        0.2, "namespace-2", "namespace-1", "namespace-3")  # one high-priority pod each 200 ms, upstream's op numbers
    run = prepare(w, w.case("5Nodes"))
    table = run.cache.table
    assert run.unplaced_init == 0 and list(table.requested_of("cpu")) == [3600] * 5  # 4 x 900m of 4 CPU
    high = pod_from_manifest(run.churned(0))
    assert (high.priority, high.requests["cpu"]) == (10, 3000)
    run.algorithm.nominator = Nominator()
    churn = perf.Churn(lambda i: pod_from_manifest(run.churned(i)), 0.2)
    perf._churn_cycle(run.cache, run.profile, run.algorithm, high, churn, set())
    assert (churn.attempts, churn.preemptions, churn.victims, churn.bound) == (1, 1, 3, 1)  # 2.7 + 0.4 free >= 3
    assert max(table.requested_of("cpu")) <= 4000
    # The measured pods (100m) still fit the others' 400m each: every one placed, nothing overcommitted.
    figures = run_engine(w, w.case("5Nodes"))
    assert figures["scheduled"] == 5 and figures["overcommitted_nodes"] == 0


def test_preemption_async_churned_pods_are_stored_as_scheduler_perfs_api_server_keeps_them():
    # No Priority admission there: spec.priority 10 stands without a class, and the row carries it.
    run = prepare(workload("PreemptionAsync"), Case("t", 1, 0, 0))
    manifest = run.churned(3)
    assert manifest["metadata"]["namespace"] == "namespace-2" and manifest["spec"]["priority"] == 10
    assert "priorityClassName" not in manifest["spec"]
