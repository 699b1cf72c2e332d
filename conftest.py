"""Shared fixtures: a clean Redis queue per test, and the process-wide singletons reset."""

import os

import pytest
import redis
from django.conf import settings
from hypothesis import settings as hypothesis_settings

# Fixtures for browser tests against the real stack (daphne, workers, Chromium), for every app.
pytest_plugins = ["scheduler.testing.browser", "scheduler.testing.fixtures"]

# CI explores the same examples every run (a red build is then reproducible); local runs explore new ones.
hypothesis_settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI a skipped test is a failed one: a test that skips there does not run, so .ci/run installs
    every tool a test needs, and a missing one must show up red, not as a quiet "s"."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where every test must run: {reason}"


@pytest.fixture(autouse=True)
def _fresh_queue():
    """Every test starts with an empty shared queue and a fresh in-process worker."""
    from scheduler import loop
    from scheduler.queue import queues

    if settings.REDIS_URL:
        r = redis.Redis.from_url(settings.REDIS_URL)
        keys = list(r.scan_iter(match=settings.SCHEDBOARD_QUEUE_PREFIX + "*", count=1000))
        if keys:
            r.delete(*keys)
    queues.reset_queue()
    loop._worker = None
    loop._last_cluster_event_id = None
    yield
    queues.reset_queue()
    loop._worker = None
