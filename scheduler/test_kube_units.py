"""The kubernetes backend's parts against a fake client port: retries, list+watch bookkeeping,
leader election timing, event series, binding outcomes, settings. Fast; the real API server tests
(test_kube_backend.py, test_kube_leader.py, test_kube_deploy.py) are what prove it end to end."""

import json
from datetime import datetime, timedelta, timezone

import time

import pytest
from django.core.exceptions import ImproperlyConfigured
from kubernetes.client.exceptions import ApiException

from scheduler.backends.errors import BindError, BindOutcomeUnknown, BoundElsewhere, PodGone
from scheduler.backends.kubernetes import KubernetesBackend
from scheduler.kube.client import ApiError, Backoff, call
from scheduler.kube.events import EventRecorder, pod_reference
from scheduler.kube.leader import LeaderElector, validate_timings
from scheduler.kube.reflector import Reflector
from scheduler.testing.metrics import counters

NO_WAIT = Backoff(initial=0.0, cap=0.0, attempts=4)


class Reply:
    def __init__(self, obj):
        self.data = json.dumps(obj).encode()


def api_error(status, message="", headers=None):
    exc = ApiException(status=status, reason={404: "Not Found", 409: "Conflict", 429: "Too Many Requests"}.get(status, "Error"),
                       body=json.dumps({"kind": "Status", "code": status, "message": message}))
    exc.headers = headers
    return exc


class Script:
    """A client method that answers from a script: objects are replies, exceptions are raised."""

    def __init__(self, *answers, on_empty=None):
        self.answers = list(answers)
        self.calls = []
        self.on_empty = on_empty

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        if not self.answers:
            if self.on_empty:
                self.on_empty()
            raise AssertionError("the script ran out of answers")
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer if hasattr(answer, "data") or hasattr(answer, "stream") else Reply(answer)


# ---- retries ----------------------------------------------------------------------------------

def test_call_retries_throttling_and_server_errors_with_backoff_honouring_retry_after():
    sleeps = []
    fn = Script(api_error(429, headers={"Retry-After": "0.5"}), api_error(503), ConnectionResetError("reset"), {"ok": 1})

    assert call(fn, backoff=Backoff(initial=0.1, cap=5.0, attempts=5), sleep=sleeps.append) == {"ok": 1}

    assert len(fn.calls) == 4
    assert sleeps[0] == 0.5  # the server's Retry-After
    assert 0.2 <= sleeps[1] <= 0.25 and 0.4 <= sleeps[2] <= 0.5  # doubling, with jitter
    assert all(kwargs["_preload_content"] is False for _, kwargs in fn.calls)


def test_call_does_not_retry_what_a_retry_cannot_fix_and_gives_up_after_its_attempts():
    conflict = Script(api_error(409, "already assigned"))
    with pytest.raises(ApiError) as refused:
        call(conflict, sleep=lambda s: None)
    assert refused.value.status == 409 and "already assigned" in str(refused.value) and len(conflict.calls) == 1

    down = Script(*[api_error(500)] * 4)
    with pytest.raises(ApiError) as gave_up:
        call(down, backoff=NO_WAIT, sleep=lambda s: None)
    assert gave_up.value.status == 500 and len(down.calls) == 4


# ---- list + watch -----------------------------------------------------------------------------

class Stream:
    """A watch response: lines of events, then either the end (timeout) or a dropped connection."""

    def __init__(self, events, drop=False):
        self.payload = b"".join(json.dumps(e).encode() + b"\n" for e in events)
        self.drop = drop

    def stream(self, amt=None, decode_content=False):
        # Split mid-line: the reader must join the pieces.
        yield self.payload[: len(self.payload) // 2]
        yield self.payload[len(self.payload) // 2:]
        if self.drop:
            from urllib3.exceptions import ProtocolError

            raise ProtocolError("connection broken")

    def release_conn(self):
        pass


def pod_obj(name, rv):
    return {"metadata": {"name": name, "namespace": "default", "resourceVersion": rv}}


class RecordingStore:
    def __init__(self, reflector_box):
        self.seen = []
        self.box = reflector_box

    def replace(self, items):
        self.seen.append(("REPLACE", sorted(i["metadata"]["name"] for i in items)))

    def apply(self, kind, obj):
        self.seen.append((kind, obj["metadata"]["name"]))
        if len(self.seen) >= self.box["stop_after"]:
            self.box["reflector"].stop.set()


def test_a_reflector_lists_in_pages_then_resumes_its_watch_from_the_last_resource_version():
    box = {"stop_after": 5}
    store = RecordingStore(box)
    fn = Script(
        {"items": [pod_obj("a", "1")], "metadata": {"continue": "page2"}},
        {"items": [pod_obj("b", "2")], "metadata": {"resourceVersion": "10"}},
        Stream([{"type": "ADDED", "object": pod_obj("c", "11")},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}}], drop=True),
        Stream([{"type": "MODIFIED", "object": pod_obj("c", "13")}]),  # ends: the server's timeout
        Stream([{"type": "DELETED", "object": pod_obj("a", "14")}, {"type": "ADDED", "object": pod_obj("d", "15")}]),
        on_empty=lambda: box["reflector"].stop.set(),
    )
    reflector = box["reflector"] = Reflector("pods", fn, store, kind="Pod", watch_timeout=60)

    reflector.run()

    assert store.seen == [("REPLACE", ["a", "b"]), ("ADDED", "c"), ("MODIFIED", "c"), ("DELETED", "a"), ("ADDED", "d")]
    kwargs = [k for _, k in fn.calls]
    assert kwargs[1]["_continue"] == "page2"
    assert [k.get("resource_version") for k in kwargs[2:]] == ["10", "12", "13"]  # each resume from where it was
    assert all(k["allow_watch_bookmarks"] for k in kwargs[2:])
    assert reflector.lists == 1 and reflector.resumes == 2
    assert reflector.resource_version == "15"


def test_a_reflector_lists_again_when_the_server_says_410_gone():
    box = {"stop_after": 3}
    store = RecordingStore(box)
    fn = Script(
        {"items": [pod_obj("a", "1")], "metadata": {"resourceVersion": "10"}},
        Stream([{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                             "message": "too old resource version: 10 (50)"}}]),
        {"items": [pod_obj("a", "1"), pod_obj("b", "40")], "metadata": {"resourceVersion": "50"}},
        Stream([{"type": "ADDED", "object": pod_obj("c", "51")}]),
        on_empty=lambda: box["reflector"].stop.set(),
    )
    reflector = box["reflector"] = Reflector("pods", fn, store, kind="Pod", watch_timeout=60)

    reflector.run()

    assert store.seen == [("REPLACE", ["a"]), ("REPLACE", ["a", "b"]), ("ADDED", "c")]
    assert reflector.lists == 2
    assert fn.calls[3][1]["resource_version"] == "50"


def test_a_reflector_that_must_wait_to_store_its_list_lets_the_store_prepare_it_meanwhile():
    """The pods' list waits until the nodes are stored (`store_after`); a store with `prepare` gets the list
    then (PodStore parses it), and only stores it once the wait is over. One that need not wait is not asked."""
    import threading

    class PreparingStore(RecordingStore):
        def prepare(self, items):
            self.seen.append(("PREPARE", sorted(i["metadata"]["name"] for i in items), after.is_set()))
            after.set()  # the nodes are stored meanwhile

    after = threading.Event()
    box = {"stop_after": 2}
    store = PreparingStore(box)
    fn = Script({"items": [pod_obj("a", "1")], "metadata": {"resourceVersion": "10"}},
                Stream([{"type": "ADDED", "object": pod_obj("b", "11")}]), on_empty=lambda: box["reflector"].stop.set())
    box["reflector"] = Reflector("pods", fn, store, kind="Pod", watch_timeout=60, store_after=after)
    box["reflector"].run()
    assert store.seen[:2] == [("PREPARE", ["a"], False), ("REPLACE", ["a"])]

    box2 = {"stop_after": 1}
    ready = PreparingStore(box2)
    fn2 = Script({"items": [pod_obj("a", "1")], "metadata": {"resourceVersion": "10"}},
                 on_empty=lambda: box2["reflector"].stop.set())
    box2["reflector"] = Reflector("pods", fn2, ready, kind="Pod", watch_timeout=60, store_after=after)
    box2["reflector"].run()
    assert ready.seen[0] == ("REPLACE", ["a"])


# ---- leader election --------------------------------------------------------------------------

class FakeLeases:
    """coordination.k8s.io/v1 Leases with resourceVersion conflicts, as the API server keeps them."""

    def __init__(self):
        self.lease = None
        self.version = 0

    def read_namespaced_lease(self, name, namespace, **kw):
        if self.lease is None:
            raise api_error(404)
        return Reply(self.lease)

    def create_namespaced_lease(self, namespace, body, **kw):
        if self.lease is not None:
            raise api_error(409)
        self.version += 1
        self.lease = {**body, "metadata": {**body["metadata"], "resourceVersion": str(self.version)}}
        return Reply(self.lease)

    def replace_namespaced_lease(self, name, namespace, body, **kw):
        if body["metadata"]["resourceVersion"] != self.lease["metadata"]["resourceVersion"]:
            raise api_error(409)
        self.version += 1
        self.lease = {**body, "metadata": {**body["metadata"], "resourceVersion": str(self.version)}}
        return Reply(self.lease)


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def elector(leases, clock, identity):
    return LeaderElector(leases, namespace="ns", name="schedboard", identity=identity, lease_duration=15,
                         renew_deadline=10, retry_period=2, monotonic=clock)


def test_the_first_replica_creates_the_lease_and_another_waits_until_it_expires_unrenewed():
    leases, clock_a, clock_b = FakeLeases(), Clock(), Clock()
    a, b = elector(leases, clock_a, "a"), elector(leases, clock_b, "b")

    assert a.try_acquire_or_renew() and a.is_leader()
    first_acquired = leases.lease["spec"]["acquireTime"]
    assert leases.lease["spec"]["holderIdentity"] == "a" and leases.lease["spec"]["leaseDurationSeconds"] == 15
    assert not b.try_acquire_or_renew() and not b.is_leader()

    clock_a.t += 5
    clock_b.t += 5
    assert a.try_acquire_or_renew()  # renewed
    assert leases.lease["spec"]["acquireTime"] == first_acquired  # a renewal keeps acquireTime
    assert not b.try_acquire_or_renew()  # b sees the record changed: its 15 s count from now, on its own clock
    clock_b.t += 14
    assert not b.try_acquire_or_renew()
    clock_b.t += 2  # 16 s after b last saw the record change, no renewal since: expired
    assert b.try_acquire_or_renew() and b.is_leader()
    assert leases.lease["spec"]["holderIdentity"] == "b"
    assert leases.lease["spec"]["leaseTransitions"] == 1
    assert a.try_acquire_or_renew() is False and not a.is_leader()  # a sees b's fresh record


def test_a_leader_that_cannot_renew_within_the_renew_deadline_stops_being_leader_at_once():
    leases, clock = FakeLeases(), Clock()
    a = elector(leases, clock, "a")
    assert a.try_acquire_or_renew()
    clock.t += 9.9
    assert a.is_leader()
    clock.t += 0.2  # 10.1 s since the last renewal, whatever the renew loop is doing
    assert not a.is_leader()

    backend = KubernetesBackend(api_client=object(), elector=a)
    with pytest.raises(BindError, match="not the leader"):
        backend.bind(pod_manifest={"metadata": {"name": "p", "namespace": "default"}}, node_name="n")


def test_a_released_lease_is_taken_at_once_by_the_next_replica():
    leases, clock_a, clock_b = FakeLeases(), Clock(), Clock()
    a, b = elector(leases, clock_a, "a"), elector(leases, clock_b, "b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()

    assert a.release()

    assert leases.lease["spec"].get("holderIdentity") is None and leases.lease["spec"]["leaseDurationSeconds"] == 1
    assert b.try_acquire_or_renew()


def test_lease_timings_are_validated_with_client_gos_messages():
    validate_timings(15, 10, 2)
    with pytest.raises(ValueError, match="^leaseDuration must be greater than renewDeadline$"):
        validate_timings(10, 10, 2)
    with pytest.raises(ValueError, match=r"^renewDeadline must be greater than retryPeriod\*JitterFactor$"):
        validate_timings(15, 2.4, 2)


# ---- events -----------------------------------------------------------------------------------

class FakeEvents:
    def __init__(self):
        self.created, self.patched = [], []

    def create_namespaced_event(self, namespace, body, **kw):
        self.created.append((namespace, body))
        return Reply(body)

    def patch_namespaced_event(self, name, namespace, body, **kw):
        self.patched.append((name, body))
        return Reply(body)


def test_repeated_events_become_a_series_as_the_events_broadcaster_counts_it():
    api = FakeEvents()
    now = [datetime(2026, 11, 30, 6, 0, tzinfo=timezone.utc)]
    recorder = EventRecorder(api, hostname="host-1", clock=lambda: now[0])
    ref = pod_reference("default", "web", "uid-1", "42")

    for note in ("0/3 nodes are available: 3 Insufficient cpu.", "0/3 nodes are available: 3 Insufficient cpu.",
                 "0/4 nodes are available: 4 Insufficient cpu."):  # the note is not part of the key
        recorder.eventf(ref, type="Warning", reason="FailedScheduling", action="Scheduling", note=note,
                        reporting_controller="schedboard")
        now[0] += timedelta(seconds=1)

    assert len(api.created) == 1
    namespace, event = api.created[0]
    assert namespace == "default"
    assert event["metadata"]["name"] == f"web.{int(datetime(2026, 11, 30, 6, 0, tzinfo=timezone.utc).timestamp() * 1e9):x}"
    assert (event["reportingController"], event["reportingInstance"]) == ("schedboard", "schedboard-host-1")
    assert event["regarding"] == {"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": "web",
                                  "uid": "uid-1", "resourceVersion": "42"}
    assert event["eventTime"] == "2026-11-30T06:00:00.000000Z" and "series" not in event
    assert api.patched == [(event["metadata"]["name"], {"series": {"count": 2, "lastObservedTime": "2026-11-30T06:00:01.000000Z"}})]

    now[0] += timedelta(minutes=7)  # no repeat for 6 minutes: the series ends, its count is written
    recorder.tick()
    assert api.patched[-1] == (event["metadata"]["name"], {"series": {"count": 3, "lastObservedTime": "2026-11-30T06:00:02.000000Z"}})
    assert recorder.cache == {}


def test_an_event_about_another_resource_version_of_the_pod_is_a_new_event():
    api = FakeEvents()
    recorder = EventRecorder(api, hostname="h")
    for rv in ("1", "2"):
        recorder.eventf(pod_reference("default", "web", "u", rv), type="Warning", reason="FailedScheduling",
                        action="Scheduling", note="n", reporting_controller="schedboard")
    assert len(api.created) == 2 and api.patched == []


# ---- binding outcomes -------------------------------------------------------------------------

class FakeCore:
    def __init__(self, bind, read=None):
        self.create_namespaced_pod_binding = bind
        self.read_namespaced_pod = read or Script()


MANIFEST = {"metadata": {"name": "p", "namespace": "default", "uid": "uid-1"}}


def backend_with(core):
    """The backend's reads and (through its hot calls, kube/client.HotCalls) its bindings go to `core`."""
    backend = KubernetesBackend(api_client=object(), backoff=NO_WAIT)
    type(backend).core = property(lambda self: core)
    type(backend).hot = property(lambda self: core)
    return backend


@pytest.fixture(autouse=True)
def _restore_core_property():
    original, hot = KubernetesBackend.core, KubernetesBackend.hot
    yield
    KubernetesBackend.core, KubernetesBackend.hot = original, hot


def test_binding_posts_the_pods_binding_subresource_with_the_uid():
    bind = Script({"kind": "Status", "status": "Success"})
    backend_with(FakeCore(bind)).bind(pod_manifest=MANIFEST, node_name="node-a")
    (args, _), = bind.calls
    assert args[:2] == ("p", "default")
    assert args[2] == {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p", "namespace": "default", "uid": "uid-1"},
                       "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"}}


def test_a_409_is_success_when_the_pod_is_on_our_node_and_bound_elsewhere_otherwise():
    on = lambda node: {"metadata": {"uid": "uid-1"}, "spec": {"nodeName": node}}  # noqa: E731
    backend_with(FakeCore(Script(api_error(409)), Script(on("node-a")))).bind(pod_manifest=MANIFEST, node_name="node-a")
    with pytest.raises(BoundElsewhere) as elsewhere:
        backend_with(FakeCore(Script(api_error(409)), Script(on("node-b")))).bind(pod_manifest=MANIFEST, node_name="node-a")
    assert elsewhere.value.node_name == "node-b"


def test_a_pod_gone_or_replaced_is_reported_as_gone():
    with pytest.raises(PodGone):
        backend_with(FakeCore(Script(api_error(404)))).bind(pod_manifest=MANIFEST, node_name="node-a")
    replaced = {"metadata": {"uid": "uid-2"}, "spec": {}}
    with pytest.raises(PodGone):
        backend_with(FakeCore(Script(api_error(409)), Script(replaced))).bind(pod_manifest=MANIFEST, node_name="node-a")


def test_server_errors_are_retried_and_a_definite_refusal_is_refused_so_the_loop_requeues_the_pod():
    bind = Script(api_error(503), api_error(500), {"status": "Success"})
    backend_with(FakeCore(bind)).bind(pod_manifest=MANIFEST, node_name="node-a")
    assert len(bind.calls) == 3

    denied = Script(api_error(403, "admission webhook denied the request"))
    outcomes = backend_with(FakeCore(denied)).bind_many([{"pod_manifest": MANIFEST, "node_name": "node-a"}])
    error, seconds = outcomes[0]
    assert type(error) is BindError and seconds >= 0 and "403" in str(error)


def on_node(node):
    return {"metadata": {"uid": "uid-1"}, "spec": {"nodeName": node} if node else {}}


def test_a_binding_whose_reply_was_lost_but_which_landed_is_a_success():
    """Every try timed out or failed on the server's side: the binding may have happened. The pod says it did."""
    import time

    bind = Script(*[api_error(504)] * 4)
    read = Script(on_node("node-a"))
    backend_with(FakeCore(bind, read)).bind(pod_manifest=MANIFEST, node_name="node-a", deadline=time.monotonic() + 5)
    assert len(read.calls) == 1


def test_an_unsettled_binding_is_sent_again_until_it_lands_within_its_deadline():
    import time

    bind = Script(*[api_error(503)] * 4, {"status": "Success"})
    read = Script(on_node(""))
    backend_with(FakeCore(bind, read)).bind(pod_manifest=MANIFEST, node_name="node-a", deadline=time.monotonic() + 5)
    assert len(bind.calls) == 5


def test_a_binding_still_unsettled_at_its_deadline_keeps_its_reservation():
    """Neither the tries nor a read settled it: the outcome is unknown, so the loop must not give the room back
    (the cluster may have bound the pod there and would count it on top of whoever got the room)."""
    import time

    bind = Script(*[api_error(503)] * 4)
    read = Script(api_error(503), *[api_error(503)] * 3)  # the API is down for reads too
    with pytest.raises(BindOutcomeUnknown, match="503"):
        backend_with(FakeCore(bind, read)).bind(pod_manifest=MANIFEST, node_name="node-a",
                                                deadline=time.monotonic() + 0.05)


def test_a_definite_refusal_after_an_unsettled_try_still_keeps_the_reservation():
    import time

    bind = Script(*[api_error(503)] * 4, api_error(403, "denied"))
    read = Script(on_node(""))
    with pytest.raises(BindOutcomeUnknown):
        backend_with(FakeCore(bind, read)).bind(pod_manifest=MANIFEST, node_name="node-a", deadline=time.monotonic() + 5)


def test_a_binding_past_its_deadline_is_never_sent():
    import time

    bind = Script()  # any call fails the test
    with pytest.raises(BindError, match="not sent: the binding waited past its deadline"):
        backend_with(FakeCore(bind)).bind(pod_manifest=MANIFEST, node_name="node-a", deadline=time.monotonic() - 1)
    assert bind.calls == []


def test_call_starts_nothing_after_its_deadline_and_no_retry_that_would_end_past_it():
    now = [100.0]
    late = Script()
    with pytest.raises(ApiError, match="DeadlineExceeded"):
        call(late, deadline=99.0, clock=lambda: now[0], sleep=lambda s: None)
    assert late.calls == []

    flaky = Script(api_error(503), {"ok": 1})
    with pytest.raises(ApiError) as gave_up:
        call(flaky, backoff=Backoff(initial=1.0, cap=5.0, attempts=5), deadline=100.5, clock=lambda: now[0],
             sleep=lambda s: None)
    assert gave_up.value.status == 503 and len(flaky.calls) == 1  # a retry after 1 s would start past it
    (_, kwargs), = flaky.calls
    # And the one sent is over by then: connecting and reading time out separately, half the time left each.
    assert kwargs["_request_timeout"] == (0.25, 0.25)


def test_bind_many_returns_a_bug_in_one_binding_as_that_pods_outcome():
    bind = Script({"status": "Success"})
    outcomes = backend_with(FakeCore(bind)).bind_many([{"pod_manifest": {"metadata": 5}, "node_name": "node-a"},
                                                      {"pod_manifest": MANIFEST, "node_name": "node-a"}])
    assert isinstance(outcomes[0][0], AttributeError) and outcomes[1][0] is None


# ---- settings ---------------------------------------------------------------------------------

def test_durations_and_the_backend_choice_are_parsed_strictly(monkeypatch):
    from config.env import env_choice, env_duration

    for text, seconds in (("15s", 15.0), ("500ms", 0.5), ("1m30s", 90.0), ("2", 2.0)):
        monkeypatch.setenv("D", text)
        assert env_duration("D", 1.0) == seconds
    monkeypatch.setenv("D", "soon")
    with pytest.raises(ImproperlyConfigured, match="^D: expected a duration such as 15s or 500ms, got 'soon'$"):
        env_duration("D", 1.0)
    monkeypatch.setenv("B", "k8s")
    with pytest.raises(ImproperlyConfigured, match="^B: expected one of simulated, kubernetes, got 'k8s'$"):
        env_choice("B", "simulated", ("simulated", "kubernetes"))


# ---- the loop's bind path with a cluster-like backend (real Postgres and Redis) -----------------

class FlakyCluster:
    """A backend like the kubernetes one whose bindings answer from a script of outcomes."""

    mirrors_bindings = True

    def __init__(self, *outcomes):
        self.outcomes = list(outcomes)
        self.reports = []

    def bind_many(self, requests):
        return [(self.outcomes.pop(0), 0.001) for _ in requests]

    def counts_bind_failures(self, pod_manifest):
        return False

    def hand_off(self, items):
        from scheduler import loop

        loop.bind_batch(items)

    def report(self, *, failed, scheduled):
        self.reports.append(([(p.name, r, m) for p, r, m in failed], [(p.name, n) for p, n in scheduled]))

    def mirror_current_through(self):
        return time.time()  # its watch is always current


@pytest.fixture
def clock():
    """The shared Redis queue on a hand-moved clock (as test_loop.py): backoff without sleeping."""
    from django.conf import settings

    from scheduler.queue import queues
    from scheduler.queue.redis_queue import RedisQueue
    from scheduler.testing.loop import FakeClock

    c = FakeClock()
    queues.reset_queue(RedisQueue(queues.get_redis(), prefix=settings.SCHEDBOARD_QUEUE_PREFIX, clock=c))
    return c


@pytest.fixture
def cluster_backend():
    from scheduler.backends import reset_backend, set_backend

    def install(*outcomes):
        backend = FlakyCluster(*outcomes)
        set_backend(backend)
        return backend

    yield install
    reset_backend()


@pytest.mark.django_db(transaction=True)
def test_an_api_error_on_bind_releases_the_room_and_retries_the_pod_with_backoff(cluster_backend, clock):
    from scheduler.models import Attempt, Node, Pod
    from scheduler.testing.loop import apply, drain, node, pod

    backend = cluster_backend(BindError("503 Service Unavailable: etcd leader changed"), None)
    apply(node("node-a"), pod("web"))

    drain(clock)

    assert Pod.objects.get(name="web").node_name == "node-a"
    assert list(Attempt.objects.order_by("id").values_list("result", "message")) == [
        ("bind_failed", "Binding rejected: 503 Service Unavailable: etcd leader changed"), ("scheduled", "")]
    assert Node.objects.get(name="node-a").req_pods == 1  # released once, taken once
    assert backend.reports[0] == ([("web", "SchedulerError", "Binding rejected: 503 Service Unavailable: etcd leader changed")], [])
    assert backend.reports[-1] == ([], [("web", "node-a")])


@pytest.mark.django_db(transaction=True)
def test_a_pod_bound_elsewhere_is_dropped_without_retry_and_its_room_released(cluster_backend, clock):
    from scheduler.queue import queues
    from scheduler.models import Attempt, Binding, Node, Pod
    from scheduler.testing.loop import apply, drain, node, pod

    cluster_backend(BoundElsewhere("node-x"))
    apply(node("node-a"), pod("web"))

    drain(clock)

    web = Pod.objects.get(name="web")
    assert (web.node_name, web.assumed_node) == ("node-x", "")  # where the API says it is; not requeued
    assert Attempt.objects.get().message == "Binding rejected: pod is already bound to node 'node-x'"
    assert Node.objects.get(name="node-a").req_pods == 0
    assert not Binding.objects.exists()
    assert queues.get_queue().get("default/web") is None


class ListingCluster(FlakyCluster):
    """A cluster-like backend whose leader is listing (or gone): nobody can say the mirror is complete."""

    current = False

    def mirror_current_through(self):
        return time.time() if self.current else None


@pytest.mark.django_db(transaction=True)
def test_the_reconciler_queues_the_pods_the_queue_lost_only_from_a_mirror_that_says_it_is_complete(clock):
    """A leader listing may have stored half its list; the list queues its pods itself once it is all stored
    (kube-scheduler schedules only after its caches sync), so the reconciler must not queue the half first."""
    from scheduler import loop
    from scheduler.backends import reset_backend, set_backend
    from scheduler.queue import queues
    from scheduler.testing.loop import apply, node, pod

    backend = ListingCluster()
    set_backend(backend)
    try:
        apply(node("node-a"), pod("web"))
        queue = queues.get_queue()
        queue.clear()  # the queue lost it (Redis restarted), or a list stored it and has not queued it yet
        assert loop.reconcile(queue=queue)["requeued"] == 0
        assert queue.get("default/web") is None
        backend.current = True
        assert loop.reconcile(queue=queue)["requeued"] == 1
        assert queue.get("default/web") is not None
    finally:
        reset_backend()


# ---- the command's refusals -------------------------------------------------------------------

def test_kube_check_says_when_the_cluster_configuration_cannot_be_loaded(settings, tmp_path):
    from django.core.management import CommandError, call_command

    settings.KUBECONFIG = str(tmp_path / "missing-kubeconfig")
    with pytest.raises(CommandError, match="^cannot load the cluster configuration \\(KUBECONFIG or in-cluster\\): "):
        call_command("kube", "check")


def test_kube_run_refuses_to_start_without_the_kubernetes_backend(settings):
    from django.core.management import CommandError, call_command

    settings.SCHEDBOARD_BACKEND = "simulated"
    with pytest.raises(CommandError, match="^kube run needs SCHEDBOARD_BACKEND=kubernetes$"):
        call_command("kube", "run")


@pytest.mark.django_db(transaction=True)
def test_one_pod_that_cannot_be_reported_does_not_hold_back_the_rest_of_its_report_job():
    from scheduler.kube.controller import Committer
    from scheduler.models import Pod
    from scheduler.testing.loop import apply, pod

    apply(pod("bad"), pod("good"))
    Pod.objects.filter(name="bad").update(manifest={"metadata": {"name": "bad"}, "status": 5})  # written past every check
    uids = dict(Pod.objects.values_list("name", "uid"))
    patched = []

    class Core:
        def patch_namespaced_pod_status(self, name, namespace, body, **kwargs):
            patched.append(name)
            return Reply({})

    events = FakeEvents()
    committer = Committer(Core(), EventRecorder(events, hostname="h"), redis=None)
    failed = [{"namespace": "default", "name": n, "uid": uids[n], "resourceVersion": "1", "scheduler": "default-scheduler",
               "reason": "Unschedulable", "message": "0/1 nodes are available: 1 Insufficient cpu."} for n in ("bad", "good")]

    committer.report({"op": "report", "failed": failed, "scheduled": []})

    assert [body["regarding"]["name"] for _, body in events.created] == ["bad", "good"]
    assert patched == ["good"]


# ---- the mirror: one bad object never stops its watch batch; a bound pod is never uncounted ----------------

def kube_pod(name, cpu="500m", memory="256Mi", node_name=None, uid=None, **spec):
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}", "resourceVersion": "1",
                        "creationTimestamp": "2026-12-01T00:00:00Z"},
           "spec": {"schedulerName": "default-scheduler",
                    "containers": [{"name": "c", "image": "app:1",
                                    "resources": {"requests": {"cpu": cpu, "memory": memory}}}], **spec},
           "status": {"phase": "Running" if node_name else "Pending"}}
    if node_name:
        obj["spec"]["nodeName"] = node_name
    return obj


def mirror_problems(problem):
    return counters().get_sample_value("schedboard_mirror_problems_total",
                                                     {"kind": "Pod", "problem": problem}) or 0.0


@pytest.fixture
def mirror_node():
    from scheduler.testing.loop import apply, node

    apply(node("node-a", cpu="8", memory="16Gi"))
    return "node-a"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("relist", [False, True], ids=["watch-batch", "relist"])
def test_one_pod_event_that_raises_does_not_stop_the_rest_of_its_watch_batch(mirror_node, relist, caplog):
    from scheduler.queue import queues
    from scheduler.kube.mirror import PodStore
    from scheduler.models import Event, Node, Pod

    # The API would never send two pods with one uid; the rows refuse it (one pod per uid).
    events = [("ADDED", kube_pod("first", node_name="node-a")), ("ADDED", kube_pod("bad", uid="uid-first")),
              ("ADDED", kube_pod("last", node_name="node-a"))]
    failed = mirror_problems("failed")
    store = PodStore(queue=queues.get_queue())

    store.replace([obj for _, obj in events]) if relist else store.apply_many(events)

    assert set(Pod.objects.values_list("name", flat=True)) == {"first", "last"}
    assert Node.objects.get(name="node-a").req_cpu == 1000
    assert mirror_problems("failed") == failed + 1
    event = Event.objects.get(involved_name="bad", reason="FailedMirror")
    assert event.type == "Warning" and 'duplicate key value violates unique constraint "pod_unique_uid"' in event.message
    assert "cannot mirror Pod default/bad: applying it raised" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_a_relist_keeps_counting_a_bound_pod_that_became_unparsable(mirror_node):
    from scheduler.queue import queues
    from scheduler.kube.mirror import PodStore
    from scheduler.models import Node, Pod

    store = PodStore(queue=queues.get_queue())
    store.apply_many([("ADDED", kube_pod("web", node_name="node-a"))])
    broken = kube_pod("web", node_name="node-a")
    broken["metadata"]["labels"] = {"x": "y" * 100}  # now refused by the parser, but still there

    store.replace([broken])

    assert Pod.objects.filter(name="web").exists()
    assert Node.objects.get(name="node-a").req_cpu == 500


@pytest.mark.django_db(transaction=True)
def test_a_bound_pod_the_parser_rejects_counts_what_can_be_read_of_its_requests_loudly(mirror_node, caplog):
    from scheduler.queue import queues
    from scheduler.kube.mirror import PodStore
    from scheduler.models import Event, Node, Pod

    obj = kube_pod("odd", cpu="1", memory="1Gi", node_name="node-a")
    obj["spec"]["containers"].append({"name": "side", "image": "s:1",
                                      "resources": {"requests": {"cpu": "lots", "memory": "512Mi"}}})
    obj["spec"]["resources"] = {"requests": {"cpu": "3", "memory": "1Gi"}}  # pod-level: refused by the parser
    unparsable = mirror_problems("unparsable")

    PodStore(queue=queues.get_queue()).apply("ADDED", obj)

    node_a = Node.objects.get(name="node-a")
    # The larger of the pod-level requests and the containers' that parse: never less than what it takes.
    assert (node_a.req_cpu, node_a.req_memory, node_a.req_pods) == (3000, (1 << 30) + (512 << 20), 1)
    row = Pod.objects.get(name="odd")
    assert (row.node_name, row.req_cpu) == ("node-a", 3000)
    assert mirror_problems("unparsable") == unparsable + 1
    event = Event.objects.get(involved_name="odd", reason="FailedMirror")
    assert event.type == "Warning" and "counted on node node-a as cpu=3000m" in event.message
    assert "spec.resources" in event.message and "bound to node-a but cannot be read" in caplog.text

    PodStore(queue=queues.get_queue()).apply("DELETED", obj)  # leaving, it gives back exactly what it took
    node_a = Node.objects.get(name="node-a")
    assert (node_a.req_cpu, node_a.req_memory, node_a.req_pods) == (0, 0, 0)


@pytest.mark.django_db(transaction=True)
def test_a_pending_pod_that_becomes_unparsable_when_bound_is_counted_on_its_node(mirror_node):
    from scheduler.queue import queues
    from scheduler.kube.mirror import PodStore
    from scheduler.models import Node, Pod

    store = PodStore(queue=queues.get_queue())
    store.apply("ADDED", kube_pod("web", cpu="2"))
    bound = kube_pod("web", cpu="2", node_name="node-a")
    bound["spec"]["containers"][0]["resources"]["requests"]["memory"] = "a lot"

    store.apply("MODIFIED", bound)

    assert Pod.objects.get(name="web").node_name == "node-a"
    assert Node.objects.get(name="node-a").req_cpu == 2000


@pytest.mark.django_db(transaction=True)
def test_our_pending_pod_that_cannot_be_read_fails_its_attempt_with_the_reason_instead_of_waiting_in_silence(
        mirror_node):
    """The API server (v1.20) accepts a cpu request past int64 that we cannot read: the pod is queued like any
    other and its attempt fails alone, saying why, as a FailedScheduling event and PodScheduled=False."""
    from scheduler import loop
    from scheduler.queue import queues
    from scheduler.kube.mirror import PodStore
    from scheduler.models import Event, Pod

    store = PodStore(queue=queues.get_queue())
    store.apply("ADDED", kube_pod("huge", cpu="9223372036854775808"))

    row = Pod.objects.get(name="huge")
    assert (row.node_name, row.assumed_node) == ("", "") and row.queued_at is not None
    assert queues.get_queue().get("default/huge") is not None
    loop.get_worker().schedule_batch()

    row = Pod.objects.get(name="huge")
    assert (row.scheduled_status, row.scheduled_reason) == ("False", "SchedulerError")
    assert "too large" in row.scheduled_message
    assert Event.objects.filter(involved_name="huge", reason="FailedScheduling", message__contains="too large").exists()
