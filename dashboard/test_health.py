"""/healthz, /readyz and /livez answer as Kubernetes components do (apiserver's healthz.handleRootHealth)."""

import logging

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/livez"])
def test_it_answers_ok_in_plain_text_without_login(client, path):
    response = client.get(path)
    assert response.status_code == 200
    assert response.content == b"ok"
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_verbose_healthz_lists_its_checks_and_ends_with_check_passed(client):
    response = client.get("/healthz?verbose")
    assert response.status_code == 200
    assert response.content.decode() == "[+]ping ok\nhealthz check passed\n"


def test_verbose_readyz_checks_the_database_and_redis(client):
    response = client.get("/readyz?verbose")
    assert response.content.decode() == "[+]ping ok\n[+]database ok\n[+]redis ok\nreadyz check passed\n"


def test_readyz_fails_with_500_and_withholds_the_reason_when_redis_is_unreachable(client):
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = client.get("/readyz")
    assert response.status_code == 500
    assert response.content.decode() == ("[+]ping ok\n[+]database ok\n[-]redis failed: reason withheld\n"
                                         "readyz check failed\n")
    assert response["Content-Type"] == "text/plain; charset=utf-8"


def test_liveness_does_not_depend_on_redis(client):
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        assert client.get("/livez").status_code == 200
        assert client.get("/healthz").status_code == 200


def test_an_excluded_check_is_reported_as_excluded(client):
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = client.get("/readyz?verbose&exclude=redis&exclude=nope")
    assert response.status_code == 200
    assert response.content.decode() == ('[+]ping ok\n[+]database ok\n[+]redis excluded: ok\n'
                                         'warn: some health checks cannot be excluded: no matches for "nope"\n'
                                         'readyz check passed\n')


def test_a_single_check_withholds_its_error_from_anonymous_clients_and_logs_it(client, caplog):
    # As the root answer (handleRootHealth): the reason, which names hosts and users, goes to the log only.
    assert client.get("/readyz/database").content == b"ok"
    caplog.set_level(logging.INFO, logger="dashboard.views")
    with override_settings(REDIS_URL="redis://leaky:hunter2@127.0.0.1:1/0"):
        response = client.get("/readyz/redis")
    assert response.status_code == 500
    assert response.content.decode() == "internal server error: reason withheld\n"
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    logged = [r.getMessage() for r in caplog.records if r.name == "dashboard.views"]
    assert any("redis" in m and "127.0.0.1:1" in m for m in logged), logged
    assert client.get("/readyz/nope").status_code == 404


def test_a_single_check_shows_its_error_to_staff(admin_client):
    # Upstream shows a single check's error only to whom may read it (the per-check paths are not in
    # system:public-info-viewer); here that is a logged-in staff user.
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = admin_client.get("/readyz/redis")
    assert response.status_code == 500
    body = response.content.decode()
    assert body.startswith("internal server error: ") and "127.0.0.1:1" in body
