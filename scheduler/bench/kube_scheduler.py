"""`bench --backend kubernetes --compare`: the real kube-scheduler v1.20.2 on the same shape, against a
fresh loopback API server, with the same pods (schedulerName default-scheduler: its default profile).

The binary is built from the same Debian source tree as the API server (`scripts/kube-apiserver.sh build
kube-scheduler`, cached beside it, never committed). It runs as scheduler_perf runs it: no leader election,
its client's qps/burst raised (clientConnection, the setting schedboard's SCHEDBOARD_KUBE_QPS/BURST
mirrors); the bench also runs it at its defaults (50/100) for reference. Its healthz and metrics are
served on a loopback port (no authentication: healthzBindAddress/metricsBindAddress, the insecure
listeners v1.20 still has); the secure port is off.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from .kube import Scheduler, _stop, drive_shape

# kube-scheduler's own defaults for clientConnection (v1beta1 SetDefaults_KubeSchedulerConfiguration).
DEFAULT_QPS, DEFAULT_BURST = 50.0, 100
# Means of its histograms, read from /metrics after the run: where its time goes.
_MEANS = {
    "bind_mean_ms": ("scheduler_framework_extension_point_duration_seconds", {"extension_point": "Bind"}),
    "algorithm_mean_ms": ("scheduler_scheduling_algorithm_duration_seconds", {}),
    "queued_to_bound_mean_ms": ("scheduler_pod_scheduling_duration_seconds", {}),
}


def missing_binary() -> str:
    """Why kube-scheduler cannot run (how to build it), or "" when it is built."""
    from ..testing.kube_apiserver import KubeApiServerNotBuilt, cached_binary

    try:
        cached_binary("kube-scheduler")
    except KubeApiServerNotBuilt as exc:
        return str(exc)
    return ""


def scheduler_config(kubeconfig: Path, *, qps: float, burst: int, port: int) -> dict:
    """A KubeSchedulerConfiguration (v1beta1, v1.20's) with the default profile."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1beta1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": float(qps), "burst": int(burst)},
        "leaderElection": {"leaderElect": False},
        "healthzBindAddress": f"127.0.0.1:{port}",
        "metricsBindAddress": f"127.0.0.1:{port}",
        "profiles": [{"schedulerName": "default-scheduler"}],
    }


def _metrics(port: int) -> str:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            return response.read().decode()
    except OSError:
        return ""


def histogram_means(text: str) -> dict:
    """The _MEANS of a Prometheus text exposition, in ms (None when the series is absent)."""
    from prometheus_client.parser import text_string_to_metric_families

    sums: dict[str, list[float]] = {key: [0.0, 0.0] for key in _MEANS}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            for key, (name, labels) in _MEANS.items():
                if not all(sample.labels.get(k) == v for k, v in labels.items()):
                    continue
                if sample.name == name + "_sum":
                    sums[key][0] += sample.value
                elif sample.name == name + "_count":
                    sums[key][1] += sample.value
    return {key: round(total * 1000.0 / count, 3) if count else None for key, (total, count) in sums.items()}


def run_kube_scheduler(*, nodes: int, pods: int, backlog: bool, qps: float, burst: int, prefix: str = "kubesched",
                       progress=None, timeout: float = 900.0) -> dict:
    """kube-scheduler on the shape (bench/kube.drive_shape), against its own fresh API server."""
    from ..testing.kube_apiserver import _free_loopback_ports, _child_env, cached_binary, local_kube_cluster

    say = progress or (lambda msg: None)
    binary = cached_binary("kube-scheduler")
    say(f"kube-scheduler (qps {qps:g}, burst {burst}): a fresh kube-apiserver and etcd on loopback")
    with local_kube_cluster() as cluster:
        workdir = Path(tempfile.mkdtemp(prefix="kube-scheduler-", dir=cluster.workdir))
        log_path = workdir / "kube-scheduler.log"
        port = _free_loopback_ports(1)[0]
        config = workdir / "config.json"  # JSON is YAML
        config.write_text(json.dumps(scheduler_config(cluster.kubeconfig, qps=qps, burst=burst, port=port)))

        def start():
            with open(log_path, "ab") as log:
                proc = subprocess.Popen([str(binary), f"--config={config}", "--secure-port=0"], cwd=workdir,
                                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=_child_env())
            deadline = time.monotonic() + 60
            while not _metrics(port) and time.monotonic() < deadline:  # its listener is up: it has started
                if proc.poll() is not None:
                    raise RuntimeError(f"kube-scheduler exited with {proc.returncode}:\n{_tail(log_path)}")
                time.sleep(0.1)
            return proc

        sched = Scheduler(start=start, stop=_stop, pids=lambda proc: {"kube-scheduler": [proc.pid] if proc is not None else []},
                          logs=lambda: _tail(log_path))
        try:
            d = drive_shape(cluster, nodes=nodes, pods=pods, backlog=backlog, scheduler=sched, say=say, timeout=timeout)
            means = histogram_means(_metrics(port))  # this process's own: in a backlog, the run's alone
        finally:
            _stop(sched.proc)
        return {**d.figures(prefix), **{f"{prefix}_{k}": v for k, v in means.items()},
                f"{prefix}_client_qps": qps, f"{prefix}_client_burst": burst}


# The table `bench --compare` prints: (label, the figure's key after its prefix).
_ROWS = [
    ("pods/s", "pods_per_s"),
    ("created -> bound p50 ms", "create_to_bound_p50_ms"),
    ("created -> bound p99 ms", "create_to_bound_p99_ms"),
    ("first binding after the start s", "first_bound_s"),
    ("pods/s from the first binding to the last", "after_first_pods_per_s"),
    ("pods created through the API per s", "create_pods_per_s"),
    ("pods/s / creation rate (live: 1 = kept up)", "vs_create_rate"),
    ("scheduler CPU s per 1,000 pods", "cpu_s_per_1000_pods"),
    ("API server CPU s per 1,000 pods", "apiserver_cpu_s_per_1000_pods"),
    ("overcommitted nodes", "overcommitted_nodes"),
]


def compare_table(result: dict) -> str:
    """schedboard beside kube-scheduler (raised and default client limits) and the ratio, as a Markdown table."""
    raised = f"kube-scheduler (qps {result['kubesched_client_qps']:g}/{result['kubesched_client_burst']})"
    default = (f"kube-scheduler (qps {result['kubesched_default_client_qps']:g}/"
               f"{result['kubesched_default_client_burst']})") if "kubesched_default_client_qps" in result else None
    head = ["figure", f"schedboard (qps {result['kube_client_qps']:g}/{result['kube_client_burst']})", raised,
            *([default] if default else []), "schedboard / kube-scheduler"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, key in _ROWS:
        ours, theirs = result.get(f"kube_{key}"), result.get(f"kubesched_{key}")
        ratio = round(ours / theirs, 2) if isinstance(ours, (int, float)) and theirs else "—"
        cells = [label, _cell(ours), _cell(theirs), *([_cell(result.get(f"kubesched_default_{key}"))] if default else []),
                 str(ratio)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(value) -> str:
    return "—" if value is None else f"{value:,}" if isinstance(value, (int, float)) else str(value)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
