"""The pages in a real browser against the real stack: daphne, worker processes, Postgres, Redis, Chromium."""

import csv
import re

import pytest
import yaml

from scheduler.testing.browser import NARROW_VIEWPORT, VIEWPORT, login, screenshot
from scheduler.testing.wait import wait_for
from scheduler.manifests.files import parse_documents
from scheduler.models import Attempt
from scheduler.cluster.services import cluster_apply

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# 16 cpus fit no untainted node even emptied: the PostFilter (DefaultPreemption) says preemption cannot help.
MESSAGE = ("0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu. "
           "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.")


def node(name, cpu, taints=None):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {"taints": taints or []},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}


def pod(name, cpu):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "shop"},
            "spec": {"containers": [{"name": "c", "image": "app:1", "resources": {"requests": {"cpu": cpu}}}]}}


@pytest.fixture
def scheduled_cluster(celery_workers):
    """Four nodes, a pod that fits and one that fits nowhere, scheduled by a real worker."""
    objs = [node("node-a", "2"), node("node-b", "4"), node("node-c", "8"),
            node("gpu-1", "32", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
            pod("web", "1"), pod("huge", "16")]
    cluster_apply(parse_documents(yaml.safe_dump_all(objs), "browser.yaml"))
    celery_workers(1)
    return {
        "huge": wait_for(lambda: Attempt.objects.filter(pod_name="huge", result="unschedulable").first(),
                         "the huge pod's failed attempt"),
        "web": wait_for(lambda: Attempt.objects.filter(pod_name="web", result="scheduled", binding__isnull=False).first(),
                        "the web pod bound"),
    }


def cells(row):
    return [c.inner_text().strip() for c in row.locator("td").all()]


def test_an_anonymous_visitor_is_sent_to_the_login_form_and_comes_back_after_logging_in(asgi_server, dashboard_user, page):
    page.goto(asgi_server.url + "/bindings/?result=unschedulable")
    assert page.url.startswith(asgi_server.url + "/accounts/login/")
    screenshot(page, "login")
    page.fill("input[name=username]", "viewer")
    page.fill("input[name=password]", "wrong")
    page.click("button[type=submit]")
    assert page.get_by_role("alert").inner_text() == "Your username and password didn't match. Please try again."
    login(page, asgi_server, dashboard_user, next_path="/bindings/%3Fresult%3Dunschedulable")
    assert page.url == asgi_server.url + "/bindings/?result=unschedulable"
    assert page.locator("nav.mainnav a[aria-current=page]").inner_text() == "Audit"
    # The stylesheet came from daphne itself (WhiteNoise), with DEBUG off.
    assert page.evaluate("getComputedStyle(document.querySelector('.topbar')).display") == "flex"
    page.click("text=Log out")
    assert page.url.startswith(asgi_server.url + "/accounts/login/")


def test_an_unschedulable_pods_attempt_shows_the_message_and_who_rejected_each_node_and_a_scheduled_ones_scores(
        asgi_server, dashboard_user, scheduled_cluster, page):
    huge, web = scheduled_cluster["huge"], scheduled_cluster["web"]
    login(page, asgi_server, dashboard_user)
    screenshot(page, "overview")

    # From the pod page's timeline to its attempt.
    page.goto(asgi_server.url + "/pods/shop/huge/")
    events = page.locator("#events-table tbody tr")
    assert cells(events.first)[:2] == ["Warning", "FailedScheduling"]
    assert cells(events.first)[3:] == ["default-scheduler", MESSAGE]
    screenshot(page, "pod-unschedulable")
    page.set_viewport_size(NARROW_VIEWPORT)
    screenshot(page, "pod-unschedulable-narrow")
    page.set_viewport_size(VIEWPORT)
    page.click(f"a[href='/attempts/{huge.pk}/']")
    assert page.url == f"{asgi_server.url}/attempts/{huge.pk}/"

    assert page.locator("#message").inner_text() == MESSAGE
    verdicts = {cells(r)[0]: cells(r)[1:] for r in page.locator("#verdicts tbody tr").all()}
    assert verdicts == {
        "gpu-1": ["TaintToleration", "node(s) had untolerated taint(s)"],
        "node-a": ["NodeResourcesFit", "Insufficient cpu"],
        "node-b": ["NodeResourcesFit", "Insufficient cpu"],
        "node-c": ["NodeResourcesFit", "Insufficient cpu"],
    }
    assert "default-scheduler, configuration version 0" in page.locator("#profile").inner_text()
    screenshot(page, "attempt-unschedulable")
    # Searching narrows the verdicts as you type.
    page.fill("#verdict-search", "taint")
    visible = page.locator("#verdicts tbody tr:visible")
    assert [cells(r)[0] for r in visible.all()] == ["gpu-1"]

    page.goto(f"{asgi_server.url}/attempts/{web.pk}/")
    winner = page.locator("#scores tbody tr.winner")
    assert winner.count() == 1
    assert cells(winner)[0] == web.node_name  # the ★ label is drawn by CSS, not text
    assert page.locator("#scores tbody tr").first.get_attribute("class") == "winner"
    top = web.candidates[0]
    assert cells(winner)[-1] == str(top["total"])
    header = page.locator("#scores thead tr").first.inner_text()
    for plugin, score in top["plugins"].items():
        assert f"{plugin} (weight {score['weight']})" in header
    screenshot(page, "attempt-scheduled")
    page.set_viewport_size(NARROW_VIEWPORT)
    screenshot(page, "attempt-scheduled-narrow")


def test_the_audit_filters_to_unschedulable_attempts_and_downloads_them_as_csv(
        asgi_server, dashboard_user, scheduled_cluster, page):
    login(page, asgi_server, dashboard_user, next_path="/bindings/")
    assert page.locator("#audit tbody tr").count() == Attempt.objects.count()
    screenshot(page, "audit")

    page.select_option("select[name=result]", "unschedulable")
    page.fill("input[name=q]", "HUG")
    with page.expect_navigation():
        page.click("form.filters button[type=submit]")
    assert re.search(r"[?&]result=unschedulable(&|$)", page.url) and "q=HUG" in page.url  # a permalink
    rows = page.locator("#audit tbody tr")
    expected = list(Attempt.objects.filter(result="unschedulable", pod_name="huge").order_by("-started_at", "-id"))
    assert rows.count() == len(expected) >= 1
    assert {cells(r)[3] for r in rows.all()} == {"✕ unschedulable"} or {cells(r)[3] for r in rows.all()} == {"unschedulable"}
    screenshot(page, "audit-filtered")
    page.set_viewport_size(NARROW_VIEWPORT)
    screenshot(page, "audit-filtered-narrow")
    page.set_viewport_size(VIEWPORT)

    with page.expect_download() as download:
        page.click("#export-csv")
    assert re.fullmatch(r"schedboard-audit-\d{8}T\d{6}Z\.csv", download.value.suggested_filename)
    with open(download.value.path(), newline="") as f:
        exported = list(csv.DictReader(f))
    assert [int(r["id"]) for r in exported] == [a.pk for a in expected]
    assert {(r["pod"], r["result"], r["message"]) for r in exported} == {("huge", "unschedulable", MESSAGE)}
    assert exported[0]["url"] == f"{asgi_server.url}/attempts/{expected[0].pk}/"

    page.goto(asgi_server.url + "/bindings/?version=-1")
    assert "Ensure this value is greater than or equal to 0." in page.locator("form.filters").inner_text()
    screenshot(page, "audit-bad-filter")


def test_the_profile_pages_and_the_admin_profile_editor_show_their_headings(asgi_server, dashboard_user, page):
    # A staff user who may edit the configuration; a saved version and a history of scored attempts.
    from django.contrib.auth.models import Permission

    from scheduler.testing.whatif import store
    from scheduler.engine.config import default_config
    from scheduler.versions.services import config_version_create

    dashboard_user.user_permissions.add(*Permission.objects.filter(
        codename__in=["view_schedulerconfigversion", "add_schedulerconfigversion"]))
    config_version_create(config=default_config(), reason="browser test", user=dashboard_user)
    attempt = store()[0]
    login(page, asgi_server, dashboard_user)
    for path, heading, name in [
        ("/profiles/", "Profiles", "profiles"),
        ("/whatif/", "What-if", "whatif"),
        (f"/attempts/{attempt.pk}/rescore/", f"Re-score attempt #{attempt.pk}", "rescore"),
        ("/admin/scheduler/schedulerconfigversion/profiles/default-scheduler/", "Profile default-scheduler",
         "admin-profile-editor"),
    ]:
        response = page.goto(asgi_server.url + path)
        assert response.status == 200, path
        assert page.locator("h1").first.inner_text().strip() == heading, path
        screenshot(page, name)
    # The editor's form is there to use, with its reason field.
    assert page.locator("#profile-form textarea[name=reason], #profile-form input[name=reason]").count() == 1
    page.set_viewport_size(NARROW_VIEWPORT)
    page.goto(asgi_server.url + "/whatif/")
    screenshot(page, "whatif-narrow")
