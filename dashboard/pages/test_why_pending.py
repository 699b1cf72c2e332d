"""Why pending, answered, on the pages: the pod and attempt pages' section, /pending/ and its /metrics gauge."""

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from scheduler.models import RESULT_UNSCHEDULABLE, Attempt
from scheduler.testing.loop import apply, drain, node, pod

from ..pending import main_reason, reasons_over_time

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]

TAINTED = node("gpu-1", cpu="8", spec={"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]})


def section(html: str) -> str:
    found = re.search(r'<section id="why-pending".*?</section>', html, re.S)
    assert found, "no why-pending section"
    return found.group(0)


def test_the_pod_page_names_the_nearest_node_what_it_lacks_and_the_change(admin_client):
    apply(TAINTED, node("small", cpu="1"), pod("trainer", cpu="2"))
    drain()
    html = section(admin_client.get("/pods/default/trainer/").content.decode())

    assert "Now, over the 2 current nodes, under configuration version 0" in html
    rows = re.findall(r'<tr data-node="([^"]+)">', html)
    assert rows == ["gpu-1", "small"]
    assert "<strong>TaintToleration</strong>: taint gpu=true:NoSchedule not tolerated" in html
    assert "<strong>NodeResourcesFit</strong>: needs 1 more CPU" in html
    assert re.search(r'<li data-kind="toleration">add the toleration\(s\) \{key: &quot;gpu&quot;.*fits gpu-1', html, re.S)
    assert re.search(r'<li data-kind="request">request at most 1 cpu \(now 2\).*fits small', html, re.S)


def test_the_attempt_page_of_an_unschedulable_attempt_answers_and_a_bound_pods_does_not(admin_client):
    apply(TAINTED, pod("trainer", cpu="2"), node("n1", cpu="1"), pod("web", cpu="100m"))
    drain()
    failed = Attempt.objects.get(pod_name="trainer")
    bound = Attempt.objects.get(pod_name="web")

    html = admin_client.get(f"/attempts/{failed.pk}/").content.decode()
    assert "TaintToleration</strong>: taint gpu=true:NoSchedule not tolerated" in section(html)
    assert 'id="why-pending"' not in admin_client.get(f"/attempts/{bound.pk}/").content.decode()
    assert 'id="why-pending"' not in admin_client.get("/pods/default/web/").content.decode()


def test_pending_page_stacks_main_reasons_over_time_and_counts_them_now(admin_client, client):
    apply(TAINTED, node("small", cpu="1"), pod("a", cpu="2"), pod("b", cpu="2"),
          pod("c", cpu="100m", nodeSelector={"disk": "ssd"}))
    drain()
    html = admin_client.get("/pending/").content.decode()

    data = json.loads(re.search(r'<script id="reasons-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    # Each of a and b is rejected by one node for cpu and one for the taint: the tie goes by name.
    assert data["totals"] == {"Insufficient cpu": 2, "node(s) didn't match Pod's node affinity/selector": 1}
    assert sum(sum(v) for v in data["series"].values()) == 3
    now = re.search(r'<table class="data" id="pending-now">.*?</table>', html, re.S).group(0)
    assert re.findall(r"<td>(.*?)</td><td class=\"num\">(\d+)</td>", now) == [
        ("Insufficient cpu", "2"), ("node(s) didn&#x27;t match Pod&#x27;s node affinity/selector", "1")]

    gauge = {s.labels["reason"]: s.value
             for family in text_string_to_metric_families(client.get("/metrics").content.decode())
             for s in family.samples if s.name == "schedboard_pending_pods_by_reason"}
    assert gauge == {"Insufficient cpu": 2, "node(s) didn't match Pod's node affinity/selector": 1}


def test_reasons_over_time_keep_each_pods_latest_attempt_per_bucket(clock):
    start = timezone.now().replace(microsecond=0) - timedelta(minutes=10)

    def attempt(minute, name, reasons):
        Attempt.objects.create(namespace="default", pod_name=name, number=1, started_at=start + timedelta(minutes=minute),
                               result=RESULT_UNSCHEDULABLE, reasons=reasons)

    attempt(0, "a", {"Insufficient cpu": 3})
    attempt(1, "a", {"node(s) had untolerated taint(s)": 5, "Insufficient cpu": 1})  # same bucket, later: wins
    attempt(6, "a", {"Insufficient cpu": 2})
    attempt(7, "b", {"Insufficient cpu": 2})
    out = reasons_over_time(start=start, end=start + timedelta(minutes=10), buckets=2)

    assert out["series"] == {"Insufficient cpu": [0, 2], "node(s) had untolerated taint(s)": [1, 0]}
    assert out["bucket_seconds"] == 300


@pytest.mark.parametrize("reasons,message,expected", [
    ({"Insufficient cpu": 2, "node(s) had untolerated taint(s)": 2}, "", "Insufficient cpu"),
    ({}, "0/3 nodes are available: pod affinity terms conflict. preemption: not eligible.", "pod affinity terms conflict"),
    ({}, "", "(none recorded)"),
])
def test_main_reason_is_the_one_rejecting_most_nodes(reasons, message, expected):
    assert main_reason(reasons, message) == expected


def test_a_bad_window_is_refused(admin_client):
    response = admin_client.get("/pending/?window=2y")
    assert response.status_code == 400 and b"window: '2y' is not one of 15m, 1h, 6h, 24h" in response.content
