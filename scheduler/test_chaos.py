"""The fault suite in CI: a short `manage.py chaos` run per backend, real processes throughout, and the
promises asserted — no pod lost, no node overcommitted, no pod bound twice, binding back within 30 s
of the Postgres outage — with every planned fault injected and counted.

The run's Redis faults FLUSH the test session's Redis database (REDIS_URL): give a session its own.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from scheduler.chaos import hostile

BASE_DIR = Path(__file__).resolve().parent.parent

KEYS = {"pods_bound", "pods_pending_with_reason", "pods_lost", "lost_by_reason", "nodes_overcommitted",
        "overcommitted", "double_bound", "usage_drift_nodes", "drift_repaired", "faults", "postgres_recovery_s",
        "hostile", "bind_failures", "goals", "goals_met", "violations"}


def run_chaos(*args: str, timeout: float) -> dict:
    env = dict(os.environ)
    # A database of its own: the run drops and recreates "<name>_chaos" next to this one.
    name = os.environ.get("SCHEDBOARD_TEST_DB", "test_schedboard") + "_chaosrun"
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "REDIS_URL": settings.REDIS_URL,
                "DATABASE_URL": os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + name,
                "DJANGO_SECRET_KEY": "chaos-test", "SCHEDBOARD_EAGER": "0",
                # Short leases so that a short run settles: a killed worker's pods come back after 10 s, a
                # binding in flight whose job was lost with Redis (kubernetes) is freed after 20 s.
                "SCHEDBOARD_INFLIGHT_LEASE_SECONDS": "10", "SCHEDBOARD_ASSUME_TTL_SECONDS": "10",
                "SCHEDBOARD_BINDING_TIMEOUT_SECONDS": "20"})
    result = subprocess.run([sys.executable, "manage.py", "chaos", *args, "--json"], cwd=BASE_DIR, env=env,
                            capture_output=True, text=True, timeout=timeout)
    assert result.stdout, f"exit {result.returncode}\n{result.stderr[-4000:]}"
    report = json.loads(result.stdout)
    # Shown when a test fails: what the run saw, and where its worker and replica logs are.
    print("violations:", *report["violations"], "findings:", *report["findings"], "logs:", report["log_dir"], sep="\n")
    assert result.returncode == (0 if report["goals_met"] else 1)
    return report


def assert_promises_kept(report: dict) -> None:
    assert KEYS <= set(report)
    assert report["pods_lost"] == 0, (report["lost_by_reason"], report["lost_pods"][:5])
    assert report["nodes_overcommitted"] == 0, report["overcommitted"][:5]
    assert report["double_bound"] == 0, report["double_bound_pods"][:5]
    assert report["postgres_recovery_s"] is not None and report["postgres_recovery_s"] <= 30, report["faults"]
    assert report["goals_met"] and report["violations"] == []


@pytest.mark.slow
def test_a_short_chaos_run_on_the_simulated_backend_loses_no_pod_and_overcommits_no_node():
    report = run_chaos("--pods", "400", "--nodes", "40", "--duration", "45", "--kills", "4", "--seed", "1",
                       timeout=900)
    faults = report["faults"]
    assert faults["worker_kill"]["count"] == 4
    assert faults["redis_flush"]["count"] == 1 and faults["postgres_outage"]["count"] == 1
    assert [e["event"] for e in faults["postgres_outage"]["edges"]] == ["down", "up"]
    assert report["bind_failures"]["pods_annotated"] > 0 and report["bind_failures"]["injected_failures_seen"] > 0
    assert report["hostile"]["applied"] == len(hostile.KINDS)
    assert report["pods_bound"] + report["pods_pending_with_reason"] + report["pods_lost"] == \
        report["pods"] - report["pods_deleted"]
    assert_promises_kept(report)


@pytest.mark.slow
@pytest.mark.kube
def test_a_short_chaos_run_on_the_kubernetes_backend_survives_an_api_server_restart_and_a_leader_kill():
    report = run_chaos("--backend", "kubernetes", "--pods", "200", "--nodes", "20", "--duration", "60",
                       "--kills", "2", "--replicas", "2", "--seed", "1", timeout=1500)
    faults = report["faults"]
    assert faults["apiserver_restart"]["count"] == 1 and faults["apiserver_restart"]["restart_s"][0] is not None
    assert faults["leader_kill"]["count"] == 1 and faults["leader_kill"]["replica"][0] is not None
    assert faults["worker_kill"]["count"] == 2 and faults["postgres_outage"]["count"] == 1
    assert report["pods_create_failed"] == 0
    # The API server refused the planned share of first bindings (the webhook), and the pods still got bound.
    assert report["bind_failures"]["denied"] > 0
    assert report["hostile"]["applied"] == len(hostile.API_KINDS)
    assert report["mirror_disagrees_with_api"] == 0
    assert_promises_kept(report)
