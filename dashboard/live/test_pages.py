"""The live pages render for a logged-in user, with their module, the vendored chart library and the status slot."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.staticfiles import finders

pytestmark = pytest.mark.django_db


@pytest.fixture
def user_client(client):
    client.force_login(get_user_model().objects.create_user("viewer", password="pw"))
    return client


@pytest.mark.parametrize("path,module", [("/", "overview.js"), ("/queue/", "queue.js"), ("/nodes/", "nodes.js")])
def test_a_live_page_loads_its_module_and_shows_its_connection_state(user_client, path, module):
    html = user_client.get(path).content.decode()
    assert f"dashboard/js/{module}" in html and 'type="module"' in html
    assert 'id="live-status"' in html and "Connecting…" in html
    assert 'data-login-url="/accounts/login/"' in html  # where live.js goes when the socket closes with 4401
    assert finders.find(f"dashboard/js/{module}") and finders.find("dashboard/js/live.js")


def test_the_overview_loads_the_vendored_uplot_with_its_licence(user_client):
    html = user_client.get("/").content.decode()
    assert "vendor/uplot/uPlot.iife.min.js" in html and "vendor/uplot/uPlot.min.css" in html
    assert "MIT" in open(finders.find("vendor/uplot/LICENSE")).read()

