"""Shared fixtures: a clean Redis queue per test, and the process-wide singletons reset."""

import os

import pytest
import redis
from django.conf import settings
from hypothesis import settings as hypothesis_settings

# Fixtures for browser tests against the real stack (daphne, workers, Chromium), for every app.
pytest_plugins = ["dashboard.browser_testing"]

# CI explores the same examples every run (a red build is then reproducible); local runs explore new ones.
hypothesis_settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _fresh_queue():
    """Every test starts with an empty shared queue and a fresh in-process worker."""
    from scheduler import loop, queues

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
