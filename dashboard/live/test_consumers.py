"""The live websocket through the real ASGI stack (origin check, session auth) over channels-redis on real Redis."""

import asyncio
import json
import time

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import Client
from django.utils import timezone

from scheduler.testing.deploy import deploy_settings
from scheduler.models import Binding, Node, Pod
from scheduler.queue.queues import get_queue

from . import publish, state
from .feeds import NODE_STATIC_FRAME_BYTES
from .routing import websocket_application
from .tally import LAST_ITEMS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

ORIGIN = b"http://localhost"
FRAME_BYTES = 16_384  # an overview frame's bound, whatever the burst
APPLICATION = websocket_application()  # what config/asgi.py serves on websockets, as the deploy's settings allow


@pytest.fixture(autouse=True)
def _fresh_state():
    state.reset()
    yield
    state.reset()


@pytest_asyncio.fixture(autouse=True)
async def _close_thread_connections():
    """The consumers query from a worker thread; close its connection so the test database can be dropped."""
    yield
    await sync_to_async(connections.close_all)()


def _session_cookie() -> str:
    user = get_user_model().objects.create_user("viewer", password="pw")
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


@pytest.fixture
def cookie(db):
    return _session_cookie()


def socket(view="overview", cookie=None, origin=ORIGIN):
    headers = [(b"host", b"localhost"), (b"origin", origin)]
    if cookie:
        headers.append((b"cookie", f"sessionid={cookie}".encode()))
    return WebsocketCommunicator(APPLICATION, f"/ws/live/{view}/", headers=headers)


async def frame(ws, timeout=30):
    return json.loads(await ws.receive_from(timeout=timeout))


def _bind_rows(start: int, n: int) -> list:
    """n real pods bound (rows in Postgres), and the loop's (item, pod, seconds) for each."""
    now = timezone.now()
    pods = Pod.objects.bulk_create([Pod(namespace="live", name=f"p{i}", uid=f"u{i}", manifest={}, created_at=now,
                                        queued_at=now, node_name="n1", phase=Pod.RUNNING, bound_at=now)
                                    for i in range(start, start + n)])
    Binding.objects.bulk_create([Binding(pod=p, namespace="live", pod_name=p.name, pod_uid=p.uid, node_name="n1",
                                         bound_at=now) for p in pods])
    return [("n1", p, 0.001) for p in pods]


async def test_an_anonymous_socket_is_closed_with_4401_and_nothing_else():
    ws = socket()
    await ws.connect()
    out = await ws.receive_output(timeout=5)
    nothing_more = await ws.receive_nothing(timeout=0.5)
    await ws.disconnect()  # ends the application instance (it would otherwise outlive the test's loop)
    # 4401 is what live.js takes as "log in again" (a refused handshake would show the browser only 1006).
    assert out == {"type": "websocket.close", "code": 4401}
    assert nothing_more


async def test_a_socket_from_another_origin_is_refused(cookie):
    ws = socket(cookie=cookie, origin=b"http://evil.example")
    connected, _ = await ws.connect()
    await ws.disconnect()  # ends the application instance (it would otherwise outlive the test's loop)
    assert not connected


# (Origin, Host) of a websocket against the kubernetes deploy's own settings (deploy/config.yaml): a page of
# one of its listed hosts is let in; another site's page, a DNS-rebound name and a client sending no Origin
# are refused before the session is even read.
DEPLOY_ORIGINS = [
    ("https://schedboard.example.com", "schedboard.example.com", True),
    ("http://schedboard-web.schedboard.svc", "schedboard-web.schedboard.svc", True),
    ("http://evil.example", "schedboard.example.com", False),
    ("http://rebound.evil.example", "rebound.evil.example", False),
    (None, "schedboard.example.com", False),
]


@pytest.mark.parametrize("origin,host,accepted", DEPLOY_ORIGINS)
async def test_with_the_deploy_s_settings_only_a_listed_origin_opens_a_socket(cookie, settings, origin, host, accepted):
    deployed = await sync_to_async(deploy_settings)()
    settings.ALLOWED_HOSTS, settings.DEBUG = deployed["ALLOWED_HOSTS"], deployed["DEBUG"]
    headers = [(b"host", host.encode()), (b"cookie", f"sessionid={cookie}".encode())]
    if origin:
        headers.append((b"origin", origin.encode()))
    ws = WebsocketCommunicator(websocket_application(), "/ws/live/overview/", headers=headers)
    connected, _ = await ws.connect()
    await ws.disconnect()
    assert connected is accepted


async def test_a_logged_in_socket_gets_a_snapshot_first(cookie):
    await sync_to_async(_bind_rows)(0, 3)
    ws = socket(cookie=cookie)
    connected, _ = await ws.connect()
    assert connected
    first = await frame(ws)
    await ws.disconnect()
    assert first["full"] is True and first["view"] == "overview"
    assert [b[1] for b in first["recent"]["bindings"]] == ["p0", "p1", "p2"]
    assert set(first["gauges"]) == {"active", "backoff", "unschedulable", "binding"}


async def test_a_burst_of_5000_bindings_arrives_in_few_bounded_frames_that_add_up(cookie):
    items = await sync_to_async(_bind_rows)(0, 5000)
    ws = socket(cookie=cookie)
    assert (await ws.connect())[0]
    assert (await frame(ws))["full"] is True
    # A publisher with room for the whole burst: this test is about coalescing, not dropping.
    publisher = publish.Publisher(buffer=6000)
    now = timezone.now()
    started = time.monotonic()
    for item in items:
        publisher.publish(publish.bind_message([item], [], now))
    frames, bound, shown = [], 0, []
    while bound < 5000:
        raw = await ws.receive_from(timeout=60)
        f = json.loads(raw)
        frames.append((len(raw), f))
        bound += f["counts"]["bound"]
        shown = (shown + [b[1] for b in f["bindings"]])[-LAST_ITEMS:]
    elapsed = time.monotonic() - started
    await ws.disconnect()
    assert publisher.dropped == 0
    assert bound == 5000  # every binding counted exactly once, no snapshot needed
    assert not any(f["full"] for _, f in frames)
    # At most SCHEDBOARD_LIVE_FPS (4) frames a second, plus the one already due when the burst began.
    assert len(frames) <= elapsed * 4 + 2
    assert max(size for size, _ in frames) <= FRAME_BYTES
    assert shown == [f"p{i}" for i in range(5000 - LAST_ITEMS, 5000)]
    assert sum(n for _, f in frames for _, n in f["commits"]) == 5000


async def test_a_reconnecting_page_gets_a_snapshot_with_what_it_missed(cookie):
    ws = socket(cookie=cookie)
    assert (await ws.connect())[0]
    assert (await frame(ws))["recent"]["bindings"] == []
    await ws.disconnect()
    await sync_to_async(_bind_rows)(0, 20)  # bound while the page was away
    state.reset()
    ws = socket(cookie=cookie)
    assert (await ws.connect())[0]
    again = await frame(ws)
    await ws.disconnect()
    assert again["full"] is True
    assert [b[1] for b in again["recent"]["bindings"]] == [f"p{i}" for i in range(20 - LAST_ITEMS, 20)]


async def test_a_gap_in_the_events_makes_the_next_frame_a_snapshot(cookie):
    ws = socket(cookie=cookie)
    assert (await ws.connect())[0]
    await frame(ws)
    layer = get_channel_layer()
    event = {"type": publish.EVENT_TYPE, "src": "worker-x", "bound": 1}
    await layer.group_send(publish.GROUP, {**event, "seq0": 1, "seq1": 1})
    f = await frame(ws)
    while f["counts"]["bound"] == 0:  # an idle beat may come first
        f = await frame(ws)
    assert f["full"] is False
    await layer.group_send(publish.GROUP, {**event, "seq0": 7, "seq1": 7})  # 2..6 were lost on the way
    f = await frame(ws)
    while f["counts"]["bound"] == 0:
        f = await frame(ws)
    await ws.disconnect()
    assert f["full"] is True and "recent" in f


async def test_a_full_frame_lists_each_binding_once_with_this_interval_s_events_merged_in(cookie):
    await sync_to_async(_bind_rows)(0, 3)
    ws = socket(cookie=cookie)
    assert (await ws.connect())[0]
    await frame(ws)
    layer = get_channel_layer()
    event = {"type": publish.EVENT_TYPE, "src": "worker-x"}
    await layer.group_send(publish.GROUP, {**event, "seq0": 1, "seq1": 1})
    # After a gap: p2 is already in the database (and in `recent`), p9 is not committed yet.
    now = time.time()
    await layer.group_send(publish.GROUP, {**event, "seq0": 7, "seq1": 7, "bound": 2,
                                           "bindings": [["live", "p2", "n1", 1.0, now], ["live", "p9", "n1", 1.0, now + 1]],
                                           "failed": [["live", "f1", "unschedulable", "0/1 nodes", now]] * 2})
    f = await frame(ws)
    while not f["full"]:
        f = await frame(ws)
    await ws.disconnect()
    # The page replaces its lists with these: each pod once, nothing of the interval missing.
    assert [b[1] for b in f["recent"]["bindings"]] == ["p0", "p1", "p2", "p9"]
    assert [x[1] for x in f["recent"]["failed"]] == ["f1"]


async def test_the_queue_view_lists_each_sub_queue_with_priority_attempts_and_last_failure(cookie):
    q = await sync_to_async(get_queue)()
    await sync_to_async(q.add)("ns/waiting", 5)
    await sync_to_async(q.add)("ns/failing", 0)
    infos = await sync_to_async(q.pop)(2)
    failing = next(i for i in infos if i.key == "ns/failing")
    await sync_to_async(q.add_unschedulable_if_not_present)(failing, True, "0/3 nodes are available: 3 Insufficient cpu.")
    await sync_to_async(q.add)("ns/next", 1)
    ws = socket("queue", cookie=cookie)
    assert (await ws.connect())[0]
    f = await frame(ws)
    await ws.disconnect()
    assert f["lengths"] == {"active": 1, "backoff": 0, "unschedulable": 1, "in_flight": 1, "gated": 0}
    assert [row[:3] for row in f["lists"]["active"]] == [["ns/next", 1, 0]]
    (row,) = f["lists"]["unschedulable"]
    assert row[0] == "ns/failing" and row[2] == 1 and row[6] == "0/3 nodes are available: 3 Insufficient cpu."
    assert row[5] > row[4]  # its backoff expiry, after the time it was queued


class NodesPage:
    """What nodes.js keeps: rows by name, a new set replacing the old once all its rows arrived."""

    def __init__(self):
        self.rows, self.incoming, self.total = {}, None, None

    def apply(self, f):
        if "start" in f:
            self.incoming, self.total = set(), f["start"]
        for row in f.get("nodes", ()):
            self.rows[row[0]] = row
            if self.incoming is not None:
                self.incoming.add(row[0])
        if self.incoming is not None and len(self.incoming) >= self.total:
            self.rows = {k: v for k, v in self.rows.items() if k in self.incoming}
            self.incoming = None
        for name, *u in f.get("changed", ()):
            if name in self.rows:
                self.rows[name] = [*self.rows[name][:8], u]

    @property
    def complete(self):
        return self.total is not None and self.incoming is None


def _make_nodes(n, label=lambda i: {"zone": "a"}):
    Node.objects.bulk_create([Node(name=f"node-{i:04}", manifest={"metadata": {"labels": label(i)},
                                                                 "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]}
                                                                 if i == 1 else {}},
                                   alloc_cpu=4000, alloc_memory=8 << 30, alloc_pods=110) for i in range(n)])


async def test_the_nodes_view_sends_every_node_once_then_only_changed_rows(cookie):
    await sync_to_async(_make_nodes)(30)
    ws = socket("nodes", cookie=cookie)
    assert (await ws.connect())[0]
    first = await frame(ws)
    assert first["full"] is True and first["start"] == 30 and len(first["nodes"]) == 30
    assert first["nodes"][1][0] == "node-0001" and first["nodes"][1][5] == ["gpu:NoSchedule"]
    assert first["nodes"][1][6] == {"zone": "a"} and first["nodes"][1][7] == "Ready"
    assert first["nodes"][1][8] == [0, 0, 0, 0]
    await sync_to_async(lambda: Node.objects.filter(name="node-0007").update(req_cpu=1500, req_pods=3))()
    f = await frame(ws)
    await ws.disconnect()
    assert f["full"] is False and "nodes" not in f and f["changed"] == [["node-0007", 1500, 0, 3, 0]]


# Any nodes frame's bound, whatever the cluster's size: the static rows' budget and one row over it.
NODE_FRAME_LIMIT = NODE_STATIC_FRAME_BYTES + 16 * 1024


async def test_at_5000_nodes_every_frame_is_bounded_and_the_page_gets_every_row(cookie):
    labels = lambda i: {"zone": f"zone-{i % 3}", "kubernetes.io/hostname": f"node-{i:04}",  # noqa: E731
                        "node.kubernetes.io/instance-type": "m5.2xlarge", "team": f"team-{i % 17}"}
    await sync_to_async(_make_nodes)(5000, labels)
    ws = socket("nodes", cookie=cookie)
    assert (await ws.connect())[0]
    page, sizes = NodesPage(), []
    while not page.complete:
        raw = await ws.receive_from(timeout=30)
        sizes.append(len(raw))
        page.apply(json.loads(raw))
    assert len(page.rows) == 5000 and len(sizes) > 1
    assert page.rows["node-4321"][6]["kubernetes.io/hostname"] == "node-4321"
    # A node removed and another changed: a new set, in bounded frames again, replaces the old one.
    await sync_to_async(lambda: Node.objects.filter(name="node-0000").delete())()
    await sync_to_async(lambda: Node.objects.filter(name="node-0002").update(req_cpu=700))()
    page.total = None
    while not page.complete:
        raw = await ws.receive_from(timeout=30)
        sizes.append(len(raw))
        page.apply(json.loads(raw))
    await ws.disconnect()
    assert max(sizes) <= NODE_FRAME_LIMIT
    assert len(page.rows) == 4999 and "node-0000" not in page.rows and page.rows["node-0002"][8][0] == 700


async def test_viewers_in_a_process_share_one_read_of_the_node_manifests(cookie, monkeypatch):
    await sync_to_async(_make_nodes)(30)
    reads = []
    real = state.node_static
    monkeypatch.setattr(state, "node_static", lambda: reads.append(1) or real())
    sockets = [socket("nodes", cookie=cookie) for _ in range(3)]
    for ws in sockets:
        assert (await ws.connect())[0]
        assert len((await frame(ws))["nodes"]) == 30
    for ws in sockets:
        await ws.disconnect()
    assert len(reads) == 1


# ---- one frame per page, not per socket ---------------------------------------------------------------------

def _group_members() -> int:
    """Members of the live group in Redis: one per process that has a live socket open."""
    import redis as redis_client
    from django.conf import settings

    r = redis_client.Redis.from_url(settings.REDIS_URL)
    return r.zcard(f"{settings.SCHEDBOARD_LIVE_PREFIX}:group:{publish.GROUP}".encode())


async def _frame_with_bindings(ws, timeout=30):
    deadline = time.monotonic() + timeout
    f = await frame(ws)
    while f["counts"]["bound"] == 0:  # an idle beat may come first (but not for ever)
        assert time.monotonic() < deadline, "no frame with the bindings"
        f = await frame(ws)
    return f


async def test_sockets_on_one_page_get_the_same_frame_built_once_each_with_its_own_number(cookie):
    sockets = [socket(cookie=cookie) for _ in range(5)]
    for ws in sockets:
        assert (await ws.connect())[0]
    firsts = [await frame(ws) for ws in sockets]
    await get_channel_layer().group_send(publish.GROUP, {"type": publish.EVENT_TYPE, "src": "w", "seq0": 1, "seq1": 1,
                                                         "bound": 3, "commits": [[time.time(), 3]]})
    seen = [await _frame_with_bindings(ws) for ws in sockets]
    for ws in sockets:
        await ws.disconnect()
    assert all(f["full"] for f in firsts) and [f["n"] for f in firsts] == [0] * 5
    # One frame (built at one instant, "t", for everyone): only each socket's own frame number may differ.
    assert len({json.dumps({k: v for k, v in f.items() if k != "n"}, sort_keys=True) for f in seen}) == 1
    assert seen[0]["counts"]["bound"] == 3


async def test_a_socket_joining_a_watched_page_starts_with_a_snapshot_and_counts_nothing_twice(cookie):
    await sync_to_async(_bind_rows)(0, 2)
    first = socket(cookie=cookie)
    assert (await first.connect())[0]
    assert (await frame(first))["full"] is True
    layer = get_channel_layer()
    await layer.group_send(publish.GROUP, {"type": publish.EVENT_TYPE, "src": "w", "seq0": 1, "seq1": 1, "bound": 1})
    assert (await _frame_with_bindings(first))["full"] is False
    second = socket(cookie=cookie)
    assert (await second.connect())[0]
    joined = await frame(second)
    assert joined["full"] is True and joined["n"] == 0
    assert [b[1] for b in joined["recent"]["bindings"]] == ["p0", "p1"]
    await layer.group_send(publish.GROUP, {"type": publish.EVENT_TYPE, "src": "w", "seq0": 2, "seq1": 2, "bound": 4})
    a, b = await _frame_with_bindings(first), await _frame_with_bindings(second)
    for ws in (first, second):
        await ws.disconnect()
    assert a["counts"]["bound"] == b["counts"]["bound"] == 4 and not a["full"] and not b["full"]


async def test_a_process_joins_the_live_group_once_whatever_its_sockets_and_leaves_it_with_the_last(cookie):
    sockets = [socket(view, cookie=cookie) for view in ("overview", "overview", "queue", "nodes", "nodes")]
    for ws in sockets:
        assert (await ws.connect())[0]
        await frame(ws)
    assert await sync_to_async(_group_members)() == 1
    for ws in sockets:
        await ws.disconnect()
    assert await sync_to_async(_group_members)() == 0


async def test_each_nodes_socket_gets_every_row_of_its_own(cookie):
    await sync_to_async(_make_nodes)(30)
    first = socket("nodes", cookie=cookie)
    assert (await first.connect())[0]
    assert len((await frame(first))["nodes"]) == 30
    await sync_to_async(lambda: Node.objects.filter(name="node-0003").update(req_cpu=900))()
    assert (await frame(first))["changed"] == [["node-0003", 900, 0, 0, 0]]
    second = socket("nodes", cookie=cookie)  # the page's rows depend on what its socket has had: all of them
    assert (await second.connect())[0]
    f = await frame(second)
    for ws in (first, second):
        await ws.disconnect()
    assert f["start"] == 30 and len(f["nodes"]) == 30 and f["nodes"][3][8][0] == 900


async def test_a_slow_read_of_the_gauges_holds_no_frame_back_after_the_first(cookie, monkeypatch):
    real = state.gauges
    monkeypatch.setattr(state, "gauges", lambda: time.sleep(2.0) or real())
    ws = socket(cookie=cookie)
    assert (await ws.connect())[0]
    await frame(ws)  # the first waits: there is nothing to show yet
    layer = get_channel_layer()
    for seq in (1, 2):
        await asyncio.sleep(0.3)  # past the cached read's age: each frame asks for a new one
        sent = time.monotonic()
        await layer.group_send(publish.GROUP, {"type": publish.EVENT_TYPE, "src": "w", "seq0": seq, "seq1": seq,
                                               "bound": 1})
        f = await _frame_with_bindings(ws)
        assert time.monotonic() - sent < 1.0 and set(f["gauges"]) == {"active", "backoff", "unschedulable", "binding"}
    await ws.disconnect()


async def test_an_unknown_view_is_refused(cookie):
    ws = socket("nope", cookie=cookie)
    connected, _ = await ws.connect()
    await ws.disconnect()  # ends the application instance (it would otherwise outlive the test's loop)
    assert not connected


async def test_a_quiet_socket_outlives_the_layer_s_blocking_read_and_still_gets_events(cookie):
    ws = socket(cookie=cookie)
    assert (await ws.connect())[0]
    for _ in range(8):  # eight idle beats, about a second apart: longer than the layer's 5 s blocking read
        f = await frame(ws)
        assert f["counts"]["bound"] == 0
    await get_channel_layer().group_send(publish.GROUP, {"type": publish.EVENT_TYPE, "src": "w", "seq0": 1, "seq1": 1,
                                                         "bound": 1})
    f = await frame(ws)
    while f["counts"]["bound"] == 0:
        f = await frame(ws)
    await ws.disconnect()
    assert f["counts"]["bound"] == 1


# ---- a socket ends with its session ----------------------------------------------------------------------------

def _log_out(key):
    browser = Client()
    browser.cookies["sessionid"] = key
    assert browser.post("/accounts/logout/").status_code == 302  # the logout view flushes the session


def _deactivate(key):
    get_user_model().objects.filter(username="viewer").update(is_active=False)


def _change_password_elsewhere(key):
    user = get_user_model().objects.get(username="viewer")
    user.set_password("changed-elsewhere")
    user.save()  # the session's auth hash no longer matches: Django logs it out on its next page


def _expire(key):
    from django.contrib.sessions.models import Session

    Session.objects.filter(session_key=key).update(expire_date=timezone.now() - timezone.timedelta(seconds=1))


def _delete_user(key):
    get_user_model().objects.filter(username="viewer").delete()


SESSION_ENDINGS = [_log_out, _deactivate, _change_password_elsewhere, _expire, _delete_user]
CHECK_PERIOD = 0.2  # seconds: the injected period of the re-check (the default is 15 s)


async def _closed_with(ws, timeout):
    """The close code the socket gets within `timeout` seconds (frames before it skipped), or None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # (receive_output's own timeout would cancel the application: poll instead.)
        if await ws.receive_nothing(timeout=0.05, interval=0.01):
            continue
        out = await ws.receive_output()
        if out["type"] == "websocket.close":
            return out["code"]
    return None


@pytest.mark.parametrize("end", SESSION_ENDINGS, ids=lambda f: f.__name__.strip("_"))
async def test_a_socket_whose_session_ended_is_closed_with_4401_within_the_check_period(cookie, settings, end):
    settings.SCHEDBOARD_LIVE_SESSION_CHECK = CHECK_PERIOD
    ws = socket(cookie=cookie)
    assert (await ws.connect())[0]
    assert (await frame(ws))["full"] is True
    await sync_to_async(end)(cookie)
    # Within one period and the check's own round trip; 4401 sends the page to the login page.
    code = await _closed_with(ws, timeout=CHECK_PERIOD + 5)
    await ws.disconnect()
    assert code == 4401


async def test_a_socket_whose_session_lives_on_stays_open_across_checks(cookie, settings):
    settings.SCHEDBOARD_LIVE_SESSION_CHECK = CHECK_PERIOD
    ws = socket(cookie=cookie)
    assert (await ws.connect())[0]
    assert (await frame(ws))["full"] is True
    browser = Client()
    browser.cookies["sessionid"] = cookie
    assert (await sync_to_async(browser.get)("/")).status_code == 200  # the user still browses
    code = await _closed_with(ws, timeout=CHECK_PERIOD * 8)  # eight checks
    await ws.disconnect()
    assert code is None


def _node_fails_its_pod_is_evicted_and_the_node_deleted():
    """The control plane's side of a node loss (issue 16), through the controllers' own entry points."""
    import yaml

    from scheduler.cluster.disruption import DELETION_BY_TAINT_MANAGER, evict
    from scheduler.cluster.services import cluster_apply, node_delete
    from scheduler.controllers.node_lifecycle import node_set_ready
    from scheduler.manifests.files import parse_documents

    try:
        cluster_apply(parse_documents(yaml.safe_dump_all([
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "zone-a-0"},
             "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "live"},
             "spec": {"nodeName": "zone-a-0", "containers": [{"name": "c", "image": "app:1"}]}}]), "marks.yaml"))
        node_set_ready(name="zone-a-0", status="False")
        assert evict(namespace="live", name="web-0", reason=DELETION_BY_TAINT_MANAGER,
                     message="Taint manager: deleting due to NoExecute taint")
        assert node_delete(name="zone-a-0")
    finally:
        connections.close_all()


async def test_a_node_s_failure_its_evictions_and_its_deletion_reach_the_overview_for_the_chart_marks(cookie):
    ws = socket(cookie=cookie)
    assert (await ws.connect())[0]
    assert (await frame(ws))["full"] is True
    await sync_to_async(_node_fails_its_pod_is_evicted_and_the_node_deleted, thread_sensitive=False)()
    node_events, disruptions, disrupted = [], [], 0
    deadline = time.monotonic() + 30
    while (len(node_events) < 2 or not disruptions) and time.monotonic() < deadline:
        f = await frame(ws)
        node_events += [e[:2] for e in f["node_events"]]
        disruptions += [d[:4] for d in f["disruptions"]]
        disrupted += f["counts"]["disrupted"]
    await ws.disconnect()
    assert node_events == [["zone-a-0", "NotReady"], ["zone-a-0", "Deleted"]]
    assert disruptions == [["live", "web-0", "zone-a-0", "DeletionByTaintManager"]]
    assert disrupted == 1


async def test_a_page_opened_after_a_node_loss_gets_its_marks_in_the_first_frame(cookie):
    await sync_to_async(_node_fails_its_pod_is_evicted_and_the_node_deleted, thread_sensitive=False)()
    ws = socket(cookie=cookie)
    assert (await ws.connect())[0]
    first = await frame(ws)
    await ws.disconnect()
    assert first["full"] is True
    marks = first["recent"]["marks"]
    assert [e[:2] for e in marks["node_events"]] == [["zone-a-0", "NotReady"], ["zone-a-0", "Deleted"]]
    assert [d[:4] for d in marks["disruptions"]] == [["live", "web-0", "zone-a-0", "DeletionByTaintManager"]]
    assert all(time.time() - 60 < t <= time.time() for *_, t in marks["node_events"] + marks["disruptions"])


def test_recorded_marks_name_the_states_as_the_live_feed_and_leave_out_what_is_older_than_the_charts(db):
    from datetime import timedelta

    from scheduler.controllers.node_lifecycle import node_set_ready
    from scheduler.models import Event
    from scheduler.testing.loop import apply, node

    apply(node("a"), node("b"))
    node_set_ready(name="a", status="False")
    node_set_ready(name="b", status="Unknown")
    node_set_ready(name="a", status="True")
    assert [e[:2] for e in state.recent_marks()["node_events"]] == [["a", "NotReady"], ["b", "Unreachable"],
                                                                   ["a", "Ready"]]
    Event.objects.update(last_timestamp=timezone.now() - timedelta(seconds=state.MARKS_WINDOW_S + 1))
    assert state.recent_marks()["node_events"] == []


def _a_pod_preempts_another(clock):
    """Through the loop as the workers run it: a high-priority pod's PostFilter nominates a node, the preempt
    task evicts the victim, the preemptor binds (after its backoff: `clock` is the queue's)."""
    from scheduler.testing.loop import apply, drain, node, pod

    try:
        apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
              node("node-a", cpu="1"), pod("low", cpu="800m", nodeName="node-a"))
        apply(pod("vip", cpu="800m", priorityClassName="high"))
        drain(clock)
        assert Pod.objects.get(name="vip").node_name == "node-a" and not Pod.objects.filter(name="low").exists()
    finally:
        connections.close_all()


async def test_a_preemption_reaches_the_overview_as_rates_and_a_mark_for_its_victim(cookie, clock):
    ws = socket(cookie=cookie)
    assert (await ws.connect())[0]
    assert (await frame(ws))["full"] is True
    await sync_to_async(_a_pod_preempts_another, thread_sensitive=False)(clock)
    attempts = victims = 0
    rates, disruptions = {}, []
    deadline = time.monotonic() + 30
    while (not attempts or not disruptions) and time.monotonic() < deadline:
        f = await frame(ws)
        attempts += f["counts"]["preemption_attempts"]
        victims += f["counts"]["preemption_victims"]
        rates = f["rates"] if f["rates"]["preemption_attempts"] else rates
        disruptions += [d[:4] for d in f["disruptions"]]
    await ws.disconnect()
    assert (attempts, victims) == (1, 1)  # as scheduler_preemption_attempts_total and _victims move
    assert rates["preemption_attempts"] > 0 and rates["preemption_victims"] > 0
    assert disruptions == [["default", "low", "node-a", "PreemptionByScheduler"]]  # the chart's mark
