"""`bench --backend kubernetes` runs end to end against the loopback API server and reports every figure
(for both backends) with nothing overcommitted; speed is printed, never asserted."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

BASE_DIR = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.kube, pytest.mark.slow]

KEYS = {"kube_pods_per_s", "kube_bind_p50_ms", "kube_bind_p99_ms", "kube_create_to_bound_p50_ms",
        "kube_create_to_bound_p99_ms", "kube_mirror_lag_p50_ms", "kube_mirror_lag_p99_ms", "kube_pool_full_warnings",
        "kube_first_bound_s", "kube_client_qps", "kube_client_burst", "kube_to_batch_p50_ms", "kube_batch_p50_ms",
        "kube_handoff_p50_ms", "kube_call_p50_ms", "kube_to_seen_p50_ms",
        "simulated_e2e_pods_per_s", "simulated_binding_p50_ms", "simulated_binding_p99_ms"}


def _bench_database_url() -> str:
    """A database of its own, named after this session's test database (two sessions never share it): the
    bench drops and recreates "<name>_bench" next to it."""
    test_name = settings.DATABASES["default"]["TEST"]["NAME"]
    return os.environ["DATABASE_URL"].rsplit("/", 1)[0] + f"/{test_name}_kbench"


@pytest.mark.parametrize("backlog", [False, True], ids=["live", "backlog"])
def test_bench_kubernetes_prints_both_backends_figures_and_overcommits_nothing(backlog):
    env = dict(os.environ)
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "REDIS_URL": settings.REDIS_URL,
                "DJANGO_SECRET_KEY": "bench-test", "SCHEDBOARD_EAGER": "0"})
    env["DATABASE_URL"] = _bench_database_url()
    result = subprocess.run([sys.executable, "manage.py", "bench", "--backend", "kubernetes", "--nodes", "10",
                             "--pods", "60", "--workers", "1", "--json", *(["--backlog"] if backlog else [])],
                            cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)
    assert KEYS <= set(figures)
    assert (figures["kube_nodes"], figures["kube_pods"]) == (10, 60)
    assert figures["kube_overcommitted_nodes"] == 0 and figures["simulated_overcommitted_nodes"] == 0
    assert figures["kube_pods_per_s"] > 0 and figures["simulated_e2e_pods_per_s"] > 0
    assert figures["kube_bind_p50_ms"] <= figures["kube_bind_p99_ms"]
    assert figures["kube_backlog"] is backlog
    assert figures["kube_mirror_lag_p50_ms"] <= figures["kube_mirror_lag_p99_ms"]
    # The client's pool has room for every call in flight: no connection is dropped and reopened.
    assert figures["kube_pool_full_warnings"] == 0


COMPARE_KEYS = {"kubesched_pods_per_s", "kubesched_create_to_bound_p50_ms", "kubesched_create_to_bound_p99_ms",
                "kubesched_first_bound_s", "kubesched_cpu_s_per_1000_pods", "kubesched_client_qps",
                "kubesched_client_burst", "kubesched_bind_mean_ms", "kubesched_default_pods_per_s",
                "kubesched_default_client_qps", "kube_vs_kubesched_pods_per_s", "kube_vs_kubesched_default_pods_per_s",
                "kube_cpu_s_per_1000_pods", "kube_vs_create_rate", "kubesched_vs_create_rate",
                "kube_after_first_pods_per_s", "kubesched_after_first_pods_per_s"}


def test_bench_compare_runs_kube_scheduler_on_the_same_shape_and_prints_the_ratio():
    """`--compare`: the real kube-scheduler v1.20.2 binds the same pods against its own fresh API server, with
    schedboard's client limits and with its defaults (50/100); the table and the ratio are printed."""
    env = dict(os.environ)
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "REDIS_URL": settings.REDIS_URL,
                "DJANGO_SECRET_KEY": "bench-test", "SCHEDBOARD_EAGER": "0"})
    env["DATABASE_URL"] = _bench_database_url()
    args = [sys.executable, "manage.py", "bench", "--backend", "kubernetes", "--nodes", "10", "--pods", "60",
            "--workers", "1", "--compare", "--client-qps", "500", "--client-burst", "500"]
    result = subprocess.run([*args, "--json"], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)
    assert COMPARE_KEYS <= set(figures)
    # The same client limits as schedboard's run, then kube-scheduler's own defaults.
    assert (figures["kubesched_client_qps"], figures["kubesched_client_burst"]) == (500, 500)
    assert (figures["kubesched_default_client_qps"], figures["kubesched_default_client_burst"]) == (50, 100)
    assert figures["kubesched_overcommitted_nodes"] == 0 and figures["kubesched_default_overcommitted_nodes"] == 0
    assert figures["kubesched_pods_per_s"] > 0 and figures["kubesched_cpu_s_per_1000_pods"] > 0
    assert figures["kubesched_bind_mean_ms"] > 0  # read from its own /metrics
    assert figures["kube_vs_kubesched_pods_per_s"] == round(figures["kube_pods_per_s"] / figures["kubesched_pods_per_s"], 3)
    assert figures["kubesched_create_to_bound_p50_ms"] <= figures["kubesched_create_to_bound_p99_ms"]
