"""/queue/ in a real browser: the Gated list and count show a pod held by scheduling gates, with the gates
it waits for, and lose it once its last gate is removed."""

import pytest

from scheduler.testing.browser import login, screenshot
from scheduler.testing.loop import apply, drain, node, pod

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_queue_page_lists_a_gated_pod_until_its_last_gate_is_removed(asgi_server, dashboard_user, page):
    apply(node("node-a", cpu="4"), pod("held", cpu="1", schedulingGates=[{"name": "example.com/quota"}]))
    drain()
    login(page, asgi_server, dashboard_user, next_path="/queue/")
    page.wait_for_function("document.getElementById('n-gated').textContent === '1'")
    row = page.locator("#q-gated tr").first
    assert "default/held" in row.inner_text() and "waiting for scheduling gates: [example.com/quota]" in row.inner_text()
    screenshot(page, "queue-gated")
    apply(pod("held", cpu="1"))
    drain()
    page.wait_for_function("document.getElementById('n-gated').textContent === '0'")
    assert page.locator("#empty-gated").is_visible()
