"""matchLabelKeys / mismatchLabelKeys as kube-apiserver master takes them at pod creation, and what the
scheduler then does with them.

At creation the pod strategy's PrepareForCreate merges them into the selectors (mutatePodAffinity,
MatchLabelKeysInPodAffinity GA; mutateTopologySpreadConstraints, MatchLabelKeysInPodTopologySpreadSelectorMerge
beta, on by default since 1.34) and only then validates: ValidateMatchLabelKeysAndMismatchLabelKeys for both
(validateTopologySpreadConstraints takes it, not the legacy ValidateMatchLabelKeysInTopologySpread, when the
gate is on and the pod is new). Its "in both" error is indexed on the path it was given: the term, or the
spread constraint itself. At scheduling time PodTopologySpread merges a constraint's matchLabelKeys again
(filterTopologySpreadConstraints), so a pod whose API server did not merge them (one mirrored from an older
cluster) spreads the same; InterPodAffinity reads the selector as stored (newAffinityTerm ignores the keys).
"""

import copy

import pytest
import yaml

from scheduler.engine.labels import OP_IN, OP_NOT_IN
from scheduler.engine.plugins.pod_topology_spread import filter_constraints
from scheduler.engine.pod_info import pod_info
from scheduler.engine.pods import DO_NOT_SCHEDULE
from scheduler.manifests.errors import ManifestError
from scheduler.manifests.files import parse_documents
from scheduler.manifests.objects import parse_object

IN_BOTH = "exists in both matchLabelKeys and labelSelector"
NO_SELECTOR = "Forbidden: must not be specified when labelSelector is not set"
BAD_NAME = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")

LABELS = {"app": "web", "pod-template-hash": "abc", "tier": "front"}
SPREAD = "spec.topologySpreadConstraints[0]"
REQUIRED = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
PREFERRED = "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"


def pod(spread: dict | None = None, anti: dict | None = None, preferred: dict | None = None, labels=LABELS) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "nginx"}]}
    if spread is not None:
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "zone",
                                              "whenUnsatisfiable": DO_NOT_SCHEDULE, **spread}]
    affinity = {}
    if anti is not None:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", **anti}]}
    if preferred is not None:
        affinity["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": {"topologyKey": "zone", **preferred}}]}
    if affinity:
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": dict(labels)}, "spec": spec}


def applied(obj: dict):
    """What `apply` makes of the pod: its problems (path, message), or the parsed pod."""
    try:
        [parsed] = parse_documents(yaml.safe_dump(obj), "pod.yaml")
    except ManifestError as err:
        return [(p.path, p.message) for p in err.problems]
    return parsed


def expressions(selector: dict) -> list[tuple]:
    return [(e["key"], e["operator"], tuple(e.get("values") or ())) for e in selector.get("matchExpressions") or ()]


APP = {"matchLabels": {"app": "web"}}

# (case, pod, the problems apply reports: (path, message) in order; [] when accepted)
REFUSED = [
    ("a spread key also in matchLabels, the pod has the label: in both once merged, at the constraint's own index",
     pod(spread={"labelSelector": APP, "matchLabelKeys": ["app"]}),
     [(f"{SPREAD}[0]", f'Invalid value: "app": {IN_BOTH}')]),
    ("the second of two keys: indexed [1]",
     pod(spread={"labelSelector": APP, "matchLabelKeys": ["pod-template-hash", "app"]}),
     [(f"{SPREAD}[1]", f'Invalid value: "app": {IN_BOTH}')]),
    ("a spread key also in matchExpressions: the merged `app In (web)` meets the user's",
     pod(spread={"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                 "matchLabelKeys": ["app"]}),
     [(f"{SPREAD}[0]", f'Invalid value: "app": {IN_BOTH}')]),
    ("a spread key named twice: the second merged expression meets the first, at the last entry's index",
     pod(spread={"labelSelector": APP, "matchLabelKeys": ["tier", "tier"]}),
     [(f"{SPREAD}[1]", f'Invalid value: "tier": {IN_BOTH}')]),
    ("spread keys without a labelSelector: Forbidden on the list, the names not checked",
     pod(spread={"matchLabelKeys": ["Bad Key!"]}),
     [(f"{SPREAD}.matchLabelKeys", NO_SELECTOR)]),
    ("a spread key that is not a label name",
     pod(spread={"labelSelector": APP, "matchLabelKeys": ["-bad"]}),
     [(f"{SPREAD}.matchLabelKeys[0]", f'Invalid value: "-bad": {BAD_NAME}')]),
    ("a required anti-affinity key also in matchLabels: at the term's index",
     pod(anti={"labelSelector": APP, "matchLabelKeys": ["app"]}),
     [(f"{REQUIRED}[0]", f'Invalid value: "app": {IN_BOTH}')]),
    ("a preferred affinity key also in matchLabels: at podAffinityTerm's index",
     pod(preferred={"labelSelector": APP, "matchLabelKeys": ["tier", "app"]}),
     [(f"{PREFERRED}[1]", f'Invalid value: "app": {IN_BOTH}')]),
    ("a key in both matchLabelKeys and mismatchLabelKeys (it is also merged twice: In then NotIn, no in-both)",
     pod(anti={"labelSelector": APP, "matchLabelKeys": ["tier"], "mismatchLabelKeys": ["tier"]}),
     [(f"{REQUIRED}.matchLabelKeys[0]", 'Invalid value: "tier": exists in both matchLabelKeys and mismatchLabelKeys')]),
    ("affinity keys without a labelSelector: Forbidden on each list",
     pod(anti={"matchLabelKeys": ["tier"], "mismatchLabelKeys": ["app"]}),
     [(f"{REQUIRED}.matchLabelKeys", NO_SELECTOR), (f"{REQUIRED}.mismatchLabelKeys", NO_SELECTOR)]),
]


@pytest.mark.parametrize(("case", "obj", "want"), REFUSED, ids=[c[0] for c in REFUSED])
def test_apply_refuses_label_keys_as_the_api_server_does_at_creation(case, obj, want):
    assert applied(obj) == want


# (case, pod, the stored labelSelector's matchExpressions after apply)
MERGED = [
    ("pod-template-hash is an ordinary key: merged as In",
     pod(spread={"labelSelector": APP, "matchLabelKeys": ["pod-template-hash"]}),
     lambda m: m["spec"]["topologySpreadConstraints"][0]["labelSelector"],
     [("pod-template-hash", OP_IN, ("abc",))]),
    ("a key the pod has no label for adds nothing, and so is accepted though matchLabels names it",
     pod(spread={"labelSelector": APP, "matchLabelKeys": ["app"]}, labels={"tier": "front"}),
     lambda m: m["spec"]["topologySpreadConstraints"][0]["labelSelector"],
     []),
    ("an empty labelSelector takes the keys (it is set)",
     pod(spread={"labelSelector": {}, "matchLabelKeys": ["app", "missing"]}),
     lambda m: m["spec"]["topologySpreadConstraints"][0]["labelSelector"],
     [("app", OP_IN, ("web",))]),
    ("a mismatchLabelKeys key also in the selector is allowed (NotIn narrows it further)",
     pod(anti={"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
               "mismatchLabelKeys": ["tier"]}),
     lambda m: m["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"],
     [("tier", "Exists", ()), ("tier", OP_NOT_IN, ("front",))]),
    ("affinity keys appended after the user's expressions, matchLabelKeys before mismatchLabelKeys",
     pod(preferred={"labelSelector": {"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]},
                    "matchLabelKeys": ["app"], "mismatchLabelKeys": ["pod-template-hash"]}),
     lambda m: m["spec"]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0][
         "podAffinityTerm"]["labelSelector"],
     [("x", "DoesNotExist", ()), ("app", OP_IN, ("web",)), ("pod-template-hash", OP_NOT_IN, ("abc",))]),
]


@pytest.mark.parametrize(("case", "obj", "selector_of", "want"), MERGED, ids=[c[0] for c in MERGED])
def test_apply_merges_label_keys_into_the_stored_selector(case, obj, selector_of, want):
    parsed = applied(obj)
    assert not isinstance(parsed, list), parsed
    assert expressions(selector_of(parsed.manifest)) == want


def test_a_mirrored_pod_is_taken_as_stored_neither_merged_again_nor_refused():
    # What a 1.34+ API server returns for the pod above: `app In (web)` merged beside the user's expression.
    # Read back from the cluster (not applied), it is neither refused (the merged expression is the only `app`)
    # nor merged a second time.
    stored = pod(spread={"labelSelector": {"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["web"]}]}, "matchLabelKeys": ["app"]})
    o, parsed = parse_object(copy.deepcopy(stored))
    assert o.problems == [] and parsed is not None
    assert expressions(parsed.manifest["spec"]["topologySpreadConstraints"][0]["labelSelector"]) == [
        ("app", OP_IN, ("web",))]


def test_spread_keys_an_older_api_server_did_not_merge_are_merged_when_scheduling():
    # A pod from an API server without the merge (before 1.34, or the gate off) keeps matchLabelKeys beside
    # a selector without them; filterTopologySpreadConstraints merges them, so it spreads as the merged one.
    unmerged = pod(spread={"labelSelector": APP, "matchLabelKeys": ["pod-template-hash"]})
    o, mirrored = parse_object(copy.deepcopy(unmerged))
    assert o.problems == []
    created = applied(unmerged)
    [a] = filter_constraints(mirrored.spec.topology_spread_constraints, mirrored.spec.labels, DO_NOT_SCHEDULE)
    [b] = filter_constraints(created.spec.topology_spread_constraints, created.spec.labels, DO_NOT_SCHEDULE)
    for labels in ({"app": "web", "pod-template-hash": "abc"}, {"app": "web", "pod-template-hash": "old"},
                   {"app": "web"}, {"pod-template-hash": "abc"}):
        assert a.selector.matches(labels) == b.selector.matches(labels), labels
    assert not a.selector.matches({"app": "web", "pod-template-hash": "old"})


def test_affinity_keys_an_older_api_server_did_not_merge_are_not_merged_when_scheduling():
    # newAffinityTerm compiles the stored labelSelector only: the keys count only where the API server merged them.
    unmerged = pod(anti={"labelSelector": APP, "matchLabelKeys": ["pod-template-hash"]})
    o, mirrored = parse_object(copy.deepcopy(unmerged))
    assert o.problems == []
    [term] = pod_info(mirrored.spec).required_anti_affinity
    assert term.selector.matches({"app": "web", "pod-template-hash": "old"})
    [merged] = pod_info(applied(unmerged).spec).required_anti_affinity
    assert not merged.selector.matches({"app": "web", "pod-template-hash": "old"})
