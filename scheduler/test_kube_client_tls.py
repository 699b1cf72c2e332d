"""A kubeconfig with `insecure-skip-tls-verify`: one warning at start, not urllib3's warning per request.

Run in a fresh interpreter, as `kube run` runs: Python's and urllib3's own warning filters apply
there, not pytest's.
"""

import json
import subprocess
import sys

import pytest

from scheduler.testing.kube_apiserver import local_kube_cluster
from scheduler.testing.workers import BASE_DIR

pytestmark = pytest.mark.kube

CALLS = 50

_SCRIPT = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s %(message)s")
from kubernetes import client
from scheduler.kube.client import api_client, call
api = api_client(sys.argv[1])
core = client.CoreV1Api(api)
for _ in range(int(sys.argv[2])):
    call(core.list_namespace)
api_client(sys.argv[1])  # a second client in the same process: still only the one warning
print("done", file=sys.stderr)
"""


def _run(kubeconfig):
    return subprocess.run([sys.executable, "-c", _SCRIPT, str(kubeconfig), str(CALLS)], cwd=BASE_DIR,
                          capture_output=True, text=True, timeout=120)


def test_an_unverified_api_server_is_warned_about_once_at_start_not_on_every_request(tmp_path):
    with local_kube_cluster() as cluster:
        insecure = json.loads(cluster.kubeconfig.read_text())
        for entry in insecure["clusters"]:
            entry["cluster"].pop("certificate-authority")
            entry["cluster"]["insecure-skip-tls-verify"] = True
        (tmp_path / "kubeconfig").write_text(json.dumps(insecure))
        run = _run(tmp_path / "kubeconfig")
    assert run.returncode == 0, run.stderr
    log = run.stderr
    assert log.rstrip().endswith("done")
    assert "InsecureRequestWarning" not in log and "Unverified HTTPS request" not in log
    assert log.count("TLS verification of the API server") == 1
    assert f"TLS verification of the API server {cluster.url} is off" in log


def test_a_verified_api_server_is_used_without_any_tls_warning():
    with local_kube_cluster() as cluster:
        run = _run(cluster.kubeconfig)
    assert run.returncode == 0, run.stderr
    assert "TLS verification" not in run.stderr and "InsecureRequestWarning" not in run.stderr
