"""Why pending in a real browser against the real stack: the pod page's answer, the link from its attempt,
and /pending/'s stacked chart of main reasons."""

import pytest

from scheduler.testing.browser import login, screenshot
from scheduler.testing.loop import apply, drain, node, pod

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WINDOW = "15m"  # a short window: the attempts just made fill a wide bucket


def test_a_pending_pods_page_says_what_the_nearest_node_lacks_and_pending_stacks_the_reasons(
        asgi_server, dashboard_user, page):
    apply(node("gpu-1", cpu="8", spec={"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]}),
          node("small", cpu="1"), pod("trainer", cpu="2"), pod("picky", cpu="100m", nodeSelector={"disk": "ssd"}))
    drain()

    login(page, asgi_server, dashboard_user, next_path="/pods/default/trainer/")
    why = page.locator("#why-pending")
    assert why.locator("h2").inner_text() == "Why pending, answered"
    first = why.locator("#why-nearest tbody tr").first
    assert first.get_attribute("data-node") == "gpu-1"
    assert "taint gpu=true:NoSchedule not tolerated" in first.inner_text()
    changes = why.locator("#why-changes li")
    assert changes.first.get_attribute("data-kind") == "toleration"
    assert "fits gpu-1" in changes.first.inner_text()
    screenshot(page, "why-pending-pod")

    # The attempt page answers the same for an unschedulable attempt.
    page.click("#attempts-table a")
    assert page.locator("#why-pending #why-nearest tbody tr").first.get_attribute("data-node") == "gpu-1"

    page.goto(asgi_server.url + f"/pending/?window={WINDOW}")
    page.wait_for_selector("#chart-reasons[data-ready='1'] canvas")
    legend = page.locator("#chart-reasons .u-legend").inner_text()
    assert "Insufficient cpu" in legend and "node(s) didn't match Pod's node affinity/selector" in legend
    assert page.locator("#pending-now tfoot").inner_text().split() == ["All", "2"]
    screenshot(page, "pending-by-reason")
