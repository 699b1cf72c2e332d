"""/replays/: a replay started from the page runs as a task, and its page shows A vs B."""

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from scheduler.models import ReplayRun
from scheduler.testing.replay import FIT, spread_trace_text

pytestmark = pytest.mark.django_db(transaction=True)


def start(client, trace_text, **extra):
    data = {"trace": SimpleUploadedFile("demo.jsonl", trace_text.encode()), "config_a": "v0", "config_b": "v0",
            "file_a": SimpleUploadedFile("most.yaml", FIT.format(strategy="MostAllocated").encode()),
            "file_b": SimpleUploadedFile("least.yaml", FIT.format(strategy="LeastAllocated").encode()), **extra}
    return client.post("/replays/", data)


def test_a_replay_started_from_the_page_shows_most_against_least_allocated(admin_client):
    response = start(admin_client, spread_trace_text())
    run = ReplayRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/replays/{run.pk}/"
    assert run.status == "done" and run.progress == 1.0  # the task ran (inline in tests) after the commit

    html = admin_client.get(f"/replays/{run.pk}/").content.decode()
    std = dict(re.findall(r'<tr data-config="([^"]+)">.*?<td class="num cpu-std">([0-9.]+)</td>', html, re.S))
    assert float(std["most.yaml"]) > float(std["least.yaml"])  # packing against spreading
    assert html.count('<td class="num preemptions">0</td>') == 2 and re.search(r'<td class="spread-skew"[^>]*>hostname \d+, zone \d+</td>', html)
    assert 'id="replay-differ"' in html and 'data-pod="default/p01"' in html
    plots = json.loads(re.search(r'<script id="replay-plots" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert [p["config"] for p in plots] == ["most.yaml", "least.yaml"] and len(plots[0]["nodes"]["cpu"]) == 6

    listing = admin_client.get("/replays/").content.decode()
    assert f'<a href="/replays/{run.pk}/">{run.pk}</a>' in listing and "most.yaml vs least.yaml" in listing
    assert admin_client.get(f"/replays/{run.pk}/progress").json() == {"status": "done", "progress": 1.0, "error": ""}


def test_each_differing_placement_links_to_both_configurations_attempts(admin_client):
    start(admin_client, spread_trace_text())
    run = ReplayRun.objects.get()
    most, least = run.report["configs"]
    key = run.report["differ"][0]
    ns, name = key.split("/")
    html = admin_client.get(f"/replays/{run.pk}/").content.decode()
    row = re.search(rf'<tr><td><a href="/pods/{ns}/{name}/" data-pod="{key}">.*?</tr>', html, re.S).group(0)
    links = re.findall(r'<a class="replay-attempt" href="([^"]+)">([^<]+)</a>', row)
    assert links == [(f"/replays/{run.pk}/pods/{ns}/{name}/#config-0", most["placements"][key] or "pending"),
                     (f"/replays/{run.pk}/pods/{ns}/{name}/#config-1", least["placements"][key] or "pending")]

    page = admin_client.get(links[0][0].split("#")[0]).content.decode()
    cards = dict(re.findall(r'<section class="card replay-attempt" id="(config-\d)".*?<dd class="node">([^<]+)</dd>', page, re.S))
    assert cards == {"config-0": most["placements"][key], "config-1": least["placements"][key]}
    assert page.count('<table class="data top-scores">') == 2  # what each binding cycle weighed
    top = most["differ_attempts"][key]["decision"]["top"]
    assert top[0][0] == most["placements"][key] and f"<td>{top[0][0]}</td><td class=\"num\">{top[0][1]}</td>" in page
    assert "No attempt of" in page  # an uploaded trace: no live attempts here
    same = next(k for k in most["placements"] if k not in run.report["differ"])
    assert admin_client.get(f"/replays/{run.pk}/pods/{same}/").status_code == 404


def test_a_replay_still_running_shows_its_progress_bar_and_its_progress_answers_the_poll(admin_client):
    run = ReplayRun.objects.create(trace_name="t.jsonl", trace=spread_trace_text(), configs=[], status="running",
                                   progress=0.4)
    html = admin_client.get(f"/replays/{run.pk}/").content.decode()
    assert f'<div id="replay-progress" data-url="/replays/{run.pk}/progress">' in html
    assert '<progress id="progress-bar" max="1" value="0.4">40 %</progress>' in html
    assert 'id="replay-summary"' not in html
    assert admin_client.get(f"/replays/{run.pk}/progress").json() == {"status": "running", "progress": 0.4, "error": ""}
    assert "running (40&nbsp;%)" in admin_client.get("/replays/").content.decode()


def test_a_trace_that_cannot_be_read_is_refused_on_the_form_and_nothing_starts(admin_client):
    response = start(admin_client, '{"kind": "trace", "version": 1}\n{"kind": "nope"}\n')
    assert response.status_code == 200 and "unknown kind" in response.content.decode()
    assert not ReplayRun.objects.exists()


def test_a_bad_configuration_file_is_refused_with_the_loaders_words(admin_client):
    response = start(admin_client, spread_trace_text(),
                     file_b=SimpleUploadedFile("bad.yaml", b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: Nope\n"))
    assert response.status_code == 200 and "bad.yaml" in response.content.decode()
    assert not ReplayRun.objects.exists()


def test_the_admins_version_page_links_a_replay_of_the_last_hour_recorded_from_the_database(admin_client, settings):
    settings.SCHEDBOARD_SEED = 7  # ties among equal scores broken as the replay breaks them
    from scheduler.engine.config import default_config
    from scheduler.models import Attempt, Binding
    from scheduler.versions.services import config_version_create
    from scheduler.testing.loop import apply, drain, node, pod

    version = config_version_create(config=default_config(), reason="replay me")
    apply(node("a"), node("b", cpu="8"), *[pod(f"p{i}") for i in range(5)])
    drain()
    page = admin_client.get(f"/admin/scheduler/schedulerconfigversion/{version.pk}/change/").content.decode()
    link = re.search(r'<p id="replay-link"><a href="([^"]+)">Replay the last hour with this version vs the active one', page)
    assert link and link.group(1) == f"/replays/?record=1h&amp;config_a=v{version.number}"

    form = admin_client.get(link.group(1).replace("&amp;", "&")).content.decode()
    assert re.search(r'name="record_since" value="1h"', form)
    select = {name: re.search(rf'<select name="{name}".*?</select>', form, re.S).group(0) for name in ("config_a", "config_b")}
    assert f'<option value="v{version.number}" selected>' in select["config_a"]
    # B: the active version (saving one activates it; this one is).
    assert f'<option value="v{version.number}" selected>version {version.number} (active)</option>' in select["config_b"]

    response = admin_client.post("/replays/", {"record_since": "1h", "config_a": f"v{version.number}", "config_b": "recorded"})
    run = ReplayRun.objects.get()
    assert response.status_code == 302 and run.status == "done" and run.trace_name == "the database, last 1h"
    recorded = run.report["configs"][1]
    assert run.report["trace"]["recorded_bindings"] == Binding.objects.count() == 5
    assert recorded["recorded_matches"] == 5  # one worker, as recorded: the same bindings

    # Against packing: the pods placed differently link to the live run's attempts of that pod too.
    admin_client.post("/replays/", {"record_since": "1h", "config_a": "recorded", "config_b": "recorded",
                                    "file_b": SimpleUploadedFile("most.yaml", FIT.format(strategy="MostAllocated").encode())})
    packed = ReplayRun.objects.latest("pk")
    key = packed.report["differ"][0]
    page = admin_client.get(f"/replays/{packed.pk}/pods/{key}/").content.decode()
    ns, name = key.split("/")
    attempt = Attempt.objects.filter(namespace=ns, pod_name=name).latest("started_at")
    assert f'<a href="/attempts/{attempt.pk}/">attempt {attempt.number}</a>' in page
