"""A kubeconfig with `insecure-skip-tls-verify`: one warning at start, not urllib3's warning per request.

Run in a fresh interpreter, as `kube run` runs: Python's and urllib3's own warning filters apply
there, not pytest's.
"""

import subprocess
import sys

import pytest

from scheduler.kube_testing import local_kube_cluster
from scheduler.workers import BASE_DIR

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


def test_an_unverified_api_server_is_warned_about_once_at_start_not_on_every_request():
    with local_kube_cluster() as cluster:
        run = subprocess.run([sys.executable, "-c", _SCRIPT, str(cluster.kubeconfig), str(CALLS)], cwd=BASE_DIR,
                             capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    log = run.stderr
    assert log.rstrip().endswith("done")
    assert "InsecureRequestWarning" not in log and "Unverified HTTPS request" not in log
    assert log.count("TLS verification of the API server") == 1
    assert f"TLS verification of the API server {cluster.url} is off" in log
