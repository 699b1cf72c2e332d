"""/healthz, /readyz and /livez answer as Kubernetes components do (apiserver's healthz.handleRootHealth)."""

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


def test_a_single_check_shows_its_own_error(client):
    assert client.get("/readyz/database").content == b"ok"
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = client.get("/readyz/redis")
    assert response.status_code == 500
    assert response.content.decode().startswith("internal server error: ")
    assert client.get("/readyz/nope").status_code == 404
