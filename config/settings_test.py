"""Settings for the test suite: real Postgres and Redis (defaults on 127.0.0.1), tasks inline
unless a test starts real worker processes (which set SCHEDBOARD_EAGER=0 for themselves)."""

import os
import tempfile

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/schedboard")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("SCHEDBOARD_EAGER", "1")
os.environ.setdefault("SCHEDBOARD_QUEUE_PREFIX", "schedboard-test:q")
os.environ.setdefault("DJANGO_SECRET_KEY", "test-only-secret-key")
# The live channel layer's keys, unique to this session (the servers and workers it starts inherit it).
os.environ.setdefault("SCHEDBOARD_LIVE_PREFIX", f"{os.environ['SCHEDBOARD_QUEUE_PREFIX']}:live-{os.getpid()}")
# The test client and the browser tests' server speak plain HTTP (the deploy check turns it on).
os.environ.setdefault("DJANGO_HTTPS", "0")
# The kubernetes client's rate limit (SCHEDBOARD_KUBE_QPS/BURST, 50/100 as kube-scheduler's by default)
# raised, as scheduler_perf raises kube-scheduler's: tests measure behaviour, not the throttle. The replicas
# and workers the tests start inherit it; the rate limiter's own tests pass their own figures.
os.environ.setdefault("SCHEDBOARD_KUBE_QPS", "5000")
os.environ.setdefault("SCHEDBOARD_KUBE_BURST", "5000")
# Metrics files of this test session only (worker processes it starts inherit the variable).
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="schedboard-test-metrics-"))

from .settings import *  # noqa: E402,F403
from .settings import DATABASES  # noqa: E402  (named: it is changed below)

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests

# Separate names let two test sessions share one Postgres server: the test database is named after
# DATABASE_URL's (test_schedboard by default), so sessions with their own DATABASE_URL never drop each
# other's; SCHEDBOARD_TEST_DB names it outright.
os.environ.setdefault("SCHEDBOARD_TEST_DB", f"test_{DATABASES['default']['NAME']}")
DATABASES["default"]["TEST"] = {"NAME": os.environ["SCHEDBOARD_TEST_DB"]}
