"""/attempts/<id>/: the message, the reason histogram, per-node verdicts and the score matrix, from the explain code."""

import html as htmllib
import re

import pytest
from django.test import override_settings

from scheduler.models import Attempt
from scheduler.testing.loop import apply, drain, node, pod

# The shared Redis queue on a hand-moved clock (the `clock` fixture) for every test here.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clock")]


def table(html: str, table_id: str) -> list[list[str]]:
    body = re.search(rf'<table class="data" id="{table_id}">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    return [[htmllib.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]


def cluster():
    apply(node("small-a", cpu="1"), node("small-b", cpu="1"),
          node("tainted", cpu="8", spec={"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}),
          node("roomy", cpu="4"), node("roomier", cpu="8"))


def test_an_unschedulable_attempt_shows_the_exact_message_the_histogram_and_who_rejected_each_node(admin_client):
    cluster()
    apply(pod("huge", cpu="16"))
    drain()
    attempt = Attempt.objects.get(pod_name="huge")
    html = admin_client.get(f"/attempts/{attempt.pk}/").content.decode()

    message = ("0/5 nodes are available: 1 node(s) had untolerated taint(s), 4 Insufficient cpu. "
               "preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.")
    assert attempt.message == message
    assert f'<pre id="message">{message}</pre>' in html
    assert table(html, "reasons") == [["Insufficient cpu", "4", ""], ["node(s) had untolerated taint(s)", "1", ""]]
    assert table(html, "verdicts") == [
        ["roomier", "NodeResourcesFit", "Insufficient cpu"],
        ["roomy", "NodeResourcesFit", "Insufficient cpu"],
        ["small-a", "NodeResourcesFit", "Insufficient cpu"],
        ["small-b", "NodeResourcesFit", "Insufficient cpu"],
        ["tainted", "TaintToleration", "node(s) had untolerated taint(s)"],
    ]
    assert "default-scheduler, configuration version 0" in html
    assert "No node passed the filters" in html
    assert f'href="/attempts/{attempt.pk}/rescore/"' in html


def test_the_verdicts_are_searchable_by_node_plugin_or_reason(admin_client):
    cluster()
    apply(pod("huge", cpu="16"))
    drain()
    pk = Attempt.objects.get(pod_name="huge").pk
    assert table(admin_client.get(f"/attempts/{pk}/?q=TAINT").content.decode(), "verdicts") == [
        ["tainted", "TaintToleration", "node(s) had untolerated taint(s)"]]
    assert [r[0] for r in table(admin_client.get(f"/attempts/{pk}/?q=small").content.decode(), "verdicts")] == [
        "small-a", "small-b"]
    nothing = admin_client.get(f"/attempts/{pk}/?q=%3Cscript%3E")
    assert nothing.status_code == 200 and table(nothing.content.decode(), "verdicts") == []
    assert b"&lt;script&gt;" in nothing.content


def test_a_scheduled_attempt_shows_the_score_matrix_with_the_winner_first_and_marked(admin_client):
    cluster()
    apply(pod("fits", cpu="2"))
    drain()
    attempt = Attempt.objects.get(pod_name="fits")
    html = admin_client.get(f"/attempts/{attempt.pk}/").content.decode()

    rows = table(html, "scores")
    assert [r[0] for r in rows] and rows[0][0] == attempt.node_name
    assert re.search(rf'<tr class="winner"><td class="node">{attempt.node_name}</td>', html)
    by_node = {row["node"]: row for row in attempt.candidates}
    assert {r[0] for r in rows} == set(by_node) == {"roomy", "roomier"}
    header = re.search(r'<table class="data" id="scores">.*?</thead>', html, re.S).group(0)
    plugins = re.findall(r'<th colspan="3" scope="colgroup">(\w+) <span class="muted">\(weight (\d+)\)</span></th>', header)
    for r in rows:
        cells = by_node[r[0]]["plugins"]
        assert sorted(name for name, _ in plugins) == sorted(cells)
        expected = [str(cells[name][k]) for name, _ in plugins for k in ("raw", "normalized", "weighted")]
        assert r[1:-1] == expected
        assert r[-1] == str(by_node[r[0]]["total"])
        assert all(int(w) == cells[name]["weight"] for name, w in plugins)
    assert "Per-node verdicts are kept for attempts that found no node" in html
    # Columns in the profile's order (kube-scheduler's default), whatever order the JSON column kept.
    assert [name for name, _ in plugins] == ["TaintToleration", "NodeResourcesFit", "NodeResourcesBalancedAllocation",
                                             "ImageLocality"]


@override_settings(SCHEDBOARD_TRACE="all")
def test_traced_all_a_scheduled_attempt_shows_every_candidate_and_the_rejected_nodes(admin_client):
    apply(*[node(f"n{i:02d}", cpu="4") for i in range(14)], node("small", cpu="1"), pod("fits", cpu="2"))
    drain()
    attempt = Attempt.objects.get(pod_name="fits")
    html = admin_client.get(f"/attempts/{attempt.pk}/").content.decode()
    assert len(attempt.candidates) == 10  # the audit's top ten...
    assert len(table(html, "scores")) == 14  # ...but the page shows every candidate that was scored
    assert "Every feasible candidate" in html
    assert table(html, "verdicts") == [["small", "NodeResourcesFit", "Insufficient cpu"]]


def test_a_missing_attempt_is_a_404(admin_client):
    assert admin_client.get("/attempts/999999/").status_code == 404
    assert admin_client.get("/attempts/abc/").status_code == 404


def test_a_capped_trace_shows_the_verdicts_it_names_and_says_how_many_nodes_were_left_out(admin_client, monkeypatch):
    import functools

    from scheduler.engine.explain import trace
    from scheduler.loop import schedule

    # The loop's trace with a cap of 3 names, as 1,000 caps it on a large cluster.
    monkeypatch.setattr(schedule, "trace", functools.partial(trace, max_nodes=3))
    cluster()
    apply(pod("huge", cpu="16"))
    drain()
    attempt = Attempt.objects.get(pod_name="huge")
    html = admin_client.get(f"/attempts/{attempt.pk}/").content.decode()

    # The lone tainted node keeps its name; two of the four short on cpu are named, two counted.
    rows = table(html, "verdicts")
    assert ["tainted", "TaintToleration", "node(s) had untolerated taint(s)"] in rows and len(rows) == 3
    assert table(html, "verdicts-omitted") == [["NodeResourcesFit", "Insufficient cpu", "2", "2"]]
    text = re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", "", html)))
    assert "3 of 5 rejected nodes." in text
    assert "This trace names 3 of the 5 rejected nodes: an attempt keeps at most 1000 node names, so 2 nodes were left out" in text
    # The histogram still counts every node.
    assert table(html, "reasons") == [["Insufficient cpu", "4", ""], ["node(s) had untolerated taint(s)", "1", ""]]

