"""Every dashboard page needs a login; /metrics and the health endpoints stay open; forms carry CSRF;
the production settings pass `manage.py check --deploy`."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver

from scheduler.testing.deploy import deploy_settings

pytestmark = pytest.mark.django_db

OPEN_PATHS = {"/metrics", "/healthz", "/livez", "/readyz"}
SAMPLE_ARGS = {"str": "default", "int": "1", "slug": "x", "path": "x"}


def _concrete_paths(patterns=None, prefix=""):
    """Every URL the project routes, with sample values for its parameters."""
    for p in patterns if patterns is not None else get_resolver().url_patterns:
        route = str(p.pattern)
        if route.startswith("^") or "(?P" in route:  # regex routes (admin's app index): skip
            continue
        concrete = re.sub(r"<(?:(\w+):)?\w+>", lambda m: SAMPLE_ARGS[m.group(1) or "str"], route)
        if isinstance(p, URLResolver):
            yield from _concrete_paths(p.url_patterns, prefix + concrete)
        elif isinstance(p, URLPattern):
            yield "/" + prefix + concrete


def test_every_page_redirects_an_anonymous_visitor_to_the_login_page(client):
    checked = 0
    for path in _concrete_paths():
        first = "/" + path.strip("/").split("/")[0]
        if first in OPEN_PATHS or path.startswith(("/accounts/", "/admin/login", "/admin/logout")):
            continue
        response = client.get(path)
        assert response.status_code == 302, path
        # The admin's index sends to its own login form, every other page to the dashboard's.
        assert response["Location"].startswith(("/accounts/login/?next=", "/admin/login/?next=")), path
        checked += 1
    assert checked >= 2  # the overview and the admin at least


@pytest.mark.parametrize("path", sorted(OPEN_PATHS))
def test_metrics_and_health_endpoints_need_no_login(client, path):
    assert client.get(path).status_code == 200


def test_a_login_sends_the_user_back_to_the_page_asked_for(client, django_user_model):
    django_user_model.objects.create_user("alice", password="pw-alice-1")
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice-1", "next": "/"})
    assert response.status_code == 302 and response["Location"] == "/"
    page = client.get("/")
    assert page.status_code == 200
    assert b"alice" in page.content


def test_a_wrong_password_shows_an_error_and_logs_nobody_in(client, django_user_model):
    django_user_model.objects.create_user("alice", password="pw-alice-1")
    response = client.post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert b"didn't match" in response.content
    assert client.get("/").status_code == 302


def test_login_and_logout_forms_are_refused_without_a_csrf_token(django_user_model):
    from django.test import Client

    django_user_model.objects.create_user("alice", password="pw-alice-1")
    strict = Client(enforce_csrf_checks=True)
    assert strict.post("/accounts/login/", {"username": "alice", "password": "pw-alice-1"}).status_code == 403
    strict.force_login(django_user_model.objects.get(username="alice"))
    assert strict.post("/accounts/logout/").status_code == 403
    assert strict.get("/").status_code == 200  # still logged in


# Every POST form a staff user can reach, crawled: dashboard/test_csrf_forms.py.


def test_logout_is_a_post_and_ends_the_session(admin_client):
    response = admin_client.post("/accounts/logout/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert admin_client.get("/").status_code == 302


def test_the_navigation_lists_every_section_and_marks_the_current_one(admin_client):
    html = admin_client.get("/").content.decode()
    for label, href in [("Overview", "/"), ("Queue", "/queue/"), ("Nodes", "/nodes/"), ("Audit", "/bindings/"),
                        ("What-if", "/whatif/"), ("Replays", "/replays/"), ("Profiles", "/profiles/"), ("Admin", "/admin/"),
                        ("Metrics", "/metrics")]:
        assert re.search(rf'<a href="{re.escape(href)}"[^>]*>{re.escape(label)}</a>', html), label
    assert '<a href="/" aria-current="page">Overview</a>' in html
    assert '<span id="live-status"' in html


def test_the_stylesheet_is_served_by_the_app_itself(client):
    # WhiteNoise in the middleware: the same answer under daphne, without collectstatic.
    response = client.get("/static/dashboard/css/app.css")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/css")
    assert b":focus-visible" in b"".join(response.streaming_content)


def test_production_settings_pass_the_deploy_check():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "SCHEDBOARD_"))}
    env.update({
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": os.environ["DATABASE_URL"],
    })
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=Path(settings.BASE_DIR), env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_production_settings_refuse_to_start_without_a_secret_key():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "SCHEDBOARD_"))}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": os.environ["DATABASE_URL"]})
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=Path(settings.BASE_DIR), env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY: required" in result.stderr


# ---- hosts and the account pages ---------------------------------------------------------------------------

def _check_with(extra: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "SCHEDBOARD_"))}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
                "DATABASE_URL": os.environ["DATABASE_URL"], **extra})
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=Path(settings.BASE_DIR), env=env,
                          capture_output=True, text=True, timeout=120)


def test_production_settings_refuse_to_accept_any_host():
    # "*" would let any Host header through (absolute links built from it) and any page's websocket in.
    result = _check_with({"DJANGO_ALLOWED_HOSTS": "schedboard.example.com,*"})
    assert result.returncode != 0
    assert "DJANGO_ALLOWED_HOSTS: '*' accepts any Host header" in result.stderr


def test_debug_settings_still_accept_any_host():
    assert _check_with({"DJANGO_ALLOWED_HOSTS": "*", "DJANGO_DEBUG": "true"}).returncode == 0


def test_a_host_pattern_django_would_never_match_is_refused_with_the_form_it_takes():
    result = _check_with({"DJANGO_ALLOWED_HOSTS": "*.example.com"})
    assert result.returncode != 0
    assert "DJANGO_ALLOWED_HOSTS: '*.example.com' matches nothing; write '.example.com'" in result.stderr


def test_the_deploy_lists_its_hosts_and_refuses_any_other(client, settings):
    settings.ALLOWED_HOSTS = deploy_settings()["ALLOWED_HOSTS"]
    assert "*" not in settings.ALLOWED_HOSTS
    assert client.get("/accounts/login/", HTTP_HOST="schedboard.example.com").status_code == 200
    assert client.get("/accounts/login/", HTTP_HOST="schedboard-web.schedboard.svc").status_code == 200
    # Another Host is refused before any page could build a link from it.
    assert client.get("/accounts/login/", HTTP_HOST="evil.example").status_code == 400


@pytest.mark.parametrize("path", sorted(OPEN_PATHS))
def test_probes_and_scrapes_by_pod_ip_are_answered_whatever_the_host(client, settings, path):
    # kubelet and Prometheus reach a pod by its IP (Host: 10.244.1.7:8000), which no host list names;
    # these answers never use the Host.
    settings.ALLOWED_HOSTS = deploy_settings()["ALLOWED_HOSTS"]
    assert client.get(path, HTTP_HOST="10.244.1.7:8000").status_code == 200


# The account pages: log in, log out, change one's password. No password reset: it would mail a link built
# from the request's Host to whoever knows a user's address, and needs mail set up nobody configured.
ACCOUNT_PAGES = {"/accounts/login/", "/accounts/logout/", "/accounts/password_change/",
                 "/accounts/password_change/done/"}


def test_the_account_pages_are_login_logout_and_password_change_only():
    routed = {p for p in _concrete_paths() if p.startswith("/accounts/")}
    assert routed == ACCOUNT_PAGES


@pytest.mark.parametrize("path", ["/accounts/password_reset/", "/accounts/password_reset/done/",
                                  "/accounts/reset/MQ/set-password/", "/accounts/reset/done/"])
def test_there_is_no_password_reset_page(client, path):
    assert client.get(path).status_code == 404
    assert client.post(path, {"email": "admin@example.com"}).status_code == 404


def test_a_logged_in_user_can_change_their_password(client, django_user_model):
    user = django_user_model.objects.create_user("alice", password="pw-alice-1")
    client.force_login(user)
    assert client.get("/accounts/password_change/").status_code == 200
    response = client.post("/accounts/password_change/", {"old_password": "pw-alice-1",
                                                          "new_password1": "a-much-longer-pw-2",
                                                          "new_password2": "a-much-longer-pw-2"})
    assert response.status_code == 302 and response["Location"] == "/accounts/password_change/done/"
    user.refresh_from_db()
    assert user.check_password("a-much-longer-pw-2")
