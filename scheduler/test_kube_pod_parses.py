"""A pending pod's parse re-used for its next watch event (scheduler/kube/pod_parses.py) is exactly the parse of
that event: spec and manifest equal to parse_object's, whatever changed; and it is re-used only when nothing but
the status, spec.nodeName and the API server's bookkeeping changed."""

import copy

import pytest

from scheduler.kube.mirror import pod_manifest
from scheduler.kube.pod_parses import PodParses
from scheduler.manifests.objects import parse_object


def api_pod(name="web-1"):
    """A pending pod as a v1.20 API server's watch sends it (its defaults applied)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "apps", "uid": f"uid-{name}", "resourceVersion": "10",
                         "creationTimestamp": "2026-12-03T10:00:00Z", "labels": {"app": "web"},
                         "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
            "spec": {"containers": [{"name": "c", "image": "app:1", "imagePullPolicy": "IfNotPresent",
                                     "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}],
                     "schedulerName": "default-scheduler", "priority": 0, "restartPolicy": "Always",
                     "preemptionPolicy": "PreemptLowerPriority",
                     "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                      "effect": "NoExecute", "tolerationSeconds": 300}]},
            "status": {"phase": "Pending", "qosClass": "Burstable"}}


def later(obj, rv="11", **changes):
    """The pod's next event: `changes` as {"part__field": value} (None: removed)."""
    obj = copy.deepcopy(obj)
    obj["metadata"]["resourceVersion"] = rv
    for key, value in changes.items():
        part, name = key.split("__")
        obj.setdefault(part, {})
        if value is None:
            obj[part].pop(name, None)
        else:
            obj[part][name] = value
    return obj


def bound(obj, node="node-1"):
    return later(obj, spec__nodeName=node, status__conditions=[
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-12-03T10:00:05Z"}])


def full_parse(obj):
    o, parsed = parse_object(pod_manifest(obj))
    return parsed if parsed is not None and o.kind == "Pod" else None


def parse_both(first, then):
    """`then` parsed after `first` by one PodParses, and on its own by parse_object; and whether it was re-used."""
    parses = PodParses()
    parses.parse(pod_manifest(first))
    reused = parses.reused
    return parses.parse(pod_manifest(then)), full_parse(then), parses.reused > reused


REUSED = {
    "bound by our binding": lambda p: bound(p),
    "a PodScheduled=False condition patched": lambda p: later(p, status__conditions=[
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes are available"}]),
    "nominated by a preemption": lambda p: later(p, status__nominatedNodeName="node-2"),
    "a victim's DisruptionTarget condition and start time": lambda p: later(p, status__startTime="2026-12-03T10:01:00Z",
        status__conditions=[{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]),
    "its status dropped": lambda p: later(p, status__phase=None, status__qosClass=None),
    "no resourceVersion": lambda p: later(p, metadata__resourceVersion=None),
    "managedFields changed": lambda p: later(p, metadata__managedFields=[{"manager": "kube-scheduler"}]),
    "bound, its nodeName then cleared again": lambda p: later(bound(p), spec__nodeName=None),
}

PARSED_AGAIN = {
    "a label changed": lambda p: later(p, metadata__labels={"app": "db"}),
    "a deletion started": lambda p: later(p, metadata__deletionTimestamp="2026-12-03T10:02:00Z"),
    "its requests changed": lambda p: later(p, spec__containers=[
        {"name": "c", "image": "app:1", "resources": {"requests": {"cpu": "200m"}}}]),
    "another pod under the name": lambda p: later(p, metadata__uid="uid-other"),
    "its priority changed": lambda p: later(p, spec__priority=5),
}


@pytest.mark.parametrize("change", REUSED)
def test_a_pending_pods_parse_serves_its_next_event_when_only_status_node_name_or_bookkeeping_changed(change):
    first = api_pod()

    parsed, expected, reused = parse_both(first, REUSED[change](first))

    assert reused
    assert parsed.spec == expected.spec
    assert parsed.manifest == expected.manifest


@pytest.mark.parametrize("change", PARSED_AGAIN)
def test_any_other_change_is_parsed_in_full(change):
    first = api_pod()

    parsed, expected, reused = parse_both(first, PARSED_AGAIN[change](first))

    assert not reused
    assert parsed.spec == expected.spec and parsed.manifest == expected.manifest


def test_an_invalid_node_name_is_left_to_the_full_parse_which_refuses_the_pod():
    first = api_pod()

    parsed, expected, _reused = parse_both(first, bound(first, node="Not_A_Node"))

    assert parsed is None and expected is None


def test_a_bound_pods_parse_is_not_kept_and_a_deleted_pods_is_forgotten():
    parses = PodParses()
    pending, other = api_pod("a"), api_pod("b")
    parses.parse(pod_manifest(pending))
    parses.parse(pod_manifest(other))

    parses.parse(pod_manifest(bound(pending)))
    parses.forget(pod_manifest(other))
    parses.parse(pod_manifest(later(bound(pending), rv="12")))
    parses.parse(pod_manifest(later(other)))

    assert parses.reused == 1  # only the binding event of "a"


def test_a_pod_the_parser_had_to_fill_in_is_parsed_in_full_each_time():
    # Not as the API server sends it: no schedulerName, so parse_object's manifest says more than the event.
    first = later(api_pod(), spec__schedulerName=None)

    parsed, expected, reused = parse_both(first, bound(first))

    assert not reused
    assert parsed.manifest == expected.manifest and parsed.manifest["spec"]["schedulerName"] == "default-scheduler"


def test_the_parses_kept_are_bounded():
    parses = PodParses(max_kept=1)
    a, b = api_pod("a"), api_pod("b")
    parses.parse(pod_manifest(a))
    parses.parse(pod_manifest(b))  # not kept: the bound is reached

    parses.parse(pod_manifest(bound(a)))
    parses.parse(pod_manifest(bound(b)))

    assert parses.reused == 1


def test_re_using_a_parse_never_changes_the_parse_it_came_from():
    parses = PodParses()
    first = api_pod()
    kept = parses.parse(pod_manifest(first))
    before = copy.deepcopy(kept.manifest)

    parses.parse(pod_manifest(bound(first)))

    assert kept.manifest == before and kept.spec.node_name == ""


def test_a_reused_parse_shares_no_computed_requests_with_the_one_before():
    # The spec is copied from the one before, its requests (computed from the containers) with it: a change to one
    # spec's must not be seen in the other's.
    parses = PodParses()
    pending = api_pod()
    before = parses.parse(pod_manifest(pending))
    after = parses.parse(pod_manifest(bound(pending)))

    assert parses.reused == 1 and after.spec.node_name and not before.spec.node_name
    assert after.spec.requests == before.spec.requests and after.spec.requests is not before.spec.requests
    assert after.spec.nonzero_requests is not before.spec.nonzero_requests
