"""/bindings/ under retention: how long each kind of row is kept and the oldest still present, and bindings
that outlived their attempt still listed, paged and exported."""

import csv
import html as htmllib
import io
import json
import re
from datetime import datetime, timedelta, timezone

import pytest

from scheduler import retention
from scheduler.models import Attempt, Binding, ClusterEvent, Event

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 30, 10, 0, 0, tzinfo=timezone.utc)


def attempt(i, *, at, node="n1", result="scheduled", bound=True, version=0):
    a = Attempt.objects.create(namespace="default", pod_name=f"web-{i}", number=1, result=result, node_name=node,
                               started_at=at, profile_version=version)
    if bound:
        Binding.objects.create(namespace="default", pod_name=a.pod_name, pod_uid=f"uid-{i}", node_name=node, attempt=a,
                               bound_at=at + timedelta(milliseconds=5))
    return a


def table(html: str, table_id: str) -> list[list[str]]:
    body = re.search(rf'<table class="data" id="{table_id}">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    return [[re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", "", c))).strip()
             for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]


def rows_shown(response) -> list[str]:
    """Each row as "a<attempt id>" or "b<binding id>" (a binding whose attempt was deleted), in order."""
    html = response.content.decode()
    body = re.search(r'<table class="data" id="audit">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    return [f"b{b}" if b else f"a{a}" for b, a in
            re.findall(r'<tr(?: class="binding-only" id="binding-(\d+)")?>\s*<td[^>]*>(?:<a href="/attempts/(\d+)/">)?',
                       body)]


def link(response, rel) -> str | None:
    m = re.search(rf'<a href="(\?[^"]*)" rel="{rel}">', response.content.decode())
    return m.group(1).replace("&amp;", "&") if m else None


@pytest.fixture
def shipped(settings):
    settings.SCHEDBOARD_RETAIN_ATTEMPTS = 7 * 86400.0
    settings.SCHEDBOARD_RETAIN_EVENTS = 3600.0
    settings.SCHEDBOARD_RETAIN_CLUSTER_EVENTS = 600.0
    settings.SCHEDBOARD_RETAIN_BINDINGS = None
    return settings


def test_the_audit_says_how_long_each_kind_of_row_is_kept_and_the_oldest_still_present(admin_client, shipped):
    attempt(1, at=T0)
    attempt(2, at=T0 + timedelta(hours=1))
    ClusterEvent.objects.filter(pk=ClusterEvent.objects.create(kind="NodeAdd").pk).update(created_at=T0)
    html = admin_client.get("/bindings/").content.decode()
    assert table(html, "retention") == [
        ["Attempts", "7 days", "2026-11-30 10:00:00", "SCHEDBOARD_RETAIN_ATTEMPTS"],
        ["Events", "1 hour", "none", "SCHEDBOARD_RETAIN_EVENTS"],
        ["Cluster events", "10 minutes", "2026-11-30 10:00:00", "SCHEDBOARD_RETAIN_CLUSTER_EVENTS"],
        ["Bindings", "forever", "2026-11-30 10:00:00", "SCHEDBOARD_RETAIN_BINDINGS"],
        ["Deleted pods", "7 days", "none", "SCHEDBOARD_RETAIN_ATTEMPTS"],
        ["Deleted nodes", "7 days", "none", "SCHEDBOARD_RETAIN_ATTEMPTS"],
        ["Node revisions", "7 days", "none", "SCHEDBOARD_RETAIN_ATTEMPTS"],
    ]


def test_the_retention_follows_the_settings(admin_client, shipped):
    shipped.SCHEDBOARD_RETAIN_ATTEMPTS = None
    shipped.SCHEDBOARD_RETAIN_EVENTS = 5400.0
    shipped.SCHEDBOARD_RETAIN_BINDINGS = 400 * 86400.0
    Event.objects.create(dedup_key="k", type="Normal", reason="Scheduled", message="m", involved_kind="Pod",
                         involved_name="web", first_timestamp=T0, last_timestamp=T0 + timedelta(seconds=7))
    kept = {row[0]: (row[1], row[2]) for row in table(admin_client.get("/bindings/").content.decode(), "retention")}
    assert kept == {"Attempts": ("forever", "none"), "Events": ("1 hour 30 minutes", "2026-11-30 10:00:07"),
                    "Cluster events": ("10 minutes", "none"), "Bindings": ("400 days", "none"),
                    "Deleted pods": ("forever", "none"), "Deleted nodes": ("forever", "none"),
                    "Node revisions": ("forever", "none")}


def test_a_binding_whose_attempt_retention_deleted_is_still_listed_by_its_bound_time(admin_client, shipped):
    now = datetime.now(timezone.utc)
    old = attempt(1, at=now - timedelta(days=8), node="n2")
    young = attempt(2, at=now - timedelta(days=1))
    failed = attempt(3, at=now - timedelta(hours=1), result="unschedulable", node="", bound=False)
    retention.purge(now=now)
    kept = Binding.objects.get(pod_name="web-1")
    assert not Attempt.objects.filter(pk=old.pk).exists() and kept.attempt_id is None

    response = admin_client.get("/bindings/")
    assert rows_shown(response) == [f"a{failed.pk}", f"a{young.pk}", f"b{kept.pk}"]
    row = table(response.content.decode(), "audit")[-1]
    assert row == ["—", "default/web-1", "—", "scheduled", "n2", kept.bound_at.strftime("%Y-%m-%d %H:%M:%S"), "—", "—",
                   "Attempt record deleted by retention; the binding is kept."]
    # Filters apply to it as far as it can answer them.
    assert rows_shown(admin_client.get("/bindings/?node=n2")) == [f"b{kept.pk}"]
    assert rows_shown(admin_client.get("/bindings/?q=eb-1")) == [f"b{kept.pk}"]
    assert rows_shown(admin_client.get("/bindings/?result=scheduled")) == [f"a{young.pk}", f"b{kept.pk}"]
    assert f"b{kept.pk}" not in rows_shown(admin_client.get("/bindings/?result=unschedulable"))
    assert f"b{kept.pk}" not in rows_shown(admin_client.get("/bindings/?version=0"))  # it no longer knows its version
    until = (now - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%S")
    assert rows_shown(admin_client.get(f"/bindings/?until={until}")) == [f"b{kept.pk}"]


def test_the_exports_include_the_bindings_whose_attempt_was_deleted(admin_client, shipped):
    now = datetime.now(timezone.utc)
    attempt(1, at=now - timedelta(days=9))
    attempt(2, at=now - timedelta(days=8))
    young = attempt(3, at=now - timedelta(days=1))
    retention.purge(now=now)

    rows = list(csv.DictReader(io.StringIO(b"".join(admin_client.get("/bindings/?format=csv").streaming_content).decode())))
    assert [(r["pod"], r["id"], r["result"], r["url"]) for r in rows] == [
        ("web-3", str(young.pk), "scheduled", f"http://testserver/attempts/{young.pk}/"),
        ("web-2", "", "scheduled", ""), ("web-1", "", "scheduled", "")]
    assert rows[1]["message"] == "attempt record deleted by retention; the binding is kept"
    assert rows[1]["bound_at"] == Binding.objects.get(pod_name="web-2").bound_at.isoformat()
    data = json.loads(b"".join(admin_client.get("/bindings/?format=json").streaming_content))
    assert [(d["pod"], d["id"], d["node"]) for d in data] == [("web-3", young.pk, "n1"), ("web-2", None, "n1"),
                                                              ("web-1", None, "n1")]


def test_keyset_pages_walk_attempts_and_attemptless_bindings_once_in_time_order_both_ways(admin_client, monkeypatch):
    from dashboard import audit

    monkeypatch.setattr(audit, "EXPORT_CHUNK", 2)
    same = T0 + timedelta(minutes=1)
    # Interleaved in time, with attempts and bindings at exactly the same instants.
    for i in range(6):
        attempt(i, at=T0 + timedelta(seconds=10 * i), bound=False)
    orphans = [Binding.objects.create(namespace="default", pod_name=f"old-{i}", pod_uid=f"o{i}", node_name="n1",
                                      bound_at=T0 + timedelta(seconds=10 * i + 5)) for i in range(4)]
    ties = [attempt(10 + i, at=same, bound=False) for i in range(2)]
    orphans += [Binding.objects.create(namespace="default", pod_name=f"tie-{i}", pod_uid=f"t{i}", node_name="n1",
                                       bound_at=same) for i in range(2)]
    keys = [((a.started_at, 1, a.pk), f"a{a.pk}") for a in Attempt.objects.all()]
    keys += [((b.bound_at, 0, b.pk), f"b{b.pk}") for b in orphans]
    expected = [name for _, name in sorted(keys, reverse=True)]

    response = admin_client.get("/bindings/?limit=3")
    pages = [rows_shown(response)]
    while (older := link(response, "next")):
        response = admin_client.get("/bindings/" + older)
        pages.append(rows_shown(response))
    assert [r for p in pages for r in p] == expected and [len(p) for p in pages] == [3, 3, 3, 3, 2]
    # Back, page by page, from the last to the first.
    for want in reversed(pages[:-1]):
        response = admin_client.get("/bindings/" + link(response, "prev"))
        assert rows_shown(response) == want
    # The export, in keyset chunks of two per stream, is the same order.
    data = json.loads(b"".join(admin_client.get("/bindings/?format=json").streaming_content))
    assert [d["pod"] for d in data] == [
        Attempt.objects.get(pk=int(n[1:])).pod_name if n[0] == "a" else Binding.objects.get(pk=int(n[1:])).pod_name
        for n in expected]


def test_a_cursor_made_before_bindings_were_listed_still_works_and_a_forged_kind_is_refused(admin_client):
    from dashboard.audit import BINDING, Cursor

    assert Cursor.decode(Cursor.encode(T0, 7)) == (T0, 7)
    assert Cursor.decode(Cursor.encode(T0, 7, BINDING)) == (T0, 7, BINDING)
    import base64

    forged = base64.urlsafe_b64encode(f"{T0.isoformat()}|7|x".encode()).decode().rstrip("=")
    response = admin_client.get(f"/bindings/?after={forged}")
    assert response.status_code == 400 and "This page link is damaged" in response.content.decode()
