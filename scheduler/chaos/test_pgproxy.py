"""The Postgres proxy plays an outage as clients of a restarting server see it: live connections
break, new ones are refused, and after the outage connecting works again (real Postgres)."""

import time

import psycopg
import pytest
from django.conf import settings

from scheduler.chaos.pgproxy import ProxyProcess


@pytest.fixture
def proxy():
    db = settings.DATABASES["default"]
    started = ProxyProcess(upstream=f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}", outage_seconds=1.5).start()
    yield started
    started.stop()


def connect(port):
    db = settings.DATABASES["default"]
    return psycopg.connect(host="127.0.0.1", port=port, user=db["USER"], dbname="postgres", connect_timeout=3,
                           autocommit=True)


def wait_for_event(proxy, name, timeout=20):
    deadline = time.monotonic() + timeout
    while not any(e["event"] == name for e in proxy.events):
        assert time.monotonic() < deadline, f"no {name} event"
        time.sleep(0.02)


def test_an_outage_breaks_live_connections_refuses_new_ones_then_accepts_again(proxy):
    live = connect(proxy.port)
    assert live.execute("SELECT 1").fetchone() == (1,)
    proxy.outage()
    wait_for_event(proxy, "down")
    with pytest.raises(psycopg.OperationalError):
        live.execute("SELECT 1")
    with pytest.raises(psycopg.OperationalError, match="refused"):
        connect(proxy.port)
    wait_for_event(proxy, "up")
    with connect(proxy.port) as again:
        assert again.execute("SELECT 2").fetchone() == (2,)
    down, up = proxy.events
    assert down["dropped"] == 1 and up["t"] - down["t"] >= 1.5
