"""The API client from KUBECONFIG or the in-cluster service account, and calls retried like client-go's.

Every call goes out with `_preload_content=False` and its reply is read as plain JSON: the 37.x
client's models fail on some of the server's replies (a `Status` from pods/binding), and plain
dicts are all the mirror needs.

The client is built as kube-scheduler's: its connection pool holds a connection for every call that can
be in flight at once (the binder's calls, every watch, the rest), so none is dropped and reopened (a TLS
handshake) for want of room; and every request first takes a token from the client's rate limiter, as
client-go's token bucket of clientConnection.qps/burst (SCHEDBOARD_KUBE_QPS/BURST).
"""

from __future__ import annotations

import json
import logging
import random
import re
import threading
import time
import warnings
from dataclasses import dataclass

from .jsoncodec import dumps_body, loads

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


# Bindings in flight at once, as kube-scheduler's binding goroutines: the connection pool below is sized
# from it, and the binder's threads (scheduler/backends/kubernetes.py) are as many.
BIND_PARALLELISM = 16
# Calls besides the binder's and the watches' that can be in flight together: the Lease's renewal, the
# event recorder, PodScheduled status patches, the committer's reads and a re-list.
OTHER_CALLS = 8
# The leader's watches: nodes, pods and kube/objects.py's reflectors (the cluster objects pod (anti-)affinity,
# spreading and preemption read: seven kinds). A test keeps the two equal: objects.py needs Django's models
# loaded, and a client can be built before that.
WATCHES = 2 + 7


def connection_pool_size() -> int:
    """Connections the client keeps open: one per call that can be in flight at once.

    urllib3 keeps `maxsize` connections per host and drops any returned beyond that ("Connection pool is
    full, discarding connection"); the next call then opens a new one with a new TLS handshake. The
    client's default (5 per CPU: 10 here) is less than the binder's calls plus one per watch.
    """
    return BIND_PARALLELISM + WATCHES + OTHER_CALLS


def api_client(kubeconfig: str | None = None, *, qps: float | None = None, burst: int | None = None):
    """A `kubernetes.client.ApiClient`: KUBECONFIG's current context, else the in-cluster config; its pool
    sized by `connection_pool_size()`, its requests limited to `qps`/`burst` (default: the settings)."""
    from kubernetes import client, config
    from django.conf import settings

    path = kubeconfig if kubeconfig is not None else settings.KUBECONFIG
    configuration = client.Configuration()
    if path:
        config.load_kube_config(config_file=path, client_configuration=configuration, persist_config=False)
    else:
        config.load_incluster_config(client_configuration=configuration)
    configuration.connection_pool_maxsize = connection_pool_size()
    api = client.ApiClient(configuration)
    rate_limit(api, TokenBucket(settings.SCHEDBOARD_KUBE_QPS if qps is None else qps,
                                settings.SCHEDBOARD_KUBE_BURST if burst is None else burst))
    _warn_once_if_unverified(api.configuration)
    return api


class TokenBucket:
    """client-go's token bucket rate limiter (flowcontrol.NewTokenBucketRateLimiter): `burst` tokens at
    first, refilled at `qps` a second up to `burst`; each request takes one, waiting for it if none is left.

    Waiters are served in turn: a taker that finds the bucket empty reserves the next token (the count goes
    below zero) and sleeps until it is due, as golang.org/x/time/rate's Wait does.
    """

    def __init__(self, qps: float, burst: int, *, clock=time.monotonic, sleep=time.sleep):
        if not qps > 0 or qps == float("inf"):
            raise ValueError(f"qps: must be a finite number above 0, got {qps!r}")
        if int(burst) < 1:
            raise ValueError(f"burst: must be at least 1, got {burst!r}")
        self.qps, self.burst = float(qps), int(burst)
        self._clock, self._sleep = clock, sleep
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = threading.Lock()
        self.waited = 0.0  # seconds spent waiting for tokens, all takers together

    def reserve(self, *, latest: float | None = None) -> float | None:
        """Take a token; the seconds to wait before using it, or None (nothing taken) if that is past
        `latest` (on the bucket's clock)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            wait = 0.0 if self._tokens >= 1.0 else (1.0 - self._tokens) / self.qps
            if latest is not None and now + wait > latest:
                return None
            self._tokens -= 1.0
            self.waited += wait
            return wait

    def take(self, *, latest: float | None = None) -> bool:
        """Wait for a token; False (none taken, no wait) if it would come after `latest`."""
        wait = self.reserve(latest=latest)
        if wait is None:
            return False
        if wait > 0:
            self._sleep(wait)
        return True


# The deadline of the call() running on this thread (on time.monotonic), for the rate limiter: a request
# whose token would come after it is not sent, as client-go's limiter refuses a wait past its context's.
_call_deadline = threading.local()


class _RateLimitedRest:
    """The ApiClient's REST client with a token taken before every request (watches and lists too, as
    client-go's rest.Request does); everything else is the wrapped client's."""

    def __init__(self, rest, bucket: TokenBucket):
        self._rest = rest
        self.bucket = bucket

    def admit(self) -> None:
        """Take a token for one request (waiting for it), or refuse one that would wait past the call's deadline."""
        latest = getattr(_call_deadline, "at", None)
        if not self.bucket.take(latest=latest):
            raise ApiError(0, DEADLINE_EXCEEDED, "not sent: the client rate limit (SCHEDBOARD_KUBE_QPS/BURST) "
                                                 "would hold it past its deadline")

    def request(self, *args, **kwargs):
        self.admit()
        return self._rest.request(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._rest, name)


def rate_limit(api, bucket: TokenBucket):
    """Make every request of `api` (a kubernetes ApiClient) take a token from `bucket` first."""
    rest = api.rest_client._rest if isinstance(api.rest_client, _RateLimitedRest) else api.rest_client
    api.rest_client = _RateLimitedRest(rest, bucket)
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


_errors: tuple | None = None


def _transport_errors() -> tuple[type, ...]:
    """What a call raises for want of an answer (imported once, not at every call)."""
    global _errors
    if _errors is None:
        import urllib3

        _errors = (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError, OSError)
    return _errors


def _api_exception() -> type:
    from kubernetes.client.exceptions import ApiException

    return ApiException


def call(fn, *args, backoff: Backoff | None = None, sleep=time.sleep, deadline: float | None = None,
         clock=time.monotonic, decode: bool = True, **kwargs) -> dict:
    """Call a client method and return its JSON reply; retry what is worth retrying, raise ApiError otherwise.

    With a deadline (on `clock`), no request is started after it and none is allowed to run past it:
    the binder promises the reconciler that no binding is on its way after that time. `decode=False`: the
    caller never reads the reply (a binding's Status, a created event), which is then not parsed ({}).
    """
    ApiException = _api_exception()
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
            # The rate limiter reads the deadline (on its own clock: what is left of ours).
            _call_deadline.at = None if deadline is None else time.monotonic() + (deadline - clock())
            try:
                response = fn(*args, **kwargs)
            finally:
                _call_deadline.at = None
            data = response.data
            return loads(data) if data and decode else {}
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


JSON = "application/json"


def request_json(api, method: str, path: str, body: dict | None = None, *, content_type: str = JSON,
                 _preload_content: bool = False, _request_timeout=(5, 30), stream: bool = False):
    """One request on `api`'s own connection pool, rate limiter and credentials, without the generated
    client's layers (argument validation, parameter serialization, model lookups: about 0.4 ms of CPU a call
    here, as much as the request itself). The reply as `call()` reads it (`.data`), or unread with `stream`
    (a watch); an error status raises the generated client's ApiException, so `call()` retries and
    interprets it the same way."""
    from kubernetes.client.exceptions import ApiException

    from .wire import transport

    lean = None if stream else transport(api)
    if lean is not None:
        # Written and read on the pool's connection directly (kube/wire.py), after the same rate limiter.
        if isinstance(api.rest_client, _RateLimitedRest):
            api.rest_client.admit()
        response = lean.send(method, path, _header_block(api, content_type),
                             None if body is None else dumps_body(body), _request_timeout)
        if not 200 <= response.status <= 299:
            raise ApiException(http_resp=response)
        return response
    headers = {"Accept": JSON, "Content-Type": content_type, "User-Agent": api.user_agent, **_auth_headers(api)}
    response = api.rest_client.request(method, api.configuration.host + path, headers=headers, body=body,
                                       _request_timeout=_request_timeout)
    if stream and 200 <= response.status <= 299:
        return response.response  # the urllib3 response, as the generated client's with _preload_content=False
    response.read()
    if not 200 <= response.status <= 299:
        raise ApiException(http_resp=response)
    return response


# How often a request asks the configuration for its credentials again (which refreshes an expiring token, as
# the generated client does on every request). The kubeconfig loader's refresh hook re-applies the whole
# configuration each time, the environment's proxy variables read again with it: a third of a hot call's CPU.
# The loaders refresh a token minutes before it expires (the service account's file is read again every
# minute), so asking once a second changes nothing of which token goes out.
AUTH_REFRESH_SECONDS = 1.0


def _auth_headers(api, *, clock=time.monotonic) -> dict:
    """The credentials' headers of `api`'s requests, from its configuration at most AUTH_REFRESH_SECONDS ago."""
    cached = getattr(api, "_schedboard_auth", None)
    now = clock()
    if cached is not None and now < cached[0]:
        return cached[1]
    headers = {auth["key"]: auth["value"] for auth in api.configuration.auth_settings().values()
               if auth["in"] == "header" and auth["value"]}
    api._schedboard_auth = (now + AUTH_REFRESH_SECONDS, headers)
    return headers


def _header_block(api, content_type: str) -> str:
    """The lean path's request headers for `content_type`, formatted once (kube/wire.py's header_block) for as
    long as the credentials' headers stay the same (they are asked for again every AUTH_REFRESH_SECONDS)."""
    from .wire import header_block

    auth, agent = _auth_headers(api), api.user_agent
    cached = getattr(api, "_schedboard_header_blocks", None)
    if cached is None or cached[0] is not auth or cached[1] != agent:
        cached = api._schedboard_header_blocks = (auth, agent, {})
    block = cached[2].get(content_type)
    if block is None:
        block = cached[2][content_type] = header_block(
            {"Accept": JSON, "Content-Type": content_type, "User-Agent": agent, **auth})
    return block


# The generated client's list and watch keywords, as the API's query parameters.
_QUERY = {"limit": "limit", "_continue": "continue", "field_selector": "fieldSelector",
          "label_selector": "labelSelector", "watch": "watch", "allow_watch_bookmarks": "allowWatchBookmarks",
          "resource_version": "resourceVersion", "timeout_seconds": "timeoutSeconds"}


def _query(kwargs: dict) -> str:
    from urllib.parse import urlencode

    unknown = set(kwargs) - set(_QUERY)
    if unknown:
        raise TypeError(f"unexpected list arguments: {', '.join(sorted(unknown))}")
    pairs = [(_QUERY[k], ("true" if v else "false") if isinstance(v, bool) else v) for k, v in kwargs.items()
             if v is not None and v != ""]
    return "?" + urlencode(pairs) if pairs else ""


def lister(api, path: str):
    """A list-and-watch function for the collection at `path` (`/api/v1/pods`), with the generated client's
    signature as Reflector calls it (limit, _continue, field_selector, watch, resource_version, ...): a watch
    comes back unread, to be streamed."""
    def list_or_watch(*, _preload_content: bool = False, _request_timeout=(5, 30), **kwargs):
        return request_json(api, "GET", path + _query(kwargs), _request_timeout=_request_timeout,
                            stream=bool(kwargs.get("watch")))

    list_or_watch.__name__ = f"list {path}"
    return list_or_watch


class LeanCoreV1:
    """The CoreV1Api calls the leader makes, with the generated methods' signatures, through `request_json`:
    the generated API classes import their hundreds of models (about a second of CPU at start, several of
    wall under load), which the leader, reading plain JSON, never uses."""

    def __init__(self, api):
        self.api_client = api
        self.list_node = lister(api, "/api/v1/nodes")
        self.list_pod_for_all_namespaces = lister(api, "/api/v1/pods")
        self.list_namespace = lister(api, "/api/v1/namespaces")
        self.list_service_for_all_namespaces = lister(api, "/api/v1/services")
        self.list_replication_controller_for_all_namespaces = lister(api, "/api/v1/replicationcontrollers")

    def read_namespaced_pod(self, name: str, namespace: str, **kwargs):
        return request_json(self.api_client, "GET", f"/api/v1/namespaces/{_q(namespace)}/pods/{_q(name)}", **kwargs)

    def patch_namespaced_pod_status(self, name: str, namespace: str, body: dict, *, _content_type: str = JSON, **kwargs):
        return request_json(self.api_client, "PATCH", f"/api/v1/namespaces/{_q(namespace)}/pods/{_q(name)}/status",
                            body, content_type=_content_type, **kwargs)

    def delete_namespaced_pod(self, name: str, namespace: str, *, body: dict | None = None, **kwargs):
        return request_json(self.api_client, "DELETE", f"/api/v1/namespaces/{_q(namespace)}/pods/{_q(name)}",
                            body, **kwargs)


class LeanCoordinationV1:
    """The Lease calls of leader election (CoordinationV1Api's signatures), as LeanCoreV1."""

    def __init__(self, api):
        self.api_client = api

    def _path(self, namespace: str, name: str = "") -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{_q(namespace)}/leases" + (f"/{_q(name)}" if name else "")

    def read_namespaced_lease(self, name: str, namespace: str, **kwargs):
        return request_json(self.api_client, "GET", self._path(namespace, name), **kwargs)

    def create_namespaced_lease(self, namespace: str, body: dict, **kwargs):
        return request_json(self.api_client, "POST", self._path(namespace), body, **kwargs)

    def replace_namespaced_lease(self, name: str, namespace: str, body: dict, **kwargs):
        return request_json(self.api_client, "PUT", self._path(namespace, name), body, **kwargs)


class HotCalls:
    """The calls made once or more per pod (the binding, its event), with the generated methods' signatures
    (`call(hot.create_namespaced_pod_binding, name, namespace, body)`), through `request_json`."""

    def __init__(self, api):
        self.api_client = api

    def create_namespaced_pod_binding(self, name: str, namespace: str, body: dict, **kwargs):
        return request_json(self.api_client, "POST", f"/api/v1/namespaces/{_q(namespace)}/pods/{_q(name)}/binding",
                            body, **kwargs)

    def create_namespaced_event(self, namespace: str, body: dict, **kwargs):
        return request_json(self.api_client, "POST", f"/apis/events.k8s.io/v1/namespaces/{_q(namespace)}/events",
                            body, **kwargs)

    def patch_namespaced_event(self, name: str, namespace: str, body: dict, *, _content_type: str = JSON, **kwargs):
        return request_json(self.api_client, "PATCH", f"/apis/events.k8s.io/v1/namespaces/{_q(namespace)}/events/{_q(name)}",
                            body, content_type=_content_type, **kwargs)


# Characters a path segment keeps as they are (urllib's unreserved set): every Kubernetes name and namespace
# (DNS labels and subdomains) is made of them, so quote() has nothing to do for one.
_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]*")


def _q(segment: str) -> str:
    if _UNRESERVED.fullmatch(segment):
        return segment
    from urllib.parse import quote

    return quote(segment, safe="")
