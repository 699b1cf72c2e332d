"""/pods/<ns>/<name>/: the spec summary, the Events as kubectl describe prints them, every attempt linked."""

import re

import pytest

from scheduler.models import Attempt
from scheduler.cluster.services import pod_delete
from scheduler.testing.loop import apply, drain, node, pod

# The shared Redis queue on a hand-moved clock (the `clock` fixture) for every test here.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def test_it_shows_the_pods_summary_its_repeated_failure_and_links_every_attempt(admin_client, clock):
    apply(node("small", cpu="1"), pod("big", cpu="2", nodeSelector={"disk": "ssd"}, meta={"labels": {"app": "web"}}))
    apply(node("ssd", cpu="1", labels={"disk": "ssd"}))
    drain()
    for _ in range(2):  # retried after 5 minutes in unschedulableQ, with the same outcome: one event, counted
        clock.advance(301)
        drain()
    html = admin_client.get("/pods/default/big/").content.decode()

    assert "<h1>Pod default/big</h1>" in html
    assert "<dt>Node-Selectors:</dt>\n  <dd>disk=ssd</dd>" in html
    assert "app=web" in html
    message = ("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn&#x27;t match Pod&#x27;s node affinity/selector. "
               "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
    events = re.search(r'<table class="data" id="events-table">.*?</table>', html, re.S).group(0)
    assert re.search(r"<th>Type</th><th>Reason</th><th>Age</th><th>From</th><th>Message</th>", events)
    assert re.search(r"FailedScheduling</td>\s*<td><time[^>]*>\d+s \(x3 over \d+s\)</time></td>\s*<td>default-scheduler</td>"
                     r'\s*<td class="msg">' + re.escape(message), events), events
    ids = list(Attempt.objects.filter(pod_name="big").values_list("pk", flat=True))
    assert len(ids) == 3
    for pk in ids:
        assert f'href="/attempts/{pk}/"' in html


def test_a_bound_pod_shows_its_node_and_the_scheduled_event(admin_client):
    apply(node("n1"), pod("web"))
    drain()
    html = admin_client.get("/pods/default/web/").content.decode()
    assert "<dt>Node:</dt>\n  <dd>n1</dd>" in html
    assert "Successfully assigned default/web to n1" in html


def test_a_deleted_pod_still_shows_its_attempts(admin_client):
    apply(node("n1"), pod("web"))
    drain()
    pod_delete(namespace="default", name="web")
    response = admin_client.get("/pods/default/web/")
    assert response.status_code == 200
    assert b"This pod has been deleted" in response.content
    assert f'href="/attempts/{Attempt.objects.get().pk}/"'.encode() in response.content


def test_an_unknown_pod_is_a_404(admin_client):
    assert admin_client.get("/pods/default/nope/").status_code == 404


def test_a_pod_with_many_attempts_lists_the_latest_and_links_the_audit_for_the_rest(admin_client, monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    from dashboard.pages import pod as pod_page

    monkeypatch.setattr(pod_page, "MAX_ATTEMPTS", 3)
    now = timezone.now()
    made = [Attempt.objects.create(namespace="default", pod_name="stuck", number=i, result="unschedulable",
                                   started_at=now + timedelta(seconds=i)) for i in range(1, 6)]
    html = admin_client.get("/pods/default/stuck/").content.decode()
    assert re.findall(r'href="/attempts/(\d+)/"', html) == [str(a.pk) for a in made[:1:-1]]
    assert 'href="/bindings/?namespace=default&amp;pod=stuck">every attempt in the audit</a>' in html
