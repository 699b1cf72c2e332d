"""CSRF on every form: a crawl, logged in as staff, of every page reachable from the navigation (the
dashboard and the admin, with the profile editor, import and restore pages), plus the login pages. Every
<form method=post> must carry a csrfmiddlewaretoken, and a POST to its action without one is refused (403)."""

import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from scheduler.engine.config import default_config
from scheduler.models import SchedulerConfigVersion
from scheduler.versions.services import config_version_create

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "/admin/scheduler/schedulerconfigversion/"
# Not pages: downloads, machine endpoints, static files, and the two ways out.
SKIP = re.compile(r"^/(static/|metrics|healthz|livez|readyz|accounts/logout|admin/logout|admin/jsi18n)|[?&]format=|/export/")
# The POST forms the crawl must find (page path -> form action path); a change that drops a page from
# the navigation fails here rather than quietly shrinking the check.
MUST_FIND = {
    ("/", "/accounts/logout/"),
    ("/accounts/login/", "/accounts/login/"),
    ("/admin/login/", "/admin/login/"),
    (BASE, BASE),  # the changelist's actions
    (BASE + "profiles/default-scheduler/", BASE + "profiles/default-scheduler/"),
    (BASE + "profiles/add/", BASE + "profiles/add/"),
    (BASE + "import/", BASE + "import/"),
    ("/admin/password_change/", "/admin/password_change/"),
    (BASE + "#restore", BASE),
}


class Page(HTMLParser):
    """A page's links and its forms (method, action, the fields a browser would send)."""

    def __init__(self):
        super().__init__()
        self.links, self.forms, self._form = [], [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        elif tag == "form":
            self._form = {"method": (a.get("method") or "get").lower(), "action": a.get("action") or "", "fields": {}}
            self.forms.append(self._form)
        elif self._form is not None and tag in ("input", "select", "textarea") and a.get("name"):
            if a.get("type") not in ("submit", "file", "checkbox") or "checked" in a:
                self._form["fields"][a["name"]] = a.get("value") or ""

    def handle_endtag(self, tag):
        if tag == "form":
            self._form = None


def parse(response) -> Page:
    page = Page()
    page.feed(response.content.decode())
    return page


def crawl(client, start: str, limit: int = 200) -> dict[str, Page]:
    """Every page reachable from `start` by same-site links, one per URL shape (ids and names folded)."""
    seen, pages, todo = set(), {}, [start]
    while todo and len(pages) < limit:
        url = todo.pop(0)
        path = urlsplit(url).path
        shape = "/pods/" if path.startswith("/pods/") else re.sub(r"\d+", "N", path)
        if shape in seen or SKIP.search(url):
            continue
        seen.add(shape)
        response = client.get(url)
        assert response.status_code in (200, 302), (url, response.status_code)
        if response.status_code != 200 or not response["Content-Type"].startswith("text/html"):
            continue
        pages[url] = page = parse(response)
        for href in page.links:
            target = urljoin(url, href)
            if target.startswith("/") and not target.startswith("//"):
                todo.append(target.split("#")[0])
    return pages


@pytest.fixture
def history():
    from scheduler.testing.whatif import store

    config_version_create(config=default_config(), reason="a saved version", user=None)
    return store()


def test_every_post_form_a_staff_user_can_reach_carries_a_token_and_is_refused_without_one(
        admin_user, history):
    staff = Client()
    staff.force_login(admin_user)
    pages = crawl(staff, "/")
    for must in ("/profiles/", "/whatif/", "/bindings/", "/attempts/N/", "/attempts/N/rescore/", BASE + "N/change/"):
        assert any(re.sub(r"\d+", "N", urlsplit(p).path) == must for p in pages), (must, sorted(pages))
    for login in ("/accounts/login/", "/admin/login/"):
        pages[login] = parse(Client().get(login))
    # The restore page is an admin action's answer, so it is reached by POSTing the action, not by a link.
    version = SchedulerConfigVersion.objects.get(active=True)
    restore = staff.post(BASE, {"action": "restore_as_new_version", "_selected_action": [version.pk]})
    assert restore.status_code == 200 and b"Restore version" in restore.content
    pages[BASE + "#restore"] = parse(restore)

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin_user)
    found = set()
    for url, page in pages.items():
        for form in (f for f in page.forms if f["method"] == "post"):
            action = urlsplit(urljoin(url, form["action"] or url.split("#")[0])).path
            found.add((url.split("?")[0] if "#" not in url else url, action))
            assert form["fields"].get("csrfmiddlewaretoken"), (url, form)
            data = {k: v for k, v in form["fields"].items() if k != "csrfmiddlewaretoken"}
            client = Client(enforce_csrf_checks=True) if "login" in action else strict
            response = client.post(action, data)
            assert response.status_code == 403 and b"CSRF verification failed" in response.content, (url, action)
    assert MUST_FIND <= found, sorted(MUST_FIND - found)
    assert strict.get("/").status_code == 200  # the refused logout left the session alone
