"""/nodes/?at=T and /queue/?at=T: the rewind on the pages, equal to the audit's bindings up to T, with the
attempts and bindings around T; the live pages carry the time control; a bad instant is refused by name."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler.cluster.services import node_delete, pod_delete
from scheduler.models import Attempt
from scheduler.testing.audit import audit_bound
from scheduler.testing.loop import apply, drain, node, pod

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def iso(at):
    return at.isoformat().replace("+00:00", "Z")


def history(clock):
    apply(node("node-10", cpu="4"), node("node-2", cpu="4"), pod("a", cpu="1"), pod("b", cpu="1500m"))
    drain(clock)
    t1 = timezone.now()
    apply(pod("c", cpu="2"), pod("huge", cpu="64"))
    drain(clock)
    t2 = timezone.now()
    pod_delete(namespace="default", name="a")
    apply(node("node-3", cpu="8"), pod("d", cpu="1"))
    drain(clock)
    node_delete(name="node-3")
    return t1, t2


def test_the_nodes_page_at_a_past_instant_matches_the_audit_and_lists_what_happened_around_it(admin_client, clock):
    t1, t2 = history(clock)
    for at in (t1, t2):
        html = admin_client.get("/nodes/", {"at": iso(at)}).content.decode()
        rows = re.findall(r'<tr data-node="([^"]+)" data-req-cpu="(\d+)" data-req-memory="(\d+)" data-bound-cpu="(\d+)" '
                          r'data-bound-memory="(\d+)"', html)
        assert [r[0] for r in rows] == ["node-2", "node-10"]  # natural order; node-3 came later
        bound = {name: (int(cpu), int(mem)) for name, _, _, cpu, mem in rows if int(cpu)}
        assert bound == audit_bound(at)
        assert f'value="{at.strftime("%Y-%m-%dT%H:%M:%S")}"' in html and 'id="back-to-live"' in html
    html = admin_client.get("/nodes/", {"at": iso(t1)}).content.decode()
    around = re.search(r'<table class="data" id="attempts-around">.*?</table>', html, re.S).group(0)
    before, after = around.split('class="instant"')
    assert "default/a #1" in before and "default/b #1" in before and "default/huge" in after
    for attempt in Attempt.objects.filter(pod_name="huge"):
        assert f'href="/attempts/{attempt.pk}/"' in after
    bindings = re.search(r'<table class="data" id="bindings-around">.*?</table>', html, re.S).group(0).split('class="instant"')
    assert "default/c" in bindings[1] and "default/c" not in bindings[0]


def test_the_queue_page_at_a_past_instant_shows_each_sub_queue(admin_client, clock):
    t1, t2 = history(clock)
    html = admin_client.get("/queue/", {"at": iso(t2)}).content.decode()
    assert re.search(r'<span id="n-unschedulable">1</span>', html) and 'data-pod="default/huge"' in html
    assert re.search(r'<span id="n-active">0</span>', html) and re.search(r'<span id="n-backoff">0</span>', html)
    huge = Attempt.objects.filter(pod_name="huge", started_at__lte=t2).latest("started_at")
    assert f'<a href="/attempts/{huge.pk}/">{huge.number}</a>' in html and "Insufficient cpu" in html
    before = admin_client.get("/queue/", {"at": iso(t1 - timedelta(days=30))}).content.decode()
    assert 'id="before-retention"' in before and re.search(r'<span id="n-unschedulable">0</span>', before)


def test_the_queue_page_at_a_past_instant_lists_the_pods_gated_then(admin_client, clock):
    apply(node("n1"), pod("held", schedulingGates=[{"name": "example.com/quota"}]))
    drain(clock)
    t1 = timezone.now()
    apply(pod("held"))  # its gate removed: queued and bound
    drain(clock)
    html = admin_client.get("/queue/", {"at": iso(t1)}).content.decode()
    assert re.search(r'<span id="n-gated">1</span>', html) and '<tr data-pod="default/held">' in html
    assert "scheduling gates (the last removed at " in html
    now = admin_client.get("/queue/", {"at": iso(timezone.now())}).content.decode()
    assert re.search(r'<span id="n-gated">0</span>', now) and 'id="empty-gated"' in now


def test_the_live_pages_carry_the_time_control(admin_client):
    for path in ("/nodes/", "/queue/"):
        html = admin_client.get(path).content.decode()
        assert re.search(rf'<form method="get" action="{path}" class="filters rewind-control"', html)
        assert '<input id="rewind-at" name="at" type="datetime-local" step="1"' in html


@pytest.mark.parametrize("at, says", [
    ("yesterday", "at: 'yesterday' is not a date and time"),
    ("2999-01-01T00:00:00Z", "is in the future"),
])
def test_a_bad_instant_is_refused_naming_the_field(admin_client, at, says):
    for path in ("/nodes/", "/queue/"):
        response = admin_client.get(path, {"at": at})
        assert response.status_code == 400 and says in response.content.decode()
