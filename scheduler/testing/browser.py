"""Browser tests against the real stack: the ASGI app under daphne in a subprocess on the pytest
database, real Celery worker processes, and Debian's Chromium driven by Playwright.

A pytest plugin (registered in the root conftest.py), so any app's tests can use its fixtures:

    pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

    def test_it(asgi_server, celery_workers, dashboard_user, page):
        celery_workers()                      # 1 worker + beat, stopped after the test
        login(page, asgi_server, dashboard_user)
        page.goto(asgi_server.url + "/bindings/")
        screenshot(page, "audit")             # var/screenshots/<test>-audit.png

The data a test creates must be committed (transaction=True) for the server process to see it.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from .workers import celery_queue, database_url

BASE_DIR = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("SCHEDBOARD_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
SCREENSHOTS = Path(os.environ.get("SCHEDBOARD_SCREENSHOTS", BASE_DIR / "var" / "screenshots"))
VIEWPORT = {"width": 1280, "height": 800}
NARROW_VIEWPORT = {"width": 390, "height": 844}
START_SECONDS = 60  # how long daphne may take to answer /healthz on a busy machine
PASSWORD = "browser-test-password"


def server_env(**extra: str) -> dict:
    """The environment of a production-like server process on this test session's database and queue."""
    from django.conf import settings

    env = dict(os.environ)
    env.update({
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "SCHEDBOARD_QUEUE_PREFIX": settings.SCHEDBOARD_QUEUE_PREFIX,
        "SCHEDBOARD_EAGER": "0",
        "SCHEDBOARD_CELERY_QUEUE": celery_queue(),
        "DJANGO_DEBUG": "0",
        "DJANGO_HTTPS": "0",  # plain HTTP on loopback
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_SECRET_KEY": "browser-tests-" + os.urandom(16).hex(),
        "PYTHONUNBUFFERED": "1",
    })
    env.update(extra)
    return env


@dataclass
class AsgiServer:
    url: str
    process: subprocess.Popen
    log_path: Path

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def start_asgi_server(env: dict | None = None) -> AsgiServer:
    """daphne serving config.asgi on a free loopback port (bound here and handed over, so no race for it)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    log_path = Path(tempfile.mkdtemp(prefix="schedboard-daphne-")) / "daphne.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "--fd", str(sock.fileno()), "-v", "1", "config.asgi:application"],
            cwd=BASE_DIR, env=env or server_env(), stdout=log, stderr=subprocess.STDOUT, pass_fds=[sock.fileno()],
            start_new_session=True)
    sock.close()  # the child holds its own copy
    server = AsgiServer(f"http://127.0.0.1:{port}", process, log_path)
    deadline = time.monotonic() + START_SECONDS
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"daphne exited with {process.returncode}:\n{server.logs()}")
        try:
            with urllib.request.urlopen(server.url + "/healthz", timeout=2) as answer:
                if answer.status == 200:
                    return server
        except OSError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"daphne did not answer /healthz within {START_SECONDS}s:\n{server.logs()}")
        time.sleep(0.1)


def in_thread(fn: Callable, *args, **kwargs):
    """Run fn in another thread and return its result: for code that must not run where Playwright's
    event loop is registered (async_to_sync, channels' layers)."""
    from django.db import connection

    def call():
        try:
            return fn(*args, **kwargs)
        finally:
            connection.close()  # the thread's own connection

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result()


def screenshot(page, name: str, *, full_page: bool = True) -> Path:
    """Save a screenshot as a test artifact: var/screenshots/<test>-<name>.png (git-ignored)."""
    test = re.sub(r"[^\w.-]+", "_", os.environ.get("PYTEST_CURRENT_TEST", "test").split(" ")[0].split("::")[-1])
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{test}-{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def login(page, server: AsgiServer, user, password: str = PASSWORD, *, next_path: str = "/") -> None:
    """Log in through the login form, as a person would."""
    page.goto(f"{server.url}/accounts/login/?next={next_path}")
    page.fill("input[name=username]", user.get_username())
    page.fill("input[name=password]", password)
    with page.expect_navigation():
        page.click("button[type=submit]")


# ---- fixtures --------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def asgi_server(django_db_setup, django_db_blocker):
    """The ASGI app under daphne, one process for the session, on the test database."""
    with django_db_blocker.unblock():
        server = start_asgi_server()
    yield server
    server.stop()
    with django_db_blocker.unblock():
        _wait_for_other_sessions_to_end()


def _wait_for_other_sessions_to_end(timeout: float = 15.0) -> None:
    """Postgres ends a stopped process's backend a moment later; the test database can only be dropped after."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return

    def others() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
            return cursor.fetchone()[0]

    deadline = time.monotonic() + timeout
    while others() and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.fixture
def celery_workers(transactional_db, workers):
    """Start real worker processes (+ beat) on the test database on this session's own Celery queue:
    `celery_workers(n=1, **env)`."""
    import redis
    from django.conf import settings

    redis.Redis.from_url(settings.REDIS_URL).delete(celery_queue())  # tasks an earlier session left

    def start(n: int = 1, **env: str):
        env.setdefault("SCHEDBOARD_RECONCILE_MS", "300")
        env.setdefault("SCHEDBOARD_CELERY_QUEUE", celery_queue())
        return workers(n, **env)

    return start


@pytest.fixture
def dashboard_user(transactional_db, django_user_model):
    """A staff user with a known password (PASSWORD), hashed so the server's own settings can check it
    (the test settings' fast MD5 hasher is not among production's; few PBKDF2 rounds keep logins quick)."""
    from django.contrib.auth.hashers import PBKDF2PasswordHasher
    from django.utils.crypto import get_random_string

    user = django_user_model(username="viewer", is_staff=True)
    user.password = PBKDF2PasswordHasher().encode(PASSWORD, get_random_string(12), iterations=1000)
    user.save()
    return user


@pytest.fixture
def browser_context(monkeypatch):
    """A fresh Chromium profile at 1280x800 (headless), closed after the test."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found: apt-get install chromium (or set SCHEDBOARD_CHROMIUM)")
    # Playwright's sync API keeps its event loop registered as running on this thread; the test's own
    # ORM calls stay plain blocking calls between browser steps, so Django's async-safety guard is off
    # for the test's duration. (async_to_sync still refuses: use in_thread() for it.)
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
        context.set_default_timeout(30_000)
        try:
            yield context
        finally:
            # Queries made while Playwright's loop is registered went through connections of that
            # context (asgiref's Local follows it): close them here, in the same context.
            from django.db import connections

            connections.close_all()
            context.close()
            browser.close()


@pytest.fixture
def page(browser_context):
    return browser_context.new_page()
