"""Gated pods (SchedulingGates) where kube-scheduler's users look: scheduler_pending_pods{queue="gated"} on
/metrics and the Gated list and count of /queue/'s frames."""

import pytest
from django.test import override_settings
from prometheus_client.parser import text_string_to_metric_families

from dashboard.live import state
from scheduler.testing.loop import apply, drain, node, pod

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def gated_gauge(client, tmp_path) -> float:
    with override_settings(PROMETHEUS_MULTIPROC_DIR=str(tmp_path)):  # no counters: only the state gauges
        response = client.get("/metrics")
    assert response.status_code == 200
    for family in text_string_to_metric_families(response.content.decode()):
        for s in family.samples:
            if s.name == "scheduler_pending_pods" and s.labels == {"queue": "gated"}:
                return s.value
    raise AssertionError("no scheduler_pending_pods{queue=\"gated\"}")


def test_gated_pods_are_counted_on_metrics_and_listed_on_the_queue_page(client, tmp_path):
    apply(node("node-a"), pod("held", schedulingGates=[{"name": "example.com/quota"}, {"name": "b"}]),
          pod("free"))
    drain()
    assert gated_gauge(client, tmp_path) == 1
    frame = state.queue_state()
    assert frame["lengths"]["gated"] == 1
    (row,) = frame["lists"]["gated"]
    assert row[0] == "default/held" and row[2] == 0 and row[5] is None
    assert row[6] == "waiting for scheduling gates: [example.com/quota b]"
    apply(pod("held"))
    drain()
    assert gated_gauge(client, tmp_path) == 0
    assert state.queue_state()["lengths"]["gated"] == 0 and state.queue_state()["lists"]["gated"] == []


def test_the_pod_page_describes_a_gated_pod_as_kubectl_describe():
    from dashboard.describe import pod_summary
    from scheduler.models import Pod

    apply(pod("held", schedulingGates=[{"name": "a"}, {"name": "example.com/b"}]))
    drain()
    summary = dict(pod_summary(Pod.objects.get(name="held")))
    assert summary["Status"] == "Pending" and summary["PodScheduled"] == "False (SchedulingGated)"
    assert summary["Scheduling Gates"] == "a, example.com/b"
    apply(pod("held"))
    assert "Scheduling Gates" not in dict(pod_summary(Pod.objects.get(name="held")))
