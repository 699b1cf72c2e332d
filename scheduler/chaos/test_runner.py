"""The run's own guard rails: it flushes only a Redis database that holds nothing but its own keys,
and its workers reach Postgres through the proxy's port."""

import pytest
import redis
from django.conf import settings

from scheduler.chaos.runner import redis_check_own_database, with_port


def test_the_run_refuses_a_redis_database_that_holds_keys_of_anything_else():
    r = redis.Redis.from_url(settings.REDIS_URL)
    prefix = "schedboard-chaos-run:test:q"
    r.set(f"{settings.SCHEDBOARD_QUEUE_PREFIX}:chaos-guard-test", "1")
    r.set(f"{prefix}:x", "1")
    try:
        redis_check_own_database(r, prefix)  # only this configuration's keys: fine
        r.set("someone-else:chaos-guard-test", "1")
        with pytest.raises(RuntimeError, match="someone-else:chaos-guard-test.*give it a database of its own"):
            redis_check_own_database(r, prefix)
    finally:
        r.delete("someone-else:chaos-guard-test", f"{settings.SCHEDBOARD_QUEUE_PREFIX}:chaos-guard-test", f"{prefix}:x")


@pytest.mark.parametrize("url, port, want", [
    ("postgres://postgres@127.0.0.1:5432/db", 6000, "postgres://postgres@127.0.0.1:6000/db"),
    ("postgres://u:p@localhost/db", 6000, "postgres://u:p@localhost:6000/db"),
    ("postgresql://127.0.0.1:5432/db?sslmode=disable", 7, "postgresql://127.0.0.1:7/db?sslmode=disable"),
])
def test_workers_are_pointed_at_the_proxy_port(url, port, want):
    assert with_port(url, port) == want
