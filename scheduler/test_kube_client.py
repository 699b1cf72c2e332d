"""The API client as kube-scheduler builds its own: a token bucket of clientConnection.qps/burst
(SCHEDBOARD_KUBE_QPS/BURST) before every request, and a connection pool with room for every call that
can be in flight at once (no "Connection pool is full", no TLS handshake per dropped connection)."""

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.exceptions import ImproperlyConfigured
from kubernetes import client

from config.env import env_positive_float
from scheduler.kube.client import (BIND_PARALLELISM, DEADLINE_EXCEEDED, WATCHES, ApiError, TokenBucket, api_client,
                                   call, connection_pool_size, rate_limit)
from scheduler.kube.objects import reflectors


class Clock:
    """A clock that moves only when someone sleeps on it."""

    def __init__(self):
        self.now = 100.0
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(round(seconds, 6))
        self.now += seconds


# (qps, burst, requests at once, the waits of each in turn)
BUCKETS = [
    pytest.param(50, 100, 100, [0.0] * 100, id="a burst of 100 goes at once"),
    pytest.param(50, 100, 102, [0.0] * 100 + [0.02, 0.02], id="the 101st waits for the refill at 50/s"),
    pytest.param(10, 1, 3, [0.0, 0.1, 0.1], id="burst 1: one every 1/qps"),
    pytest.param(2, 3, 5, [0.0, 0.0, 0.0, 0.5, 0.5], id="2 qps after a burst of 3"),
]


@pytest.mark.parametrize("qps, burst, n, waits", BUCKETS)
def test_the_token_bucket_lets_a_burst_through_then_one_request_per_1_over_qps(qps, burst, n, waits):
    clock = Clock()
    bucket = TokenBucket(qps, burst, clock=clock, sleep=clock.sleep)
    for _ in range(n):
        assert bucket.take()
    assert [0.0] * (n - len(clock.slept)) + clock.slept == pytest.approx(waits)


def test_an_idle_bucket_refills_up_to_its_burst_and_no_further():
    clock = Clock()
    bucket = TokenBucket(10, 5, clock=clock, sleep=clock.sleep)
    for _ in range(5):
        bucket.take()
    clock.now += 60.0  # a minute idle: 600 tokens' worth, but the bucket holds 5
    for _ in range(5):
        bucket.take()
    assert clock.slept == []
    bucket.take()
    assert clock.slept == [pytest.approx(0.1)]


def test_waiters_reserve_tokens_in_turn_so_concurrent_takers_are_spread_at_qps():
    clock = Clock()
    bucket = TokenBucket(10, 1, clock=clock, sleep=lambda s: None)  # nobody's sleep moves the clock
    waits = [bucket.reserve() for _ in range(4)]
    assert waits == pytest.approx([0.0, 0.1, 0.2, 0.3])


def test_a_token_that_would_come_after_the_deadline_is_not_taken():
    clock = Clock()
    bucket = TokenBucket(1, 1, clock=clock, sleep=clock.sleep)
    assert bucket.take(latest=clock.now + 5)
    assert not bucket.take(latest=clock.now + 0.5)  # the next one is due in 1 s
    assert clock.slept == []
    assert bucket.take(latest=clock.now + 1.0)  # nothing was taken by the refusal
    assert clock.slept == [pytest.approx(1.0)]


@pytest.mark.parametrize("qps, burst, message", [
    (0, 10, "qps: must be a finite number above 0, got 0"),
    (-1, 10, "qps: must be a finite number above 0, got -1"),
    (float("inf"), 10, "qps: must be a finite number above 0, got inf"),
    (50, 0, "burst: must be at least 1, got 0"),
])
def test_a_bucket_without_a_rate_or_a_burst_is_refused(qps, burst, message):
    with pytest.raises(ValueError, match=message):
        TokenBucket(qps, burst)


@pytest.mark.parametrize("value, message", [
    ("0", "SCHEDBOARD_KUBE_QPS: must be a finite number above 0, got '0'"),
    ("-5", "SCHEDBOARD_KUBE_QPS: must be a finite number above 0, got '-5'"),
    ("nan", "SCHEDBOARD_KUBE_QPS: must be a finite number above 0, got 'nan'"),
    ("fast", "SCHEDBOARD_KUBE_QPS: expected a number, got 'fast'"),
])
def test_a_bad_qps_setting_stops_start_up_naming_the_variable(monkeypatch, value, message):
    monkeypatch.setenv("SCHEDBOARD_KUBE_QPS", value)
    with pytest.raises(ImproperlyConfigured) as exc:
        env_positive_float("SCHEDBOARD_KUBE_QPS", 50.0)
    assert str(exc.value) == message


def test_the_qps_setting_reads_a_rate_and_defaults_to_kube_schedulers(monkeypatch):
    monkeypatch.delenv("SCHEDBOARD_KUBE_QPS", raising=False)
    assert env_positive_float("SCHEDBOARD_KUBE_QPS", 50.0) == 50.0
    monkeypatch.setenv("SCHEDBOARD_KUBE_QPS", "12.5")
    assert env_positive_float("SCHEDBOARD_KUBE_QPS", 50.0) == 12.5


class FakeRest:
    def __init__(self):
        self.requests = 0

    def request(self, *args, **kwargs):
        self.requests += 1

        class Raw:  # what urllib3 answers
            status, reason, data = 200, "OK", b'{"kind": "NamespaceList", "items": []}'

        class Reply:  # the REST client's wrapper of it
            status, reason, data, response = 200, "OK", Raw.data, Raw()
        return Reply()

    def close(self):
        self.closed = True


def _limited(bucket):
    api = client.ApiClient(client.Configuration())
    rest = FakeRest()
    api.rest_client = rest
    rate_limit(api, bucket)
    return api, rest


def test_every_request_of_the_client_takes_a_token_first():
    clock = Clock()
    api, rest = _limited(TokenBucket(4, 2, clock=clock, sleep=clock.sleep))
    core = client.CoreV1Api(api)
    for _ in range(4):
        call(core.list_namespace)
    assert rest.requests == 4
    assert clock.slept == [pytest.approx(0.25), pytest.approx(0.25)]
    rate_limit(api, TokenBucket(4, 2, clock=clock, sleep=clock.sleep))  # limited again: replaced, not stacked
    assert api.rest_client._rest is rest
    api.close()  # the rest of the REST client's interface is the wrapped one's
    assert rest.closed


def test_a_call_whose_token_would_come_after_its_deadline_is_not_sent():
    clock = Clock()
    clock.now = time.monotonic()  # call() hands the limiter its deadline on time.monotonic
    api, rest = _limited(TokenBucket(1, 1, clock=clock, sleep=clock.sleep))
    core = client.CoreV1Api(api)
    call(core.list_namespace)
    with pytest.raises(ApiError) as exc:
        call(core.list_namespace, deadline=time.monotonic() + 0.2)  # the next token is due in 1 s
    assert (exc.value.status, exc.value.reason) == (0, DEADLINE_EXCEEDED)
    assert "not sent" in str(exc.value) and "SCHEDBOARD_KUBE_QPS" in str(exc.value)
    assert rest.requests == 1


def test_the_pool_has_a_connection_for_every_binding_in_flight_and_every_watch():
    objects = reflectors(client.ApiClient(client.Configuration()), stop=threading.Event())
    assert WATCHES == 2 + len(objects)  # nodes, pods and every kind of cluster object
    assert connection_pool_size() >= BIND_PARALLELISM + WATCHES + 1


@pytest.mark.kube
def test_calls_as_many_as_the_binder_and_the_watches_make_at_once_keep_their_connections(caplog):
    from scheduler.testing.kube_apiserver import local_kube_cluster

    with local_kube_cluster() as cluster:
        api = api_client(str(cluster.kubeconfig), qps=5000, burst=5000)
        assert api.configuration.connection_pool_maxsize == connection_pool_size()
        core = client.CoreV1Api(api)
        at_once = BIND_PARALLELISM + WATCHES
        barrier = threading.Barrier(at_once)

        def calls(_):
            barrier.wait()
            for _ in range(5):
                call(core.list_namespace)

        with caplog.at_level(logging.WARNING, logger="urllib3.connectionpool"):
            with ThreadPoolExecutor(at_once) as pool:
                list(pool.map(calls, range(at_once)))
        api.close()
    assert "Connection pool is full" not in caplog.text


@pytest.mark.kube
def test_the_client_from_the_settings_is_limited_to_their_qps_and_burst(settings):
    from scheduler.testing.kube_apiserver import local_kube_cluster

    settings.SCHEDBOARD_KUBE_QPS, settings.SCHEDBOARD_KUBE_BURST = 2.0, 1
    with local_kube_cluster() as cluster:
        api = api_client(str(cluster.kubeconfig))
        bucket = api.rest_client.bucket
        assert (bucket.qps, bucket.burst) == (2.0, 1)
        core = client.CoreV1Api(api)
        for _ in range(3):
            call(core.list_namespace)
        api.close()
    # The 2 past the burst waited for their tokens (1/2 s each, less what their predecessor's call took).
    assert 0 < bucket.waited <= 1.0


@pytest.mark.kube
def test_the_hot_calls_bind_and_record_events_as_the_generated_client_and_fail_the_same_way():
    """HotCalls (the binding and its event without the generated layers) answer and refuse as the generated
    methods do, through the same rate limiter and credentials."""
    from scheduler.kube.client import HotCalls
    from scheduler.testing.kube_apiserver import local_kube_cluster

    with local_kube_cluster() as cluster:
        api = api_client(str(cluster.kubeconfig), qps=0.001, burst=100)
        core, hot = client.CoreV1Api(api), HotCalls(api)
        call(core.create_node, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        call(core.create_namespaced_pod, "default", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                                     "spec": {"containers": [{"name": "c", "image": "x"}]}})
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p", "namespace": "default"},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}
        assert call(hot.create_namespaced_pod_binding, "p", "default", binding)["status"] == "Success"
        assert call(core.read_namespaced_pod, "p", "default")["spec"]["nodeName"] == "n1"
        with pytest.raises(ApiError) as conflict:
            call(hot.create_namespaced_pod_binding, "p", "default", binding)
        assert conflict.value.status == 409 and "already assigned to node" in str(conflict.value)
        with pytest.raises(ApiError) as missing:
            call(hot.create_namespaced_pod_binding, "gone", "default", {**binding, "metadata": {"name": "gone"}})
        assert missing.value.status == 404
        event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "p.1", "namespace": "default"},
                 "eventTime": "2026-12-02T00:00:00.000000Z", "reportingController": "default-scheduler",
                 "reportingInstance": "default-scheduler-h", "action": "Binding", "reason": "Scheduled", "type": "Normal",
                 "note": "Successfully assigned default/p to n1",
                 "regarding": {"kind": "Pod", "namespace": "default", "name": "p"}}
        assert call(hot.create_namespaced_event, "default", event)["metadata"]["name"] == "p.1"
        series = {"series": {"count": 2, "lastObservedTime": "2026-12-02T00:00:01.000000Z"}}
        patched = call(hot.patch_namespaced_event, "p.1", "default", series,
                       _content_type="application/strategic-merge-patch+json")
        assert patched["series"]["count"] == 2
        # Every request took its token from the client's bucket (8 so far, 5 of them hot; barely any refill).
        assert api.rest_client.bucket._tokens == pytest.approx(100 - 8, abs=0.5)
        api.close()


def test_a_request_asks_the_configuration_for_its_credentials_at_most_once_a_second():
    """The refresh hook (which re-reads an expiring token) runs once per AUTH_REFRESH_SECONDS, not per request."""
    from scheduler.kube.client import AUTH_REFRESH_SECONDS, _auth_headers

    configuration = client.Configuration()
    configuration.api_key["BearerToken"] = "Bearer old"
    refreshed = []
    configuration.refresh_api_key_hook = lambda c: refreshed.append(1)
    api = client.ApiClient(configuration)
    clock = Clock()

    first = [_auth_headers(api, clock=clock) for _ in range(5)]
    configuration.api_key["BearerToken"] = "Bearer new"  # the loader's hook refreshed it
    clock.sleep(AUTH_REFRESH_SECONDS)
    then = _auth_headers(api, clock=clock)

    assert first == [{"authorization": "Bearer old"}] * 5 and then == {"authorization": "Bearer new"}
    assert len(refreshed) == 2
