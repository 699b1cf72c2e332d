"""The kubernetes backend against a real kube-apiserver and etcd on loopback.

One replica runs in this process (leader election, list+watch into Postgres, the committer) with
the scheduling loop; the tests act on the cluster through the API, as a user would, and read the
outcome back from the API. The API server runs without its watch cache, so that compacting etcd
makes a watch's old resourceVersion really gone (410).
"""

import json
import urllib.request

import pytest

from scheduler import loop
from scheduler.kube.client import ApiError, call
from scheduler.models import Attempt, Binding, Node, Pod
from scheduler.testing.kube import (NS, empty_cluster, leading_replica, node, pod, read_pod, run_in_threads,
                                    scheduled_condition, wait_for_cluster)

KUBE_APISERVER_ARGS = ["--watch-cache=false"]  # so that compacting etcd makes an old resourceVersion gone

pytestmark = [
    pytest.mark.kube,
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning"),
]


@pytest.fixture(scope="module")
def api(kube_cluster):
    from kubernetes import client

    api_client = kube_cluster.api_client()
    yield client.CoreV1Api(api_client), client.EventsV1Api(api_client), client.CoordinationV1Api(api_client)
    api_client.close()


@pytest.fixture
def core(api):
    core = api[0]
    empty_cluster(core)  # each test starts from an empty cluster
    return core


@pytest.fixture
def replica(kube_cluster, core):
    """One replica of ours, leading, with its watches synced; the test drives the loop and the committer."""
    with leading_replica(kube_cluster.api_client()) as controller:
        yield controller


@pytest.fixture
def running(replica):
    """The replica's committer and the scheduling loop running in threads, as `kube run --inline` does."""
    with run_in_threads(replica):
        yield replica


def events_for(events_api, name):
    items = call(events_api.list_namespaced_event, NS)["items"]
    return [e for e in items if e["regarding"]["name"] == name]


def db_pod(name):
    return Pod.objects.filter(namespace=NS, name=name).first()


def node_usage(name):
    n = Node.objects.get(name=name)
    return n.req_cpu, n.req_memory, n.req_pods


# ---- binding ------------------------------------------------------------------------------------

def test_it_binds_pods_with_our_scheduler_name_and_the_api_shows_them_scheduled(running, core, api):
    call(core.create_node, node("node-a"))
    call(core.create_node, node("node-b"))
    for i in range(6):
        call(core.create_namespaced_pod, NS, pod(f"web-{i}"))

    wait_for_cluster(lambda: all(read_pod(core, f"web-{i}")["spec"].get("nodeName") for i in range(6)), "6 pods bound")

    for i in range(6):
        obj = read_pod(core, f"web-{i}")
        assert obj["spec"]["nodeName"] in ("node-a", "node-b")
        assert scheduled_condition(obj)["status"] == "True"  # set by the API server on binding
    wait_for_cluster(lambda: len(events_for(api[1], "web-0")) == 1, "the Scheduled event")
    event = events_for(api[1], "web-0")[0]
    bound_to = read_pod(core, "web-0")["spec"]["nodeName"]
    assert (event["type"], event["reason"], event["action"]) == ("Normal", "Scheduled", "Binding")
    assert event["note"] == f"Successfully assigned default/web-0 to {bound_to}"
    assert event["reportingController"] == "default-scheduler"
    assert event["reportingInstance"].startswith("default-scheduler-")
    # The mirror and the audit agree with the API server.
    wait_for_cluster(lambda: Binding.objects.count() == 6, "6 Binding rows")
    assert {(p.name, p.node_name) for p in Pod.objects.all()} == {
        (f"web-{i}", read_pod(core, f"web-{i}")["spec"]["nodeName"]) for i in range(6)}
    assert sum(node_usage(n)[0] for n in ("node-a", "node-b")) == 6 * 500


def test_other_schedulers_pods_are_left_alone_but_count_against_their_node(running, core, api):
    call(core.create_node, node("node-a", cpu="2"))
    call(core.create_namespaced_pod, NS, pod("theirs-bound", cpu="1500m", scheduler="other-scheduler", node_name="node-a"))
    call(core.create_namespaced_pod, NS, pod("theirs-pending", cpu="100m", scheduler="other-scheduler"))
    call(core.create_namespaced_pod, NS, pod("ours", cpu="1"))

    # The pod on node-a has no lower priority than ours: nothing to preempt.
    message = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    wait_for_cluster(lambda: (scheduled_condition(read_pod(core, "ours")) or {}).get("message") == message,
             "the FailedScheduling condition")
    assert node_usage("node-a")[0] == 1500
    assert read_pod(core, "theirs-pending")["spec"].get("nodeName") is None
    assert scheduled_condition(read_pod(core, "theirs-pending")) is None  # never touched
    assert events_for(api[1], "theirs-pending") == []
    assert not Attempt.objects.filter(pod_name__startswith="theirs").exists()


def test_an_unschedulable_pod_gets_the_event_and_condition_then_a_new_node_unblocks_it(running, core, api):
    call(core.create_node, node("small", cpu="1"))
    # The node and pod watches are separate streams: without this, the pod may be scheduled before the node
    # is mirrored, and fail with "no nodes available" instead.
    wait_for_cluster(lambda: Node.objects.filter(name="small").exists(), "the node mirrored")
    call(core.create_namespaced_pod, NS, pod("big", cpu="2"))

    message = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    wait_for_cluster(lambda: scheduled_condition(read_pod(core, "big")) is not None, "the PodScheduled condition")
    condition = scheduled_condition(read_pod(core, "big"))
    assert (condition["status"], condition["reason"], condition["message"]) == ("False", "Unschedulable", message)
    wait_for_cluster(lambda: events_for(api[1], "big"), "the FailedScheduling event")
    event = events_for(api[1], "big")[0]
    assert (event["type"], event["reason"], event["action"], event["note"]) == (
        "Warning", "FailedScheduling", "Scheduling", message)
    assert event["regarding"]["kind"] == "Pod" and event["regarding"]["uid"] == read_pod(core, "big")["metadata"]["uid"]
    assert read_pod(core, "big")["spec"].get("nodeName") is None

    call(core.create_node, node("large", cpu="8"))

    wait_for_cluster(lambda: read_pod(core, "big")["spec"].get("nodeName") == "large", "the pod bound to the new node")
    assert scheduled_condition(read_pod(core, "big"))["status"] == "True"


# ---- watches ------------------------------------------------------------------------------------

def test_a_dropped_watch_resumes_from_its_resource_version_without_losing_an_event(running, core):
    call(core.create_node, node("node-a"))
    reflector = running.pods
    lists_before = reflector.lists
    reflector.gate.clear()  # hold the reconnection back while the cluster changes
    wait_for_cluster(reflector.interrupt, "a watch connection to drop")
    for i in range(4):
        call(core.create_namespaced_pod, NS, pod(f"late-{i}"))
    call(core.delete_namespaced_pod, "late-3", NS, grace_period_seconds=0)
    reflector.gate.set()

    wait_for_cluster(lambda: all(read_pod(core, f"late-{i}")["spec"].get("nodeName") for i in range(3)), "3 pods bound")
    wait_for_cluster(lambda: Pod.objects.filter(name__startswith="late-").count() == 3, "the deletion mirrored")
    assert reflector.lists == lists_before  # resumed, not listed again
    assert reflector.resumes >= 1
    wait_for_cluster(lambda: Binding.objects.filter(pod_name__startswith="late-").count() == 3, "3 Binding rows")
    assert sorted(Binding.objects.filter(pod_name__startswith="late-").values_list("pod_name", flat=True)) == [
        "late-0", "late-1", "late-2"]  # each event once: no pod bound twice, the deleted one never


def test_a_watch_whose_resource_version_was_compacted_away_lists_again(running, core, kube_cluster):
    call(core.create_node, node("node-a"))
    reflector = running.pods
    lists_before = reflector.lists
    reflector.gate.clear()
    wait_for_cluster(reflector.interrupt, "a watch connection to drop")
    call(core.create_namespaced_pod, NS, pod("after-gap"))
    # One more write after the pod: compacting at the newest revision then removes the pod's own, the
    # first one the watch would resume from (were the pod the newest write, it would survive and the
    # watch resume without a 410 — CI saw that when no lease renewal happened to write in between).
    call(core.create_namespaced_config_map, NS, {"metadata": {"name": "after-the-gap"}})
    revision = int(call(core.list_pod_for_all_namespaces)["metadata"]["resourceVersion"])
    _etcd_compact(kube_cluster.etcd_url, revision)
    reflector.gate.set()

    wait_for_cluster(lambda: reflector.lists > lists_before, "a new list after 410 Gone")
    wait_for_cluster(lambda: read_pod(core, "after-gap")["spec"].get("nodeName") == "node-a", "the pod bound")


def _etcd_compact(etcd_url, revision):
    request = urllib.request.Request(f"{etcd_url}/v3/kv/compaction", data=json.dumps({"revision": str(revision)}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as response:
        assert response.status == 200


# ---- 409 and 404 on bind ------------------------------------------------------------------------

def _placed_and_handed_off(core, name, nodes):
    """Create the pod, let the mirror queue it, run one scheduling batch: it is reserved, its binding waits."""
    call(core.create_namespaced_pod, NS, pod(name))
    # Nodes and pods arrive on separate watches: wait for both, or the batch may find no node yet.
    wait_for_cluster(lambda: db_pod(name) is not None and loop.get_worker().queue.get(f"{NS}/{name}") is not None
                     and Node.objects.filter(name__in=nodes).count() == len(nodes), "the pod and its nodes mirrored")
    stats = loop.run_schedule_task()
    assert stats.scheduled == 1
    row = db_pod(name)
    assert row.assumed_node in nodes
    return row.assumed_node


def test_a_409_for_a_pod_already_bound_to_the_same_node_is_a_success(replica, core, api):
    for n in ("node-a", "node-b"):
        call(core.create_node, node(n))
    chosen = _placed_and_handed_off(core, "p", {"node-a", "node-b"})
    _bind_by_hand(core, "p", chosen)  # as if our earlier reply had been lost

    assert replica.committer.run_once(5)

    wait_for_cluster(lambda: db_pod("p").node_name == chosen, "the pod row bound")
    assert Attempt.objects.get(pod_name="p").result == "scheduled"
    assert Binding.objects.get(pod_name="p").node_name == chosen
    assert node_usage(chosen)[2] == 1


def test_a_409_for_a_pod_bound_elsewhere_drops_it_and_releases_our_reservation(replica, core):
    for n in ("node-a", "node-b"):
        call(core.create_node, node(n))
    chosen = _placed_and_handed_off(core, "p", {"node-a", "node-b"})
    other = ({"node-a", "node-b"} - {chosen}).pop()
    _bind_by_hand(core, "p", other)

    assert replica.committer.run_once(5)

    wait_for_cluster(lambda: db_pod("p").node_name == other, "the mirror to record the other binding")
    attempt = Attempt.objects.get(pod_name="p")
    assert attempt.result == "bind_failed"
    assert attempt.message == f"Binding rejected: pod is already bound to node '{other}'"
    assert node_usage(chosen) == (0, 0, 0)
    assert node_usage(other)[2] == 1
    assert loop.get_worker().queue.get(f"{NS}/p") is None
    assert not Binding.objects.exists()


def test_a_pod_deleted_while_its_binding_is_in_flight_is_forgotten(replica, core):
    call(core.create_node, node("node-a"))
    _placed_and_handed_off(core, "p", {"node-a"})
    call(core.delete_namespaced_pod, "p", NS, grace_period_seconds=0)

    assert replica.committer.run_once(5)

    wait_for_cluster(lambda: db_pod("p") is None, "the pod row gone")
    assert node_usage("node-a") == (0, 0, 0)
    assert loop.get_worker().queue.get(f"{NS}/p") is None
    assert Attempt.objects.get(pod_name="p").result == "bind_failed"


def _bind_by_hand(core, name, node_name):
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": NS},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
    call(core.create_namespaced_pod_binding, name, NS, body)
    with pytest.raises(ApiError) as conflict:
        call(core.create_namespaced_pod_binding, name, NS, body)
    assert conflict.value.status == 409


def test_a_binding_whose_reservation_expired_in_the_backlog_is_never_sent(replica, core, api):
    """After a failover the backlog can outlast the assume TTL: the expired reservation's binding must not go
    out on top of the pod that got its room (the API server would bind both: the node overcommitted)."""
    from datetime import timedelta

    from django.utils import timezone

    call(core.create_node, node("only", cpu="1"))
    _placed_and_handed_off(core, "first", {"only"})
    Pod.objects.filter(name="first").update(assumed_at=timezone.now() - timedelta(seconds=60))
    assert loop.reconcile()["expired"] == 1
    call(core.create_namespaced_pod, NS, pod("second", cpu="1"))
    wait_for_cluster(lambda: db_pod("second") is not None and loop.get_worker().queue.get(f"{NS}/second") is not None,
             "the second pod mirrored and queued")
    assert loop.run_schedule_task().scheduled == 1

    while replica.committer.run_once(1):  # both jobs: the stale one first
        pass

    wait_for_cluster(lambda: read_pod(core, "second")["spec"].get("nodeName") == "only", "the second pod bound")
    replica.committer.flush_reports()
    assert not read_pod(core, "first")["spec"].get("nodeName")  # never sent
    assert not events_for(api[1], "first")  # no FailedScheduling: nothing failed in the cluster
    wait_for_cluster(lambda: db_pod("second").node_name == "only", "the mirror to record the binding")
    assert node_usage("only")[0] == 1000  # never more than its allocatable
    assert Attempt.objects.get(pod_name="first").result == "bind_failed"
    assert db_pod("first").assumed_node == "" and db_pod("first").scheduled_reason != "SchedulerError"


# ---- a node gone under a binding (issue 16's loop edges, kubernetes backend) ---------------------
# The API server does not check the node when it accepts a binding: a binding sent after the node was deleted
# (our mirror had not seen the deletion yet) lands on a node that does not exist. Then the cluster's PodGC
# deletes the pod (pkg/controller/podgc: DisruptionTarget condition with reason DeletionByPodGC, phase Failed,
# deleted with grace period 0) and its owner creates a replacement. Here the tests play PodGC and the owner.

def _delete_as_podgc(core, name):
    status = {"status": {"phase": "Failed", "conditions": [{
        "type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
        "message": "PodGC: node no longer exists"}]}}
    call(core.patch_namespaced_pod_status, name, NS, status)
    call(core.delete_namespaced_pod, name, NS, grace_period_seconds=0)


def _no_crash_in_repairs():
    loop.reconcile()
    loop.recount()


def test_a_pod_bound_to_a_node_that_never_existed_counts_against_nothing_until_podgc_deletes_it(running, core):
    call(core.create_node, node("node-b", cpu="1"))
    wait_for_cluster(lambda: Node.objects.filter(name="node-b").exists(), "the node mirrored")
    call(core.create_namespaced_pod, NS, pod("stray", cpu="1", scheduler="other-scheduler", node_name="ghost"))

    wait_for_cluster(lambda: db_pod("stray") is not None and db_pod("stray").node_name == "ghost", "the stray pod mirrored")
    _no_crash_in_repairs()
    assert node_usage("node-b") == (0, 0, 0)
    assert not Node.objects.filter(name="ghost").exists()  # a pod's nodeName never creates a node

    _delete_as_podgc(core, "stray")
    wait_for_cluster(lambda: db_pod("stray") is None, "the pod row gone")
    _no_crash_in_repairs()
    # Its replacement (as its owner would create it) takes the whole node: nothing was left counted.
    call(core.create_namespaced_pod, NS, pod("stray-2", cpu="1"))
    wait_for_cluster(lambda: read_pod(core, "stray-2")["spec"].get("nodeName") == "node-b", "the replacement bound")
    wait_for_cluster(lambda: node_usage("node-b")[0] == 1000, "the replacement counted")
    assert node_usage("node-b")[2] == 1


def test_a_binding_sent_after_its_node_was_deleted_lands_then_podgc_and_the_owner_put_the_pod_on_a_live_node(replica, core):
    call(core.create_node, node("node-a", cpu="1"))
    chosen = _placed_and_handed_off(core, "web-0", {"node-a"})
    assert chosen == "node-a"
    # The node is deleted while the node watch is held back: the mirror still has it, so the binding goes out.
    nodes = replica.nodes
    nodes.gate.clear()
    wait_for_cluster(nodes.interrupt, "the node watch to drop")
    call(core.delete_node, "node-a")
    assert replica.committer.run_once(5)
    assert read_pod(core, "web-0")["spec"]["nodeName"] == "node-a"  # accepted: nodes are not checked at binding
    nodes.gate.set()

    wait_for_cluster(lambda: not Node.objects.filter(name="node-a").exists(), "the node deletion mirrored")
    wait_for_cluster(lambda: db_pod("web-0").node_name == "node-a", "the binding mirrored")
    assert db_pod("web-0").assumed_node == ""
    assert Binding.objects.get(pod_name="web-0").node_name == "node-a"
    assert loop.get_worker().queue.get(f"{NS}/web-0") is None  # bound: not scheduled again by us
    _no_crash_in_repairs()

    call(core.create_node, node("node-b", cpu="1"))
    wait_for_cluster(lambda: Node.objects.filter(name="node-b").exists(), "the new node mirrored")
    assert node_usage("node-b") == (0, 0, 0)  # the pod on the missing node counts against no node

    _delete_as_podgc(core, "web-0")
    wait_for_cluster(lambda: db_pod("web-0") is None, "the pod row gone")
    _no_crash_in_repairs()
    call(core.create_namespaced_pod, NS, pod("web-1", cpu="1"))  # the owner's replacement
    wait_for_cluster(lambda: db_pod("web-1") is not None and loop.get_worker().queue.get(f"{NS}/web-1") is not None,
                     "the replacement mirrored and queued")
    assert loop.run_schedule_task().scheduled == 1
    assert replica.committer.run_once(5)

    wait_for_cluster(lambda: read_pod(core, "web-1")["spec"].get("nodeName") == "node-b", "the replacement bound")
    wait_for_cluster(lambda: db_pod("web-1").node_name == "node-b", "the replacement's binding mirrored")
    assert node_usage("node-b")[0] == 1000 and node_usage("node-b")[2] == 1
    assert Attempt.objects.get(pod_name="web-1").result == "scheduled"


def test_a_node_created_under_the_name_a_bound_pod_already_names_counts_that_pod(running, core):
    """As kube-scheduler's cache, which adds a pod to its node's info whenever the node shows up: a node
    re-created (or created late) under the name counts the pods the API server bound to it."""
    call(core.create_namespaced_pod, NS, pod("early", cpu="1", scheduler="other-scheduler", node_name="late-node"))
    wait_for_cluster(lambda: db_pod("early") is not None and db_pod("early").node_name == "late-node", "the pod mirrored")
    call(core.create_node, node("late-node", cpu="1"))
    wait_for_cluster(lambda: Node.objects.filter(name="late-node").exists(), "the node mirrored")
    wait_for_cluster(lambda: node_usage("late-node") == (1000, 256 * 1024 ** 2, 1), "the pod counted on its node")
    call(core.create_namespaced_pod, NS, pod("ours", cpu="500m"))
    message = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    wait_for_cluster(lambda: (scheduled_condition(read_pod(core, "ours")) or {}).get("message") == message,
                     "ours unschedulable: the node is full")
