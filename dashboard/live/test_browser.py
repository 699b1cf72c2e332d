"""In Chromium, against daphne and real Celery workers: a logged-in user watches a pod go from
FailedScheduling (Pending) to bound on the live overview, without reloading; the queue and nodes
pages fill from their sockets. Screenshots go to var/screenshots/ (not committed), as every browser test's."""

import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.db import connection, connections

from scheduler.testing.browser import screenshot
from scheduler.manifests.files import parse_documents
from scheduler.cluster.services import cluster_apply
from scheduler.controllers.node_lifecycle import node_set_ready
from scheduler.testing.workers import WorkerProcesses, purge_broker, worker_env

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BASE_DIR = Path(__file__).resolve().parent.parent.parent
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
WAIT_MS = 60_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def apply(*objs):
    """Apply from a plain thread: sync_playwright runs an event loop in this one, where Django refuses the ORM."""
    def run():
        try:
            cluster_apply(parse_documents(yaml.safe_dump_all(objs), "browser.yaml"))
        finally:
            connections.close_all()

    with ThreadPoolExecutor(1) as pool:
        pool.submit(run).result()


def in_thread(fn):
    """An ORM call from a plain thread (as apply)."""
    def run():
        try:
            return fn()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result()


def node(name, cpu):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"zone": "a"}},
            "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}}}


def pod(name, cpu):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "app:1", "resources": {"requests": {"cpu": cpu}}}]}}


@pytest.fixture
def stack(tmp_path):
    """daphne on a free port and one Celery worker + beat, all on the test database and this session's Redis keys."""
    db = connection.settings_dict
    env = worker_env(database_url=f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
                     redis_url=settings.REDIS_URL, queue_prefix=settings.SCHEDBOARD_QUEUE_PREFIX,
                     SCHEDBOARD_RECONCILE_MS="300")
    purge_broker(settings.REDIS_URL)
    port = _free_port()
    log = open(tmp_path / "daphne.log", "wb")
    web = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"],
                           cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    workers = WorkerProcesses(1, env, log_dir=str(tmp_path)).start()
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        workers.stop()
        web.terminate()
        web.wait(timeout=20)
        print((tmp_path / "daphne.log").read_text(errors="replace")[-3000:])
        print(workers.logs())


def test_a_logged_in_user_watches_a_pod_go_from_pending_to_bound_without_reloading(stack):
    from playwright.sync_api import expect, sync_playwright

    # Hashed as the server (production settings) checks it; the test settings only know a fast hasher.
    get_user_model().objects.create(username="watcher", password=PBKDF2PasswordHasher().encode("pw-watcher", "browser-salt"))
    apply(node("small-1", "2"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{stack}/accounts/login/")
        page.fill("input[name=username]", "watcher")
        page.fill("input[name=password]", "pw-watcher")
        page.click("button[type=submit], input[type=submit]")
        page.wait_for_url(f"{stack}/")
        status = page.locator("#live-status")
        expect(status).to_have_attribute("data-state", "live", timeout=WAIT_MS)
        page.evaluate("window.__notReloaded = true")

        apply(pod("big", "8"))  # more than any node has: FailedScheduling, Pending
        failed = page.locator("#failed tr", has_text="default/big")
        expect(failed.first).to_contain_text("Insufficient cpu", timeout=WAIT_MS)
        expect(page.locator("#bindings")).not_to_contain_text("default/big")
        screenshot(page, "live-overview-pending")

        apply(node("large-1", "16"))  # NodeAdd: the reconciler moves it back, and it binds there
        bound = page.locator("#bindings tr", has_text="default/big")
        expect(bound).to_contain_text("large-1", timeout=WAIT_MS)
        assert page.evaluate("window.__notReloaded") is True
        screenshot(page, "live-overview-bound")

        page.goto(f"{stack}/nodes/")
        expect(page.locator("#vbody")).to_contain_text("large-1", timeout=WAIT_MS)
        expect(page.locator("#node-count")).to_have_text("2 of 2 nodes")
        page.fill("#node-filter", "large")
        expect(page.locator("#node-count")).to_have_text("1 of 2 nodes")
        screenshot(page, "live-nodes")
        # A node going NotReady is marked (and tainted) without reloading, and the filter finds it by its status.
        in_thread(lambda: node_set_ready(name="small-1", status="False"))
        page.fill("#node-filter", "notready")
        row = page.locator("#vbody .vrow", has_text="small-1")
        expect(row.locator(".mark.status-notready")).to_have_text("NotReady", timeout=WAIT_MS)
        expect(row).to_contain_text("node.kubernetes.io/not-ready:NoExecute")
        expect(page.locator("#node-count")).to_have_text("1 of 2 nodes")
        screenshot(page, "live-nodes-notready")

        apply(pod("waits", "64"))
        page.goto(f"{stack}/queue/")
        # Backoff first, then unschedulable: either way it is listed with kube-scheduler's message.
        waiting = page.locator(".queues tr", has_text="default/waits")
        expect(waiting).to_contain_text("Insufficient cpu", timeout=WAIT_MS)
        screenshot(page, "live-queue")
        page.set_viewport_size({"width": 420, "height": 800})
        page.goto(f"{stack}/")
        expect(status).to_have_attribute("data-state", "live", timeout=WAIT_MS)
        # A node's state change is marked on the charts, and listed in words under them.
        in_thread(lambda: node_set_ready(name="small-1", status="True"))
        # (The first frame seeds the marks of the last two minutes: small-1's NotReady is listed too.)
        expect(page.locator("#chart-marks .mark-node", has_text="small-1 Ready")).to_have_count(1, timeout=WAIT_MS)
        screenshot(page, "live-overview-narrow")
        browser.close()


def test_a_live_page_goes_to_the_login_page_when_its_session_is_logged_out_in_another_tab(dashboard_user,
                                                                                          browser_context):
    from playwright.sync_api import expect

    from scheduler.testing.browser import login, server_env, start_asgi_server

    # A daphne of its own, re-checking sessions every half second (15 s by default).
    server = start_asgi_server(server_env(SCHEDBOARD_LIVE_SESSION_CHECK="0.5"))
    try:
        watching = browser_context.new_page()
        login(watching, server, dashboard_user)
        expect(watching.locator("#live-status")).to_have_attribute("data-state", "live", timeout=WAIT_MS)
        other_tab = browser_context.new_page()  # the same browser, so the same session cookie
        other_tab.goto(f"{server.url}/queue/")
        with other_tab.expect_navigation():
            other_tab.click("form.logout button")
        # The watching page's socket is closed with 4401: live.js sends it to log in, to come back after.
        watching.wait_for_url(f"{server.url}/accounts/login/?next=%2F", timeout=WAIT_MS)
        screenshot(watching, "logged-out-elsewhere")
    except Exception as exc:
        raise AssertionError(f"{exc}\n{server.logs()}") from None
    finally:
        server.stop()
