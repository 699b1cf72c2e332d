"""The comparison's own parts, without a cluster: kube-scheduler's configuration, the means read from its
/metrics, and the table `bench --compare` prints."""

from scheduler.bench.kube_scheduler import compare_table, histogram_means, scheduler_config

METRICS = """\
# HELP scheduler_framework_extension_point_duration_seconds [ALPHA] Latency for running all plugins
# TYPE scheduler_framework_extension_point_duration_seconds histogram
scheduler_framework_extension_point_duration_seconds_bucket{extension_point="Bind",profile="default-scheduler",status="Success",le="+Inf"} 4
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Bind",profile="default-scheduler",status="Success"} 0.02
scheduler_framework_extension_point_duration_seconds_count{extension_point="Bind",profile="default-scheduler",status="Success"} 4
scheduler_framework_extension_point_duration_seconds_bucket{extension_point="Filter",profile="default-scheduler",status="Success",le="+Inf"} 4
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Filter",profile="default-scheduler",status="Success"} 9
scheduler_framework_extension_point_duration_seconds_count{extension_point="Filter",profile="default-scheduler",status="Success"} 4
# HELP scheduler_scheduling_algorithm_duration_seconds [ALPHA] Scheduling algorithm latency in seconds
# TYPE scheduler_scheduling_algorithm_duration_seconds histogram
scheduler_scheduling_algorithm_duration_seconds_bucket{le="+Inf"} 2
scheduler_scheduling_algorithm_duration_seconds_sum 0.003
scheduler_scheduling_algorithm_duration_seconds_count 2
"""


def test_histogram_means_read_the_bind_extension_point_alone_and_none_for_an_absent_series():
    means = histogram_means(METRICS)
    assert means == {"bind_mean_ms": 5.0, "algorithm_mean_ms": 1.5, "queued_to_bound_mean_ms": None}


def test_scheduler_config_sets_the_client_limits_the_default_profile_and_no_leader_election(tmp_path):
    config = scheduler_config(tmp_path / "kubeconfig", qps=5000, burst=5000, port=4321)
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1beta1"
    assert config["clientConnection"] == {"kubeconfig": str(tmp_path / "kubeconfig"), "qps": 5000.0, "burst": 5000}
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["profiles"] == [{"schedulerName": "default-scheduler"}]
    assert config["metricsBindAddress"] == config["healthzBindAddress"] == "127.0.0.1:4321"


def test_compare_table_puts_both_schedulers_side_by_side_with_the_ratio():
    result = {"kube_client_qps": 5000.0, "kube_client_burst": 5000, "kubesched_client_qps": 5000.0,
              "kubesched_client_burst": 5000, "kubesched_default_client_qps": 50.0, "kubesched_default_client_burst": 100,
              "kube_pods_per_s": 300.0, "kubesched_pods_per_s": 600.0, "kubesched_default_pods_per_s": 52.0,
              "kube_overcommitted_nodes": 0, "kubesched_overcommitted_nodes": 0, "kubesched_default_overcommitted_nodes": 0}
    lines = compare_table(result).splitlines()
    assert lines[0] == ("| figure | schedboard (qps 5000/5000) | kube-scheduler (qps 5000/5000) | "
                        "kube-scheduler (qps 50/100) | schedboard / kube-scheduler |")
    assert "| pods/s | 300.0 | 600.0 | 52.0 | 0.5 |" in lines
    # A figure one side lacks, and a ratio over zero, print as a dash.
    assert "| created -> bound p50 ms | — | — | — | — |" in lines
    assert "| overcommitted nodes | 0 | 0 | 0 | — |" in lines
