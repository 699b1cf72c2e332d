"""Prometheus endpoints, for tests: a free loopback port, a scrape, one sample read from the text, and what
every process of this test session counted."""

import os
import socket
import urllib.error
import urllib.request

from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            assert response.status == 200
            return response.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return None


def sample(text: str | None, name: str, **labels) -> float | None:
    for family in text_string_to_metric_families(text or ""):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    return None


def counters() -> CollectorRegistry:
    """What every process of this session counted (their multiprocess files), to read a sample from."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=os.environ["PROMETHEUS_MULTIPROC_DIR"])
    return registry
