"""The API client from KUBECONFIG or the in-cluster service account, and calls retried like client-go's.

Every call goes out with `_preload_content=False` and its reply is read as plain JSON: the 37.x
client's models fail on some of the server's replies (a `Status` from pods/binding), and plain
dicts are all the mirror needs.
"""

from __future__ import annotations

import json
import logging
import random
import time
import warnings
from dataclasses import dataclass

log = logging.getLogger(__name__)

# Worth another try: throttled, the server's own trouble, or no answer at all (status 0).
RETRYABLE_STATUS = frozenset({0, 408, 429, 500, 502, 503, 504})
# After these a write may or may not have happened on the server: no answer, a timeout, the server's own
# trouble. (429 is answered before the request is handled; other 4xx are definite refusals.)
AMBIGUOUS_STATUS = frozenset({0, 408, 500, 502, 503, 504})
DEADLINE_EXCEEDED = "DeadlineExceeded"
SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


class ApiError(Exception):
    """A call the API server refused (or never answered after every retry)."""

    def __init__(self, status: int, reason: str, message: str, body: dict | None = None):
        self.status = status
        self.reason = reason
        self.body = body or {}
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")


def api_client(kubeconfig: str | None = None):
    """A `kubernetes.client.ApiClient`: KUBECONFIG's current context, else the in-cluster config."""
    from kubernetes import client, config
    from django.conf import settings

    path = kubeconfig if kubeconfig is not None else settings.KUBECONFIG
    if path:
        api = config.new_client_from_config(config_file=path, persist_config=False)
    else:
        configuration = client.Configuration()
        config.load_incluster_config(client_configuration=configuration)
        api = client.ApiClient(configuration)
    _warn_once_if_unverified(api.configuration)
    return api


_unverified_warned = False


def _warn_once_if_unverified(configuration) -> None:
    """With `insecure-skip-tls-verify`, say so once at start instead of letting urllib3 warn on every request.

    urllib3 repeats an InsecureRequestWarning for each request it sends unverified: at a thousand pods
    a second that is thousands of identical lines, which bury everything else in the log.
    """
    global _unverified_warned
    if configuration.verify_ssl:
        return
    from urllib3.exceptions import InsecureRequestWarning

    warnings.filterwarnings("ignore", category=InsecureRequestWarning)
    if not _unverified_warned:
        _unverified_warned = True
        log.warning("TLS verification of the API server %s is off (insecure-skip-tls-verify in the kubeconfig): "
                    "the connection is encrypted, but the server is not authenticated", configuration.host)


def own_namespace() -> str:
    """Our namespace: SCHEDBOARD_KUBE_NAMESPACE, else the service account's, else "default"."""
    from django.conf import settings

    if settings.SCHEDBOARD_KUBE_NAMESPACE:
        return settings.SCHEDBOARD_KUBE_NAMESPACE
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE) as f:
            return f.read().strip() or "default"
    except OSError:
        return "default"


@dataclass
class Backoff:
    """Exponential backoff with jitter, as client-go's wait.Backoff: initial, doubling, capped."""

    initial: float = 0.2
    cap: float = 5.0
    attempts: int = 6

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(self.cap, retry_after)
        base = min(self.cap, self.initial * (2 ** attempt))
        return base * (1.0 + 0.25 * random.random())


def _error_from(exc) -> ApiError:
    from kubernetes.client.exceptions import ApiException

    if isinstance(exc, ApiException):
        body = {}
        try:
            body = json.loads(exc.body) if exc.body else {}
        except (TypeError, ValueError):
            body = {}
        message = body.get("message") if isinstance(body, dict) else ""
        return ApiError(int(exc.status or 0), str(exc.reason or ""), message or "", body if isinstance(body, dict) else {})
    return ApiError(0, type(exc).__name__, str(exc))


def _retry_after(exc) -> float | None:
    headers = getattr(exc, "headers", None) or {}
    value = headers.get("Retry-After") if hasattr(headers, "get") else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _transport_errors() -> tuple[type, ...]:
    import urllib3

    return (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError, OSError)


def call(fn, *args, backoff: Backoff | None = None, sleep=time.sleep, deadline: float | None = None,
         clock=time.monotonic, **kwargs) -> dict:
    """Call a client method and return its JSON reply; retry what is worth retrying, raise ApiError otherwise.

    With a deadline (on `clock`), no request is started after it and none is allowed to run past it:
    the binder promises the reconciler that no binding is on its way after that time.
    """
    from kubernetes.client.exceptions import ApiException

    backoff = backoff or Backoff()
    kwargs.setdefault("_preload_content", False)
    kwargs.setdefault("_request_timeout", (5, 30))
    transport = _transport_errors()
    attempt = 0
    error: ApiError | None = None
    while True:
        if deadline is not None:
            left = deadline - clock()
            if left <= 0:
                # After a request that may have reached the server, its error says so; only a call that
                # sent nothing is "not sent".
                raise error or ApiError(0, DEADLINE_EXCEEDED, "not sent: its deadline passed")
            # Connecting and reading time out separately: half the time left each, so that the request
            # is over (answered or abandoned) by the deadline, whatever the server does.
            connect, read = kwargs["_request_timeout"]
            kwargs["_request_timeout"] = (min(connect, left / 2), min(read, left / 2))
        try:
            response = fn(*args, **kwargs)
            data = response.data
            return json.loads(data) if data else {}
        except ApiException as exc:
            error = _error_from(exc)
            retry_after = _retry_after(exc)
        except transport as exc:
            error = _error_from(exc)
            retry_after = None
        if error.status not in RETRYABLE_STATUS or attempt + 1 >= backoff.attempts:
            raise error
        delay = backoff.delay(attempt, retry_after)
        if deadline is not None and clock() + delay >= deadline:
            raise error
        log.warning("kubernetes API: %s; retrying in %.2fs", error, delay)
        sleep(delay)
        attempt += 1
