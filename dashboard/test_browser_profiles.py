"""In a real browser (Playwright driving Debian's Chromium): a staff user changes a weight in the admin,
gives a reason, and /profiles/ shows the new version; a non-staff user cannot reach the admin.

The server is pytest-django's live server on the test database. Django's ORM is only used outside
`sync_playwright()` (its event loop makes the ORM refuse synchronous calls inside it).
"""

import re
from contextlib import contextmanager

import pytest
from django.contrib.auth import get_user_model

from scheduler.models import SchedulerConfigVersion

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


@contextmanager
def chromium():
    """(page, expect) in a headless Chromium; the ORM is off limits until the block ends."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page()
        page.set_default_timeout(30_000)  # a slow shared box; waits end as soon as the element is there
        try:
            yield page, sync_api.expect
        finally:
            browser.close()


def admin_login(page, base, username, password):
    page.goto(f"{base}/admin/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("input[type=submit]")


def test_a_staff_user_changes_a_weight_in_the_admin_and_the_dashboard_shows_the_new_version(live_server):
    get_user_model().objects.create_superuser("ops", "ops@example.com", "pw-ops-1")
    base = live_server.url
    with chromium() as (page, expect):
        _change_weight_and_check_dashboard(page, expect, base)
    version = SchedulerConfigVersion.objects.get()
    assert (version.number, version.created_by.username, version.reason) == \
        (1, "ops", "prefer nodes that already have the image")


def _change_weight_and_check_dashboard(page, expect, base):
    admin_login(page, base, "ops", "pw-ops-1")
    page.goto(f"{base}/admin/scheduler/schedulerconfigversion/")
    page.click("text=Edit profiles")
    page.click("#profiles >> text=Edit")
    expect(page).to_have_url(re.compile(r"/admin/scheduler/schedulerconfigversion/profiles/default-scheduler/$"))
    page.fill('tr[data-plugin="ImageLocality"] input[name$="-weight"]', "4")
    page.fill("textarea[name=reason]", "prefer nodes that already have the image")
    page.click("input[value='Save as a new version']")
    expect(page.locator("ul.messagelist")).to_contain_text("Version 1 saved and active")
    expect(page.locator("#config-diff pre")).to_contain_text("weight: 4")

    page.goto(f"{base}/profiles/")
    expect(page.locator("#active-version")).to_contain_text("version 1")
    expect(page.locator("#active-version")).to_contain_text("prefer nodes that already have the image")
    expect(page.locator('#profiles [data-plugin="ImageLocality"] b')).to_have_text("4")
    expect(page.locator('#profiles [data-plugin="TaintToleration"] b')).to_have_text("3")


def test_a_staff_users_bad_weight_is_refused_with_kube_schedulers_words_and_nothing_saved(live_server):
    get_user_model().objects.create_superuser("ops", "ops@example.com", "pw-ops-1")
    base = live_server.url
    with chromium() as (page, expect):
        admin_login(page, base, "ops", "pw-ops-1")
        page.goto(f"{base}/admin/scheduler/schedulerconfigversion/profiles/default-scheduler/")
        page.fill('input[name="fit-0-weight"]', "101")
        page.fill("textarea[name=reason]", "too much cpu")
        page.click("input[value='Save as a new version']")
        expect(page.locator("#config-problems")).to_contain_text(
            "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight: Invalid value: 101: "
            "resource weight of cpu not in valid range (0, 100]")
    assert not SchedulerConfigVersion.objects.exists()


def test_a_non_staff_user_cannot_reach_the_admin(live_server):
    get_user_model().objects.create_user("pat", password="pw-pat-1")
    with chromium() as (page, expect):
        _non_staff_visits(page, expect, live_server.url)


def _non_staff_visits(page, expect, base):
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", "pat")
    page.fill("input[name=password]", "pw-pat-1")
    page.click("button[type=submit], input[type=submit]")
    page.goto(f"{base}/profiles/")
    expect(page.locator("#active-version")).to_contain_text("version 0")
    expect(page.locator("#profiles")).not_to_contain_text("edit in admin")
    for url in ("/admin/", "/admin/scheduler/schedulerconfigversion/profiles/default-scheduler/"):
        page.goto(base + url)
        expect(page).to_have_url(re.compile(r"/admin/login/\?next="))
        expect(page.locator(".errornote")).to_contain_text("You are authenticated as pat, but are not authorized")
