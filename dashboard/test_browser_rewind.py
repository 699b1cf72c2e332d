"""The rewind in a real browser against the real stack: the time control on /nodes/ and /queue/ shows a past
instant's node cache (equal to the audit's bindings up to it) and sub-queues, then goes back to live."""

import time
from datetime import datetime, timezone

import pytest

from scheduler.cluster.services import pod_delete
from scheduler.testing.audit import audit_bound
from scheduler.testing.browser import login, screenshot
from scheduler.testing.loop import apply, drain, node, pod

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_time_control_rewinds_the_nodes_and_the_queue_to_a_past_instant(asgi_server, dashboard_user, page):
    apply(node("node-10", cpu="4"), node("node-2", cpu="4"), pod("a", cpu="1"), pod("b", cpu="1500m"),
          pod("huge", cpu="64"))
    drain()
    time.sleep(1.2)  # the control has one-second steps: the instant falls after the bindings above
    instant = datetime.now(timezone.utc).replace(microsecond=0)
    time.sleep(1.2)
    pod_delete(namespace="default", name="a")  # after the instant: the rewind still has it on its node
    apply(pod("c", cpu="2"))
    drain()

    login(page, asgi_server, dashboard_user, next_path="/nodes/")
    page.fill("#rewind-at", instant.strftime("%Y-%m-%dT%H:%M:%S"))
    page.click(".rewind-control button[type=submit]")
    page.wait_for_selector("#rewind-nodes")
    assert page.locator("#rewind-instant").get_attribute("datetime").startswith(instant.strftime("%Y-%m-%dT%H:%M:%S"))
    rows = page.locator("#rewind-nodes tbody tr")
    names = [rows.nth(i).get_attribute("data-node") for i in range(rows.count())]
    assert names == ["node-2", "node-10"]
    bound = {rows.nth(i).get_attribute("data-node"): (int(rows.nth(i).get_attribute("data-bound-cpu")),
                                                        int(rows.nth(i).get_attribute("data-bound-memory")))
             for i in range(rows.count()) if rows.nth(i).get_attribute("data-bound-cpu") != "0"}
    assert bound == audit_bound(instant) and sum(cpu for cpu, _ in bound.values()) == 2500  # a and b, not c
    assert "default/c" in page.locator("#bindings-around tr.after").all_inner_texts()[0]
    screenshot(page, "rewind-nodes")

    page.goto(asgi_server.url + "/queue/")
    page.fill("#rewind-at", instant.strftime("%Y-%m-%dT%H:%M:%S"))
    page.click(".rewind-control button[type=submit]")
    page.wait_for_selector("#q-unschedulable")
    assert page.locator("#q-unschedulable tbody tr").first.get_attribute("data-pod") == "default/huge"
    assert page.locator("#n-active").inner_text() == "0" and page.locator("#n-in_flight").inner_text() == "0"
    screenshot(page, "rewind-queue")

    page.click("#back-to-live")
    page.wait_for_selector("#q-active", state="attached")  # the live page (its websocket fills it)
    assert "at=" not in page.url and page.locator("h1").inner_text() == "Scheduling queue"
