"""Preemption on the kubernetes backend against a real kube-apiserver (1.20.2) on loopback: low-priority
pods fill the nodes, a high-priority pod arrives; its victim is deleted through the API (the
DisruptionTarget condition and the Preempted event first), the preemptor is nominated
(status.nominatedNodeName) and then bound; a PDB-protected pod is spared when another choice exists.
PriorityClasses and PodDisruptionBudgets are mirrored (the 1.20 API server has policy/v1beta1 only)."""

import pytest

from scheduler.kube.client import ApiError, call
from scheduler.models import ClusterObject, Pod
from scheduler.testing.kube import NS, empty_cluster, node, pod, read_pod, running_replica, wait_for_cluster

pytestmark = [
    pytest.mark.kube,
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning"),
]


@pytest.fixture(scope="module")
def apis(kube_cluster):
    from kubernetes import client

    api_client = kube_cluster.api_client()
    yield (client.CoreV1Api(api_client), client.EventsV1Api(api_client), client.SchedulingV1Api(api_client),
           client.CustomObjectsApi(api_client))
    api_client.close()


@pytest.fixture
def core(apis):
    core, _, scheduling, custom = apis
    for pc in call(scheduling.list_priority_class)["items"]:
        if not pc["metadata"]["name"].startswith("system-"):
            call(scheduling.delete_priority_class, pc["metadata"]["name"])
    for b in call(custom.list_namespaced_custom_object, "policy", "v1beta1", NS, "poddisruptionbudgets")["items"]:
        call(custom.delete_namespaced_custom_object, "policy", "v1beta1", NS, "poddisruptionbudgets", b["metadata"]["name"])
    empty_cluster(core)
    return core


@pytest.fixture
def running(kube_cluster, core):
    """One replica of ours, leading, its committer and the scheduling loop in threads."""
    with running_replica(kube_cluster.api_client()) as controller:
        yield controller


def with_class(obj, class_name):
    obj["spec"]["priorityClassName"] = class_name
    return obj


def labelled(obj, **labels):
    obj["metadata"]["labels"] = labels
    return obj


def test_a_high_priority_pod_preempts_through_the_api_sparing_the_pdb_protected_pod(running, core, apis):
    _, events_api, scheduling, custom = apis
    call(scheduling.create_priority_class, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                            "metadata": {"name": "high"}, "value": 1000})
    call(custom.create_namespaced_custom_object, "policy", "v1beta1", NS, "poddisruptionbudgets",
         {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": {"name": "db", "namespace": NS},
          "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}})
    wait_for_cluster(lambda: ClusterObject.objects.filter(kind="PriorityClass", name="high").exists()
                     and ClusterObject.objects.filter(kind="PodDisruptionBudget", name="db").exists(),
                     "the class and the budget mirrored")
    call(core.create_node, node("node-a", cpu="1"))
    call(core.create_node, node("node-b", cpu="1"))
    # No controller manager here: the budget's status stays disruptionsAllowed 0, so db-0 is protected.
    call(core.create_namespaced_pod, NS, labelled(pod("db-0", cpu="800m", node_name="node-a"), app="db"))
    call(core.create_namespaced_pod, NS, pod("batch-0", cpu="800m", node_name="node-b"))
    wait_for_cluster(lambda: Pod.objects.filter(name__in=["db-0", "batch-0"]).count() == 2, "the low pods mirrored")
    victim_uid = read_pod(core, "batch-0")["metadata"]["uid"]

    call(core.create_namespaced_pod, NS, with_class(pod("vip", cpu="800m"), "high"))
    # The victim is deleted gracefully, as upstream: it terminates (no kubelet here to finish it) with its condition.
    wait_for_cluster(lambda: read_pod(core, "batch-0")["metadata"].get("deletionTimestamp"), "the victim terminating")
    victim = read_pod(core, "batch-0")
    condition = [c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget"][0]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True", "PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher priority pod")
    vip = read_pod(core, "vip")
    assert vip["spec"]["priority"] == 1000  # the API server's Priority admission
    wait_for_cluster(lambda: read_pod(core, "vip")["status"].get("nominatedNodeName") == "node-b", "the nomination")
    assert not read_pod(core, "vip")["spec"].get("nodeName")  # it waits for the victim to be gone
    call(core.delete_namespaced_pod, "batch-0", NS, grace_period_seconds=0)  # the kubelet's part
    wait_for_cluster(lambda: read_pod(core, "vip")["spec"].get("nodeName") == "node-b", "the preemptor bound on node-b",
                     timeout=60)
    with pytest.raises(ApiError) as gone:
        call(core.read_namespaced_pod, "batch-0", NS)
    assert gone.value.status == 404
    assert read_pod(core, "db-0")["spec"]["nodeName"] == "node-a"
    wait_for_cluster(lambda: any(e["reason"] == "Preempted" for e in call(events_api.list_namespaced_event, NS)["items"]),
                     "the Preempted event")
    [event] = [e for e in call(events_api.list_namespaced_event, NS)["items"] if e["reason"] == "Preempted"]
    assert (event["type"], event["action"], event["regarding"]["name"], event["regarding"]["uid"]) == (
        "Normal", "Preempting", "batch-0", victim_uid)
    assert event["note"] == f"Preempted by pod {vip['metadata']['uid']} on node node-b"
    assert event["related"]["name"] == "vip"


def preempted_events(events_api, victim_uid):
    """The Preempted events regarding this victim (the namespace keeps earlier tests' events)."""
    return [e for e in call(events_api.list_namespaced_event, NS)["items"]
            if e["reason"] == "Preempted" and e["regarding"]["uid"] == victim_uid]


def tainted_room(name):
    """A node that could hold an 800m pod alone (NodeResourcesFit's queueing hint queues the pods it rejected
    on its NodeAdd), tainted so that none goes there: the retry a node event triggers, and nothing more."""
    tainted = node(name, cpu="1")
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "other", "effect": "NoSchedule"}]}
    return tainted

def test_a_watch_event_racing_the_nomination_neither_frees_the_room_nor_makes_the_preemptor_preempt_again(
        running, core, apis):
    """The nomination is the worker's own (Pod.nominated_node, written in the transaction of its attempt); the
    mirror's copy of the preemptor comes from the API server and lacks it until the patch comes back. An
    event without it (as the echo of a patch sent before the nomination's) reaching the mirror before that
    patch's echo must change nothing (as upstream's nominator: no nomination in the old copy nor in the new,
    the one made in memory stays): the preemptor is not eligible to preempt again while its victim terminates
    on the nominated node (upstream's PodEligibleToPreemptOthers), and a pod of lower priority never takes the
    room meanwhile."""
    from scheduler.kube.mirror import pod_upsert
    from scheduler.models import Attempt
    from scheduler.queue.queues import get_queue

    _, events_api, scheduling, _ = apis
    for name, value in (("high", 1000), ("mid", 500)):
        call(scheduling.create_priority_class, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                                "metadata": {"name": name}, "value": value})
    wait_for_cluster(lambda: ClusterObject.objects.filter(kind="PriorityClass", name__in=["high", "mid"]).count() == 2,
                     "the classes mirrored")
    call(core.create_node, node("node-b", cpu="1"))
    call(core.create_namespaced_pod, NS, pod("batch-0", cpu="800m", node_name="node-b"))
    wait_for_cluster(lambda: Pod.objects.filter(name="batch-0").exists(), "the low pod mirrored")
    victim = read_pod(core, "batch-0")["metadata"]["uid"]
    call(core.create_namespaced_pod, NS, with_class(pod("vip", cpu="800m"), "high"))
    wait_for_cluster(lambda: read_pod(core, "vip")["status"].get("nominatedNodeName") == "node-b"
                     and Pod.objects.filter(name="batch-0", deleting=True).exists() and len(preempted_events(events_api, victim)) == 1,
                     "vip nominated, its victim terminating (mirrored)")
    attempts = Attempt.objects.filter(pod_name="vip").count()

    # The racing event: vip as the API server had it before the nomination's patch, reaching the mirror while
    # its copy is still the one before that patch (a watch delivers in order: put that copy back first).
    stale = read_pod(core, "vip")
    del stale["status"]["nominatedNodeName"]
    Pod.objects.filter(name="vip").update(manifest=stale)
    pod_upsert(stale, queue=get_queue())
    assert Pod.objects.get(name="vip").nominated_node == "node-b"  # our nomination stays
    call(core.create_node, tainted_room("tiny"))  # NodeAdd its Fit hint queues: vip is tried again
    wait_for_cluster(lambda: Attempt.objects.filter(pod_name="vip").count() > attempts, "vip tried again", timeout=40)
    again = Attempt.objects.filter(pod_name="vip").latest("started_at")
    assert again.message.endswith("preemption: not eligible due to a terminating pod on the nominated node."), again.message
    call(core.create_namespaced_pod, NS, with_class(pod("mid", cpu="800m"), "mid"))
    wait_for_cluster(lambda: Attempt.objects.filter(pod_name="mid").exists(), "mid tried")

    call(core.delete_namespaced_pod, "batch-0", NS, grace_period_seconds=0)  # the kubelet's part
    wait_for_cluster(lambda: read_pod(core, "vip")["spec"].get("nodeName") == "node-b", "vip bound on its room",
                     timeout=60)
    assert not read_pod(core, "mid")["spec"].get("nodeName")
    assert len(preempted_events(events_api, victim)) == 1  # one preemption, one victim


def test_the_failed_attempts_status_patch_carries_the_nomination_made_with_it(running, core):
    """As upstream's updatePod: the PodScheduled condition and status.nominatedNodeName in one patch, so the API
    never holds the failure without its nomination (and no event shows one without the other)."""
    call(core.create_node, node("node-b", cpu="1"))
    # Another scheduler's pod: our loop leaves it alone, only the committer's report below touches it.
    call(core.create_namespaced_pod, NS, pod("vip", cpu="2", scheduler="other-scheduler"))
    wait_for_cluster(lambda: Pod.objects.filter(name="vip").exists(), "vip mirrored")
    uid = read_pod(core, "vip")["metadata"]["uid"]
    message = "0/1 nodes are available: 1 Insufficient cpu. preemption: ..."
    running.committer.report({"op": "report", "scheduled": [], "failed": [
        {"namespace": NS, "name": "vip", "uid": uid, "resourceVersion": "", "scheduler": "default-scheduler",
         "reason": "Unschedulable", "message": message, "nominated": "node-b"}]})
    got = read_pod(core, "vip")
    condition = next(c for c in got["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (condition["status"], condition["reason"], condition["message"]) == ("False", "Unschedulable", message)
    assert got["status"]["nominatedNodeName"] == "node-b"
    running.committer.report({"op": "report", "scheduled": [], "failed": [
        {"namespace": NS, "name": "vip", "uid": uid, "resourceVersion": "", "scheduler": "default-scheduler",
         "reason": "Unschedulable", "message": message, "nominated": ""}]})
    assert "nominatedNodeName" not in read_pod(core, "vip")["status"]  # cleared with the same patch


def test_a_nomination_the_api_server_removes_is_counted_no_more(running, core):
    """As upstream's nominator on a pod update whose old copy had status.nominatedNodeName and the new one has
    not (another scheduler or a user cleared it): the pod is nominated no more, its room free for others."""
    from scheduler.kube.events import STRATEGIC_MERGE_PATCH

    call(core.create_node, node("node-b", cpu="1"))
    # Another scheduler's pod: our loop leaves it alone; its nomination comes and goes through the API only.
    call(core.create_namespaced_pod, NS, pod("theirs", cpu="800m", scheduler="other-scheduler"))
    wait_for_cluster(lambda: Pod.objects.filter(name="theirs").exists(), "theirs mirrored")
    call(core.patch_namespaced_pod_status, "theirs", NS, {"status": {"nominatedNodeName": "node-b"}},
         _content_type=STRATEGIC_MERGE_PATCH)
    wait_for_cluster(lambda: Pod.objects.get(name="theirs").nominated_node == "node-b", "the nomination mirrored")
    call(core.create_namespaced_pod, NS, pod("ours", cpu="800m"))
    wait_for_cluster(lambda: (Pod.objects.get(name="ours").scheduled_reason if Pod.objects.filter(name="ours").exists()
                              else "") == "Unschedulable", "ours kept off the nominated room")
    call(core.patch_namespaced_pod_status, "theirs", NS, {"status": {"nominatedNodeName": None}},
         _content_type=STRATEGIC_MERGE_PATCH)
    wait_for_cluster(lambda: Pod.objects.get(name="theirs").nominated_node == "", "the removal mirrored")
    call(core.create_node, tainted_room("tiny"))  # NodeAdd its Fit hint queues: ours is tried again
    wait_for_cluster(lambda: read_pod(core, "ours")["spec"].get("nodeName") == "node-b", "ours bound on the room",
                     timeout=60)
