"""/replays/ in a real browser against the real stack: upload a trace and two configurations, watch the
task's progress, then read A vs B and its three plots."""

import pytest

from scheduler.testing.browser import login, screenshot
from scheduler.testing.replay import FIT, spread_trace_text

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_replay_runs_on_a_worker_and_its_page_shows_packing_against_spreading(asgi_server, celery_workers,
                                                                              dashboard_user, page, tmp_path):
    celery_workers(1)
    trace = tmp_path / "demo.jsonl"
    trace.write_text(spread_trace_text())
    most, least = tmp_path / "most.yaml", tmp_path / "least.yaml"
    most.write_text(FIT.format(strategy="MostAllocated"))
    least.write_text(FIT.format(strategy="LeastAllocated"))

    login(page, asgi_server, dashboard_user, next_path="/replays/")
    assert page.locator("h1").first.inner_text().strip() == "Replays"
    page.set_input_files("#id_trace", str(trace))
    page.set_input_files("#id_file_a", str(most))
    page.set_input_files("#id_file_b", str(least))
    screenshot(page, "replays-form")
    page.click("#replay-form button[type=submit]")

    # The run's page polls its task and reloads when it is done (a real worker runs it).
    page.wait_for_selector("#replay-summary", timeout=60_000)
    rows = page.locator("#replay-summary tbody tr")
    assert rows.count() == 2
    std = {rows.nth(i).get_attribute("data-config"): float(rows.nth(i).locator(".cpu-std").inner_text())
           for i in range(2)}
    assert std["most.yaml"] > std["least.yaml"]
    for chart in ("#chart-nodes-cpu", "#chart-pending", "#chart-imbalance"):
        page.wait_for_selector(f"{chart}[data-ready='1'] canvas")
    assert page.locator("#replay-differ tbody tr").count() > 0
    screenshot(page, "replay-a-vs-b")

    # A differing placement's B node opens both attempts side by side, B's in view.
    first = page.locator("#replay-differ tbody tr").first
    pod_key = first.locator("a[data-pod]").inner_text()
    a_node, b_node = (first.locator("a.replay-attempt").nth(i).inner_text() for i in range(2))
    assert a_node != b_node
    first.locator("a.replay-attempt").nth(1).click()
    page.wait_for_selector("#replay-attempts")
    assert page.locator("h1").inner_text().startswith(pod_key)
    assert page.url.endswith("#config-1")
    assert page.locator("#config-0 .node").inner_text() == a_node and page.locator("#config-1 .node").inner_text() == b_node
    assert page.locator("#config-1 table.top-scores tbody tr").first.locator("td").first.inner_text() == b_node
    screenshot(page, "replay-differing-pod")

    page.goto(asgi_server.url + "/replays/")
    assert "most.yaml vs least.yaml" in page.locator("#replays").inner_text()
