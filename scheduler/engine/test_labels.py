"""Label selectors with apimachinery's semantics: nil selects nothing, empty selects everything,
requirements validate as labels.NewRequirement, and kube-apiserver's matchLabelKeys merge."""

import pytest

from scheduler.engine.labels import (
    EVERYTHING,
    NOTHING,
    LabelSelector,
    LabelSelectorRequirement,
    SelectorError,
    as_selector,
    selector_from_set,
)
from scheduler.engine.pods import (
    PodAffinity,
    PodAffinityTerm,
    PodSpec,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
    with_label_keys_merged,
)


def req(key, op, *values):
    return LabelSelectorRequirement(key, op, tuple(values))


def test_a_nil_selector_matches_nothing_and_is_not_empty():
    s = as_selector(None)
    assert s is NOTHING and not s.matches({}) and not s.matches({"a": "b"}) and not s.empty()


def test_an_empty_selector_matches_everything_and_is_empty():
    s = as_selector(LabelSelector())
    assert s is EVERYTHING and s.matches({}) and s.matches({"a": "b"}) and s.empty()


@pytest.mark.parametrize("selector,labels,want", [
    (LabelSelector.of({"app": "web"}), {"app": "web", "x": "y"}, True),
    (LabelSelector.of({"app": "web"}), {"app": "db"}, False),
    (LabelSelector.of(match_expressions=[req("app", "In", "web", "db")]), {"app": "db"}, True),
    (LabelSelector.of(match_expressions=[req("app", "In", "web")]), {}, False),
    (LabelSelector.of(match_expressions=[req("app", "NotIn", "web")]), {}, True),  # a missing key is NotIn
    (LabelSelector.of(match_expressions=[req("app", "NotIn", "web")]), {"app": "web"}, False),
    (LabelSelector.of(match_expressions=[req("app", "Exists")]), {"app": ""}, True),
    (LabelSelector.of(match_expressions=[req("app", "DoesNotExist")]), {"app": ""}, False),
    (LabelSelector.of({"tier": "x"}, [req("app", "Exists")]), {"app": "", "tier": "x"}, True),
    (LabelSelector.of({"tier": "x"}, [req("app", "Exists")]), {"app": ""}, False),
])
def test_requirements_match_as_labels_requirement_matches(selector, labels, want):
    assert as_selector(selector).matches(labels) is want


@pytest.mark.parametrize("selector,message", [
    (LabelSelector.of(match_expressions=[req("a", "Gt", "1")]), '"Gt" is not a valid label selector operator'),
    (LabelSelector.of(match_expressions=[req("a", "In")]),
     "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"),
    (LabelSelector.of(match_expressions=[req("a", "Exists", "x")]),
     'values: Invalid value: []string{"x"}: values set must be empty for exists and does not exist'),
    (LabelSelector.of({"a": "{{bad}}"}), 'values[0][a]: Invalid value: "{{bad}}": a valid label must be'),
    (LabelSelector.of({"bad key": "x"}), 'key: Invalid value: "bad key": name part must consist of'),
])
def test_a_selector_that_does_not_parse_is_refused_with_upstreams_words(selector, message):
    with pytest.raises(SelectorError) as err:
        as_selector(selector)
    assert str(err.value).startswith(message)


def test_selectors_compare_by_what_they_select():
    a = as_selector(LabelSelector.of({"b": "2", "a": "1"}))
    b = selector_from_set({"a": "1", "b": "2"})
    assert a == b and hash(a) == hash(b)
    assert as_selector(LabelSelector.of(match_expressions=[req("x", "In", "2", "1")])) == \
        as_selector(LabelSelector.of(match_expressions=[req("x", "In", "1", "2")]))


def test_the_api_server_merges_match_label_keys_into_selectors_at_creation():
    sel = LabelSelector.of({"app": "web"})
    pod = PodSpec(
        "default", "p", labels={"app": "web", "pod-template-hash": "abc", "tenant": "t1"},
        topology_spread_constraints=(TopologySpreadConstraint(1, "zone", label_selector=sel,
                                                              match_label_keys=("pod-template-hash", "absent")),),
        pod_affinity=PodAffinity(preferred=(WeightedPodAffinityTerm(5, PodAffinityTerm(
            "zone", sel, match_label_keys=("pod-template-hash",))),)),
        pod_anti_affinity=PodAffinity(required=(
            PodAffinityTerm("kubernetes.io/hostname", sel, mismatch_label_keys=("tenant",)),
            PodAffinityTerm("kubernetes.io/hostname", None, match_label_keys=("tenant",)),
        )),
    )
    stored = with_label_keys_merged(pod)
    [spread] = stored.topology_spread_constraints
    assert spread.label_selector.match_expressions == (req("pod-template-hash", "In", "abc"),)
    assert stored.pod_affinity.preferred[0].term.label_selector.match_expressions == (req("pod-template-hash", "In", "abc"),)
    mismatch, nil = stored.pod_anti_affinity.required
    assert mismatch.label_selector.match_expressions == (req("tenant", "NotIn", "t1"),)
    assert nil.label_selector is None  # a nil selector stays nil: it matches nothing either way
    # The keys stay in the spec, as upstream keeps them.
    assert spread.match_label_keys == ("pod-template-hash", "absent")
    assert as_selector(spread.label_selector).matches({"app": "web", "pod-template-hash": "abc"})
    assert not as_selector(spread.label_selector).matches({"app": "web", "pod-template-hash": "old"})
