"""Leader election against the real API server: two replicas as real processes, one leader, failover;
and a leader that loses its lease stops committing at once."""

import os
import re
import signal
import subprocess
import sys
import tempfile
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from scheduler import loop
from scheduler.kube.client import ApiError, call
from scheduler.kube.events import micro_time
from scheduler.testing.kube import (NS, empty_cluster, leading, leading_replica, new_replica, node, pod, read_pod,
                                    wait_for_cluster)
from scheduler.testing.metrics import free_port, sample, scrape

pytestmark = [pytest.mark.kube, pytest.mark.django_db(transaction=True)]

BASE_DIR = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def apis(kube_cluster):
    from kubernetes import client

    api_client = kube_cluster.api_client()
    yield client.CoreV1Api(api_client), client.CoordinationV1Api(api_client)
    api_client.close()


class Replica:
    """`manage.py kube run --inline` as a real OS process."""

    def __init__(self, env: dict, log_dir: Path, index: int):
        self.log = log_dir / f"replica-{index}.log"
        self.proc = subprocess.Popen([sys.executable, "manage.py", "kube", "run", "--inline"], cwd=BASE_DIR, env=env,
                                     stdout=open(self.log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    @property
    def identity(self) -> str | None:
        found = re.search(r"replica (\S+): waiting for lease", self.text())
        return found.group(1) if found else None

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


@pytest.fixture
def replicas(kube_cluster):
    db = connection.settings_dict
    lease = f"schedboard-{uuid.uuid4().hex[:6]}"
    env = dict(os.environ)
    env.update({
        "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONUNBUFFERED": "1",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "REDIS_URL": settings.REDIS_URL, "SCHEDBOARD_QUEUE_PREFIX": settings.SCHEDBOARD_QUEUE_PREFIX,
        "SCHEDBOARD_EAGER": "1",  # the replicas schedule inline: no Celery tasks to send
        "DJANGO_SECRET_KEY": "kube-leader-test", "SCHEDBOARD_BACKEND": "kubernetes",
        "KUBECONFIG": str(kube_cluster.kubeconfig), "SCHEDBOARD_KUBE_NAMESPACE": NS, "SCHEDBOARD_LEASE_NAME": lease,
        "SCHEDBOARD_LEASE_DURATION": "3s", "SCHEDBOARD_RENEW_DEADLINE": "2s", "SCHEDBOARD_RETRY_PERIOD": "500ms",
    })
    log_dir = Path(tempfile.mkdtemp(prefix="schedboard-replicas-"))
    started: list[Replica] = []

    def start(n: int, **extra_env: str) -> list[Replica]:
        started.extend(Replica({**env, **extra_env}, log_dir, i) for i in range(len(started), len(started) + n))
        return started

    start.lease = lease
    start.logs = lambda: "\n".join(f"--- {r.log.name}\n{r.text()[-3000:]}" for r in started)
    yield start
    for r in started:
        r.stop()


def _lease(coordination, name):
    return call(coordination.read_namespaced_lease, name, NS)["spec"]


def test_two_replicas_elect_one_leader_and_the_other_takes_over_when_it_dies(replicas, apis):
    core, coordination = apis
    empty_cluster(core)
    call(core.create_node, node("node-a"))
    a, b = replicas(2)
    wait_for_cluster(lambda: a.identity and b.identity, "both replicas up", 60)
    try:
        wait_for_cluster(lambda: _holder(coordination, replicas.lease) in (a.identity, b.identity), "a leader", 60)
        call(core.create_namespaced_pod, NS, pod("first"))
        wait_for_cluster(lambda: read_pod(core, "first")["spec"].get("nodeName") == "node-a", "the first pod bound", 60)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{replicas.logs()}") from None
    leader, follower = (a, b) if _holder(coordination, replicas.lease) == a.identity else (b, a)
    assert "started leading" in leader.text()
    assert "started leading" not in follower.text()  # one leader at a time
    transitions = _lease(coordination, replicas.lease).get("leaseTransitions", 0)

    leader.stop(signal.SIGKILL)  # no chance to give the lease up: the follower waits for it to expire

    try:
        wait_for_cluster(lambda: _holder(coordination, replicas.lease) == follower.identity, "the follower to take over", 60)
        call(core.create_namespaced_pod, NS, pod("second"))
        wait_for_cluster(lambda: read_pod(core, "second")["spec"].get("nodeName") == "node-a", "the second pod bound", 60)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{replicas.logs()}") from None
    assert "started leading" in follower.text()
    assert _lease(coordination, replicas.lease)["leaseTransitions"] == transitions + 1


def test_a_replica_stopped_gracefully_gives_the_lease_up(replicas, apis):
    _, coordination = apis
    (a,) = replicas(1)
    wait_for_cluster(lambda: a.identity and _holder(coordination, replicas.lease) == a.identity, "the lease held", 60)

    a.stop(signal.SIGTERM)

    assert a.proc.returncode == 0, replicas.logs()
    assert _holder(coordination, replicas.lease) == ""  # released, as ReleaseOnCancel


def _holder(coordination, name):
    try:
        return _lease(coordination, name).get("holderIdentity") or ""
    except Exception:  # noqa: BLE001 - not created yet
        return None


def test_a_leader_that_loses_its_lease_stops_binding_at_once(kube_cluster, apis):
    core, coordination = apis
    empty_cluster(core)
    call(core.create_node, node("node-a"))
    lease = f"lease-{uuid.uuid4().hex[:6]}"
    with leading_replica(kube_cluster.api_client(), lease_name=lease, retry_period=0.2) as controller:
        call(core.create_namespaced_pod, NS, pod("p"))
        wait_for_cluster(lambda: loop.get_worker().queue.get(f"{NS}/p") is not None, "the pod queued")
        assert loop.run_schedule_task().scheduled == 1  # placed; its binding waits for the committer

        # Another replica takes the lease (ours looked expired to it, say, across a partition). Ours renews every
        # 0.2 s: a renewal between the read and the replace makes the replace a 409, so read again, as a replica would.
        for _ in range(20):
            current = call(coordination.read_namespaced_lease, lease, NS)
            now = micro_time(datetime.now(timezone.utc))
            current["spec"].update(holderIdentity="someone-else", acquireTime=now, renewTime=now)
            try:
                call(coordination.replace_namespaced_lease, lease, NS, current)
                break
            except ApiError as exc:
                if exc.status != 409:
                    raise
        else:
            pytest.fail("the lease could not be taken over in 20 tries")
        wait_for_cluster(lambda: not controller.elector.is_leader(), "our replica to see it lost the lease", 30)

        assert controller.committer.run_once(0.5) is False  # nothing committed any more
        error, _ = controller.backend.bind_many([{"pod_manifest": read_pod(core, "p"), "node_name": "node-a"}])[0]
        assert "not the leader" in str(error)
        assert read_pod(core, "p")["spec"].get("nodeName") is None


def test_a_replica_serves_its_pod_s_scheduling_and_binding_metrics_on_the_metrics_port(replicas, apis):
    core, _ = apis
    empty_cluster(core)
    call(core.create_node, node("node-a"))
    port = free_port()
    # Its own directory, as the controller's pod has its own emptyDir: only this port shows what it counts.
    (replica,) = replicas(1, SCHEDBOARD_METRICS_PORT=str(port), SCHEDBOARD_METRICS_BIND_ADDRESS="127.0.0.1",
                          PROMETHEUS_MULTIPROC_DIR=tempfile.mkdtemp(prefix="schedboard-controller-pod-"))
    for i in range(3):
        call(core.create_namespaced_pod, NS, pod(f"counted-{i}"))
    try:
        wait_for_cluster(lambda: all(read_pod(core, f"counted-{i}")["spec"].get("nodeName") == "node-a" for i in range(3)),
                 "three pods bound", 60)
        wait_for_cluster(lambda: sample(scrape(port), "scheduler_schedule_attempts_total", result="scheduled",
                                profile="default-scheduler") == 3, "three scheduled attempts on the metrics port", 30)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{replicas.logs()}") from None
    served = scrape(port)
    assert sample(served, "scheduler_framework_extension_point_duration_seconds_count", extension_point="Bind",
                  status="Success", profile="default-scheduler") == 3


def test_the_leader_claims_its_pod_mirror_current_while_it_watches_and_withdraws_the_claim_when_it_stops(
        kube_cluster, apis):
    """The reconcilers free a dead binder's mark only behind this claim (kube/currency.py): a leader whose pod
    watch is open and applied says up to when; a stopped one says nothing, so nothing is freed between leaders."""
    import time

    from scheduler.kube import currency

    core, _ = apis
    controller = new_replica(kube_cluster.api_client(), retry_period=0.2)
    currency.withdraw(controller.redis)
    assert controller.backend.mirror_current_through() is None
    with leading(controller):
        call(core.create_namespaced_pod, NS, pod(f"c-{uuid.uuid4().hex[:6]}"))
        wait_for_cluster(lambda: controller.backend.mirror_current_through() is not None, "the currency claim", 20)
        started = time.time()
        wait_for_cluster(lambda: (controller.backend.mirror_current_through() or 0) > started, "a fresh claim", 20)
        assert controller.backend.mirror_current_through() <= time.time()
    assert controller.backend.mirror_current_through() is None
