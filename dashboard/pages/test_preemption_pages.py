"""The preemption on the pages: the attempt that preempted shows its nominated node, its victims linked and
the candidates weighed; the victim's page says who preempted it, linked; /metrics counts the attempts and
the victims under upstream's names and buckets."""

import html as htmllib
import re

import pytest

from scheduler.models import Attempt, Pod
from scheduler.testing.loop import apply, drain, node, pod

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]

HIGH = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}


def text(fragment: str) -> str:
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def preempted(clock):
    apply(HIGH, node("node-a", cpu="1"), node("node-b", cpu="1", spec={"taints": [{"key": "k", "effect": "NoSchedule"}]}),
          pod("low", nodeName="node-a"))
    apply(pod("vip", priorityClassName="high"))
    drain(clock)
    return Attempt.objects.filter(pod_name="vip").order_by("number").first()


def test_the_attempt_page_shows_the_nominated_node_the_victims_linked_and_the_candidates(admin_client, clock):
    attempt = preempted(clock)
    html = admin_client.get(f"/attempts/{attempt.pk}/").content.decode()
    section = re.search(r'<dl class="facts" id="preemption".*?</dl>', html, re.S).group(0)
    assert "Nominated node:node-a" in text(section)
    assert '<a href="/pods/default/low/">default/low</a>' in section
    candidates = re.search(r'<table class="data" id="preemption-candidates">.*?</table>', html, re.S).group(0)
    assert "node-a (chosen)" in text(candidates) and "default/low" in text(candidates)
    rejected = re.search(r'<table class="data" id="preemption-rejected">.*?</table>', html, re.S)
    assert rejected is None or "node-b" not in text(rejected.group(0))  # unresolvable nodes are not dry-run


def test_the_victims_page_says_who_preempted_it(admin_client, clock):
    attempt = preempted(clock)
    assert Pod.objects.get(name="vip").node_name == "node-a"
    html = admin_client.get("/pods/default/low/").content.decode()
    notice = re.search(r'<p class="notice" id="preempted-by">.*?</p>', html, re.S).group(0)
    assert text(notice) == "Preempted on node node-a by default/vip (the attempt that chose it)."
    assert '<a href="/pods/default/vip/">' in notice and f'<a href="/attempts/{attempt.pk}/">' in notice
    assert "Preempted" in html and "Preempted by pod" in html  # the event, as kubectl describe lists it


def test_metrics_count_preemption_attempts_and_victims(client, clock):
    preempted(clock)
    body = client.get("/metrics").content.decode()
    assert re.search(r"^scheduler_preemption_attempts_total [1-9]", body, re.M), body[:2000]
    assert re.search(r'^scheduler_preemption_victims_bucket\{le="1.0"\} [1-9]', body, re.M)
    assert re.search(r'^scheduler_preemption_victims_bucket\{le="64.0"\}', body, re.M)
