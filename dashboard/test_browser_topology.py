"""The nodes page grouped by a topology key in a real browser against the real stack: the heat map in one
block per zone, each zone listed with its counts and linked to its domain page."""

import pytest

from scheduler.testing.browser import in_thread, login, screenshot
from scheduler.testing.loop import apply
from scheduler.testing.topology import ZONE, node, pod

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_nodes_heat_map_groups_by_zone_and_each_zone_links_to_its_nodes_and_pods(asgi_server, dashboard_user, page):
    in_thread(apply, node("a0", "a"), node("a1", "a"), node("b0", "b"), node("c0", "c"),
              {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"},
               "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}})
    in_thread(apply, pod("web-0", {"app": "web"}, node_name="a0"), pod("web-1", {"app": "web"}, node_name="a1"),
              pod("web-2", {"app": "web"}, node_name="b0"))

    login(page, asgi_server, dashboard_user, next_path="/nodes/?group=" + ZONE)
    assert page.locator("#node-group").input_value() == ZONE
    page.wait_for_selector("#heatmap[data-groups='4']")
    domains = page.locator("#node-groups li")
    assert [domains.nth(i).get_attribute("data-domain") for i in range(4)] == ["a", "b", "c", ""]
    assert domains.nth(0).inner_text() == f"{ZONE}=a 2 nodes, 2 pods, CPU 1 %"
    assert "in no domain" in domains.nth(3).inner_text()
    assert page.locator("#node-count").inner_text() == "5 of 5 nodes in 3 domains"
    screenshot(page, "nodes-grouped-by-zone")

    # Ungrouped and back, kept in the address.
    page.select_option("#node-group", "")
    page.wait_for_selector("#heatmap[data-groups='0']")
    assert page.locator("#node-groups").is_hidden() and "group=" not in page.url
    page.select_option("#node-group", ZONE)
    page.wait_for_selector("#heatmap[data-groups='4']")

    with page.expect_navigation():
        domains.nth(0).locator("a").click()
    assert page.locator("h1").inner_text() == f"Domain {ZONE}=a"
    assert page.locator("#domain-nodes tbody td:first-child").all_inner_texts() == ["a0", "a1"]
    assert page.locator("#domain-pods tbody a").all_inner_texts() == ["default/web-0", "default/web-1"]
    screenshot(page, "domain-zone-a")
