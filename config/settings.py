"""Django settings for schedboard, read from the environment.

With no DATABASE_URL and REDIS_URL the service runs embedded (SQLite, in-process loop);
with them it runs as separate processes on Postgres and Redis.
"""

import os
import sys
import warnings
from pathlib import Path

from .env import (env_bool, env_choice, env_duration, env_feature_gates, env_hosts, env_int, env_positive_float,
                  env_retention, env_str)

BASE_DIR = Path(__file__).resolve().parent.parent

DATABASE_URL = env_str("DATABASE_URL", "")
REDIS_URL = env_str("REDIS_URL", "")
EMBEDDED = not DATABASE_URL

# Debug by default only in the embedded demo: DEBUG also records every SQL statement, which
# costs a worker more than the statements themselves.
DEBUG = env_bool("DJANGO_DEBUG", EMBEDDED)
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "dev-insecure-key-change-me" if DEBUG else None)
ALLOWED_HOSTS = env_hosts("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]", debug=DEBUG)

# The commands that serve pages through Django's `runserver` (the embedded `run` calls it). Only they need
# daphne's app (its ASGI runserver) and the admin's registrations before the first request; every other
# process (the Celery workers, beat, `kube run`, pytest) skips importing twisted's reactor and the admin
# modules at start: about 0.3 s of CPU each, and a replica's start is what a backlog's first binding waits on.
# (daphne itself serves config.asgi without its app; config/urls.py registers the admin for any server.)
SERVES_PAGES_AT_START = sys.argv[1:2] in (["runserver"], ["run"])

INSTALLED_APPS = [
    # First, so `runserver` (and the embedded `run`) serve ASGI: websockets as well as pages.
    *(["daphne"] if SERVES_PAGES_AT_START else []),
    "django.contrib.admin" if SERVES_PAGES_AT_START else "django.contrib.admin.apps.SimpleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "scheduler",
    "dashboard",
    "config.apps.ComposeConfig",  # last: wires the layers once they are loaded
]

MIDDLEWARE = [
    # Before anything reads the Host: kubelet and Prometheus reach /metrics and the health checks by pod IP.
    "dashboard.machine_hosts.MachineEndpointsAnyHostMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files under daphne too (runserver serves them itself in the embedded demo).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Every page needs a login unless its view is marked @login_not_required (/metrics and the
    # health endpoints, as kube-scheduler serves them; the login page itself).
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.context_processors.navigation",
            ]
        },
    }
]
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

if DATABASE_URL:
    import dj_database_url

    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=600)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Send parameters to the server as they are instead of quoting them into the SQL in
        # Python: a batch write carries thousands of parameters.
        DATABASES["default"].setdefault("OPTIONS", {})["server_side_binding"] = True
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env_str("SCHEDBOARD_SQLITE_PATH", str(BASE_DIR / "db.sqlite3")),
            # The loop thread, the trickle thread and the web server's threads all write to this one
            # file. A deferred transaction (SQLite's default) that reads, then writes after another
            # connection committed, fails at once with "database is locked" (its snapshot is stale, so
            # the busy timeout does not apply); services and the loop do exactly that (read "for
            # update", then write). BEGIN IMMEDIATE takes the write lock first: writers queue instead.
            "OPTIONS": {"timeout": 30, "init_command": "PRAGMA journal_mode=WAL;", "transaction_mode": "IMMEDIATE"},
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve straight from the source folders, so daphne needs no collectstatic step first
# (STATIC_ROOT is then optional, and WhiteNoise's warning about it missing is noise).
WHITENOISE_USE_FINDERS = True
warnings.filterwarnings("ignore", message=r"No directory at: .*", module=r"django\.core\.handlers\.base")

# ---- login and transport security ------------------------------------------------------
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"
# Behind TLS (the default outside debug mode): cookies only over HTTPS, HTTP redirected, HSTS.
# DJANGO_HTTPS=false serves plain HTTP (a trusted network, or TLS not yet set up).
HTTPS = env_bool("DJANGO_HTTPS", not DEBUG)
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS
# Probes and scrapers speak plain HTTP to a pod, as they do to kube-scheduler.
SECURE_REDIRECT_EXEMPT = [r"^(metrics|healthz|livez|readyz)(/|$)"]
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31536000 if HTTPS else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", True)
# A TLS-terminating proxy in front: the header it sets, e.g. X-Forwarded-Proto (its value must be https).
_PROXY_SSL_HEADER = env_str("DJANGO_SECURE_PROXY_SSL_HEADER", "")
if _PROXY_SSL_HEADER:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _PROXY_SSL_HEADER.upper().replace("-", "_"), "https")
CSRF_TRUSTED_ORIGINS = [o for o in env_str("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o]
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"

# ---- scheduler -------------------------------------------------------------------------
# Pods a worker pops per scheduling task. Each batch pays a fixed cost (its snapshot refresh, about twenty statements,
# one transaction, its bind task): 512 against 256, `bench --json` SchedulingBasic 5,000 nodes end to end, paired on a
# quiet 2-core machine: 1,475 -> 1,672 and 1,572 -> 1,817 pods/s; 1,024 was slower again (1,520). At a steady 500 pods/s
# batches are small anyway (SLI p99 172 ms with 512, 239 ms with 256).
SCHEDBOARD_BATCH_SIZE = env_int("SCHEDBOARD_BATCH_SIZE", 512, minimum=1)
SCHEDBOARD_ASSUME_TTL_SECONDS = env_int("SCHEDBOARD_ASSUME_TTL_SECONDS", 30, minimum=1)
# A reservation whose binding is in flight is left alone by the TTL above; if its binder died and the
# job was lost, it is freed after this. A binder never starts an API call later than half of it after
# marking, so no binding can still be on its way when the room is given to another pod.
SCHEDBOARD_BINDING_TIMEOUT_SECONDS = env_int("SCHEDBOARD_BINDING_TIMEOUT_SECONDS", 300, minimum=2)
# 0 or unset: each worker draws a seed of its own (recorded with every attempt, so a replay still follows it).
SCHEDBOARD_SEED = env_int("SCHEDBOARD_SEED", 0, minimum=0, maximum=2**63 - 1) or None
# What an Attempt keeps of its decision for the attempt page (Attempt.trace): "failures" the filter
# verdicts of attempts that found no node; "all" also every attempt's verdicts and every scored
# candidate (hundreds of rows per pod on a large cluster); "off" nothing beyond the reason counts
# and the top candidates.
SCHEDBOARD_TRACE = env_choice("SCHEDBOARD_TRACE", "failures", ("failures", "all", "off"))
# kube-scheduler's feature gates we model, with upstream master's defaults ("Name=false,..." as --feature-gates).
# OpportunisticBatching: pods of one scheduling signature share their filter and score work (engine/batching.py;
# the placements are the same either way). SchedulerPopFromBackoffQ: a worker finding activeQ empty pops
# backoffQ's head, and backoff expiries are aligned to 1 s windows (engine/queue.py).
SCHEDBOARD_FEATURE_GATES = env_feature_gates("SCHEDBOARD_FEATURE_GATES",
                                             {"OpportunisticBatching": True, "SchedulerPopFromBackoffQ": True})
# How long each pod's queue timeline (the pod page's) is kept after its last queue move; 0 keeps none.
SCHEDBOARD_QUEUE_TIMELINE_TTL = (0.0 if os.environ.get("SCHEDBOARD_QUEUE_TIMELINE_TTL", "").strip() == "0"
                                 else env_duration("SCHEDBOARD_QUEUE_TIMELINE_TTL", 900.0))

# ---- metrics ---------------------------------------------------------------------------
# prometheus_client's multiprocess mode: every process (web, workers) writes its counters and
# histograms here and /metrics merges them. Set in the environment before prometheus_client is
# imported (it picks its value class at import); shared by every process of one deployment.
PROMETHEUS_MULTIPROC_DIR = env_str("PROMETHEUS_MULTIPROC_DIR", str(BASE_DIR / "var" / "prometheus"))
os.environ["PROMETHEUS_MULTIPROC_DIR"] = PROMETHEUS_MULTIPROC_DIR
Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)
# A scrape endpoint of their own for the processes that serve no pages (a Celery worker, beat, `kube run`),
# where their directory is not the web's (a pod each in Kubernetes): /metrics on this port (unset: off).
SCHEDBOARD_METRICS_PORT = env_int("SCHEDBOARD_METRICS_PORT", 0, minimum=0, maximum=65535) or None
SCHEDBOARD_METRICS_BIND_ADDRESS = env_str("SCHEDBOARD_METRICS_BIND_ADDRESS", "0.0.0.0")

# ---- celery ----------------------------------------------------------------------------
CELERY_BROKER_URL = REDIS_URL or "memory://"
# Embedded mode runs tasks inline; tests that are not about workers do too (SCHEDBOARD_EAGER=1).
CELERY_TASK_ALWAYS_EAGER = env_bool("SCHEDBOARD_EAGER", not REDIS_URL)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fixup closes every database connection before and after every task unless this is set:
# a connection per task is a new Postgres backend each time (a fork, authentication, cold catalog caches)
# and loses psycopg's prepared statements. Connections are kept; Django's CONN_MAX_AGE still recycles them,
# and config/celery.py closes one an error left unusable, before each task, as Django does per request.
CELERY_DB_REUSE_MAX = 1_000_000_000
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The queue every process sends tasks to and workers read: test sessions sharing one Redis name their own.
CELERY_TASK_DEFAULT_QUEUE = env_str("SCHEDBOARD_CELERY_QUEUE", "celery")
# Preemption's victims (scheduler.preempt) go through a queue of their own, named after the default one, that
# every worker reads first: as upstream's goroutine, they never wait behind the schedule, bind and beat tasks
# queued before them (at most behind the one task each worker is running). A worker started without -Q
# (`celery -A config worker`) reads both; one started with -Q must name both.
SCHEDBOARD_PREEMPT_QUEUE = f"{CELERY_TASK_DEFAULT_QUEUE}.preempt"
CELERY_TASK_QUEUES = {SCHEDBOARD_PREEMPT_QUEUE: {}, CELERY_TASK_DEFAULT_QUEUE: {}}
CELERY_TASK_ROUTES = {"scheduler.preempt": {"queue": SCHEDBOARD_PREEMPT_QUEUE}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Each line stamped to the millisecond, as klog's: a replica's start-up and its bindings read as a timeline.
    "formatters": {"stamped": {"format": "%(asctime)s.%(msecs)03d %(levelname).1s %(name)s: %(message)s",
                               "datefmt": "%Y-%m-%d %H:%M:%S"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "stamped"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # One line per task is noise at a thousand bindings a second.
    "loggers": {"celery.app.trace": {"level": "WARNING"}},
}
SCHEDBOARD_QUEUE_PREFIX = env_str("SCHEDBOARD_QUEUE_PREFIX", "schedboard:q")
SCHEDBOARD_PARALLELISM = env_int("SCHEDBOARD_PARALLELISM", 2, minimum=1)
SCHEDBOARD_CONFIG = env_str("SCHEDBOARD_CONFIG", "")
SCHEDBOARD_INFLIGHT_LEASE_SECONDS = env_int("SCHEDBOARD_INFLIGHT_LEASE_SECONDS", 60, minimum=1)
SCHEDBOARD_RECONCILE_SECONDS = float(env_int("SCHEDBOARD_RECONCILE_MS", 1000, minimum=50)) / 1000.0
# The reconciler's scan for pending pods the queue lost reads every pending pod and every queue member
# (~120 ms at 20,000 pending pods, 90 % of a reconcile): at most once this often across all workers, and at
# once after Redis lost the queue (it loses the period's mark with it).
SCHEDBOARD_REQUEUE_LOST_SECONDS = max(SCHEDBOARD_RECONCILE_SECONDS,
                                      float(env_int("SCHEDBOARD_REQUEUE_LOST_SECONDS", 10, minimum=0)))
# ---- retention (scheduler/retention.py) --------------------------------------------------
# How long each kind of row is kept ("7d", "1h", "90m"; "0" or "forever": never deleted), and how the
# beat task deletes: this many rows per statement (each its own short transaction), for at most this
# long per run, every period.
# At least an hour: an attempt (and a binding) must outlive any binding still on its way for it.
SCHEDBOARD_RETAIN_ATTEMPTS = env_retention("SCHEDBOARD_RETAIN_ATTEMPTS", 7 * 86400.0, minimum=3600.0)
# As the API server's --event-ttl (1h); an event seen again is kept from its last occurrence.
SCHEDBOARD_RETAIN_EVENTS = env_retention("SCHEDBOARD_RETAIN_EVENTS", 3600.0)
# Every reconciler reads cluster events by id (loop.reconcile), once a reconcile period: they must outlive
# that period and the longest a pod waits in the unschedulable queue without them
# (podMaxInUnschedulablePodsDuration, 5m), with a minute of slack (scheduler/retention.py says why).
SCHEDBOARD_RETAIN_CLUSTER_EVENTS = env_retention("SCHEDBOARD_RETAIN_CLUSTER_EVENTS", 600.0,
                                                 minimum=300.0 + 60.0 + SCHEDBOARD_RECONCILE_SECONDS)
# The audit: kept forever unless an operator says otherwise.
SCHEDBOARD_RETAIN_BINDINGS = env_retention("SCHEDBOARD_RETAIN_BINDINGS", None, minimum=3600.0)
SCHEDBOARD_RETENTION_PERIOD = env_duration("SCHEDBOARD_RETENTION_PERIOD", 60.0)
SCHEDBOARD_RETENTION_BATCH = env_int("SCHEDBOARD_RETENTION_BATCH", 5000, minimum=1)
SCHEDBOARD_RETENTION_BUDGET = env_duration("SCHEDBOARD_RETENTION_BUDGET", 10.0)

# The recount recomputes every node's usage from its pods and repairs drift (scheduler/state/reservations.py).
SCHEDBOARD_RECOUNT_SECONDS = env_int("SCHEDBOARD_RECOUNT_SECONDS", 60, minimum=1)

CELERY_BEAT_SCHEDULE = {
    "reconcile": {"task": "scheduler.reconcile", "schedule": SCHEDBOARD_RECONCILE_SECONDS},
    "retention": {"task": "scheduler.retention", "schedule": SCHEDBOARD_RETENTION_PERIOD},
    "recount": {"task": "scheduler.recount", "schedule": float(SCHEDBOARD_RECOUNT_SECONDS)},
}
# On Redis, a worker polls its queues in the order of CELERY_TASK_QUEUES every time ("priority"; kombu's default
# rotates them, so a preempt task could wait behind one task of the other queue more).
CELERY_BROKER_TRANSPORT_OPTIONS = {"polling_interval": 0.01} if not REDIS_URL else {"queue_order_strategy": "priority"}

# ---- live dashboard --------------------------------------------------------------------
# Workers publish small event batches to a channel layer group; each page's View (one per page and daphne
# process, for all its sockets) coalesces them into at most SCHEDBOARD_LIVE_FPS frames a second. channels-redis
# when Redis is configured (so any number of workers and daphne replicas share it), in memory only in the
# embedded mode.
SCHEDBOARD_LIVE_PREFIX = env_str("SCHEDBOARD_LIVE_PREFIX", "schedboard:live")
SCHEDBOARD_LIVE_FPS = env_int("SCHEDBOARD_LIVE_FPS", 4, minimum=1)
# How often a live socket asks whether its session still logs its user in (closed with 4401 once not).
SCHEDBOARD_LIVE_SESSION_CHECK = env_duration("SCHEDBOARD_LIVE_SESSION_CHECK", 15.0)
if REDIS_URL:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {
        # redis-py 8 reads with a 5 s socket timeout by default, the same as channels-redis's blocking
        # receive (BZPOPMIN 5 s): a quiet socket would die with "Timeout reading". Give the read room.
        "hosts": [{"address": REDIS_URL, "socket_timeout": 30}], "prefix": SCHEDBOARD_LIVE_PREFIX,
        # A viewer that falls this far behind loses messages; the sequence gap makes its next frame a snapshot.
        "capacity": 200, "expiry": 10}}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# ---- backend: where pods and nodes come from and bindings go ---------------------------
SCHEDBOARD_BACKEND = env_choice("SCHEDBOARD_BACKEND", "simulated", ("simulated", "kubernetes"))
# The cluster: KUBECONFIG's current context, else the in-cluster service account.
KUBECONFIG = env_str("KUBECONFIG", "")
# The namespace of our Lease ("" = the pod's own namespace in a cluster, else "default").
SCHEDBOARD_KUBE_NAMESPACE = env_str("SCHEDBOARD_KUBE_NAMESPACE", "")
SCHEDBOARD_LEASE_NAME = env_str("SCHEDBOARD_LEASE_NAME", "schedboard")
# The client's own rate limit on requests to the API server, as kube-scheduler's clientConnection.qps and
# .burst (defaults 50 and 100): a token bucket of `burst` requests refilled at `qps` a second per client
# (the replica has three, as kube-scheduler: the scheduler's requests, the Lease's, the events').
SCHEDBOARD_KUBE_QPS = env_positive_float("SCHEDBOARD_KUBE_QPS", 50.0)
SCHEDBOARD_KUBE_BURST = env_int("SCHEDBOARD_KUBE_BURST", 100, minimum=1)
# kube-scheduler's leader election defaults (--leader-elect-lease-duration etc.).
SCHEDBOARD_LEASE_DURATION = env_duration("SCHEDBOARD_LEASE_DURATION", 15.0)
SCHEDBOARD_RENEW_DEADLINE = env_duration("SCHEDBOARD_RENEW_DEADLINE", 10.0)
SCHEDBOARD_RETRY_PERIOD = env_duration("SCHEDBOARD_RETRY_PERIOD", 2.0)

# ---- the control plane around the scheduler (simulated backend; scheduler/controllers/) ----------
# A real cluster runs its own kube-controller-manager: these beat tasks run only on the simulated one.
# Periods and PodGC's quarantine as kube-controller-manager's defaults (gcCheckPeriod 20 s, quarantineTime
# 40 s, --node-monitor-period 5 s); the workload controllers are watch-driven upstream, polled here.
SCHEDBOARD_PODGC_PERIOD = env_duration("SCHEDBOARD_PODGC_PERIOD", 20.0)
SCHEDBOARD_PODGC_QUARANTINE_SECONDS = env_duration("SCHEDBOARD_PODGC_QUARANTINE", 40.0)
SCHEDBOARD_NODE_MONITOR_PERIOD = env_duration("SCHEDBOARD_NODE_MONITOR_PERIOD", 5.0)
SCHEDBOARD_WORKLOAD_SYNC_PERIOD = env_duration("SCHEDBOARD_WORKLOAD_SYNC_PERIOD", 1.0)
if SCHEDBOARD_BACKEND == "simulated":
    CELERY_BEAT_SCHEDULE.update({
        "podgc": {"task": "scheduler.podgc", "schedule": SCHEDBOARD_PODGC_PERIOD},
        "node-lifecycle": {"task": "scheduler.node_lifecycle", "schedule": SCHEDBOARD_NODE_MONITOR_PERIOD},
        "workloads": {"task": "scheduler.workloads", "schedule": SCHEDBOARD_WORKLOAD_SYNC_PERIOD},
    })
