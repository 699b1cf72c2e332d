"""A pod's inter-pod affinity terms parsed once, as upstream's framework.PodInfo (types.go):
each term's label selector and namespace selector compiled, and the namespaces it applies to.

Parsing follows PodInfo.Update: a term whose selector does not parse makes its whole category
(required affinity, required anti-affinity, preferred affinity, preferred anti-affinity) empty,
and the first such error is kept (the incoming pod is then rejected at PreFilter; an existing
pod simply contributes nothing for that category, as NodeInfo.AddPod ignores the error).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .labels import NOTHING, Selector, SelectorError, as_selector
from .pods import PodAffinityTerm, PodSpec, derived


@dataclass(frozen=True)
class AffinityTerm:
    """A processed v1.PodAffinityTerm (fwk.AffinityTerm). Hashable: existing pods with equal terms
    share one entry in the pod index."""

    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    namespace_selector: Selector = NOTHING

    def matches(self, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, str]) -> bool:
        """As AffinityTerm.Matches: the pod's namespace is listed or its labels match the namespace
        selector, and the pod's labels match the selector."""
        if namespace in self.namespaces or self.namespace_selector.matches(namespace_labels):
            return self.selector.matches(labels)
        return False

    @property
    def all_namespaces(self) -> bool:
        """Whether the term applies in every namespace (an empty namespaceSelector)."""
        return self.namespace_selector.empty()


@dataclass(frozen=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True)
class PodInfo:
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    parse_error: str | None = None

    @property
    def has_affinity(self) -> bool:
        return bool(self.required_affinity or self.required_anti_affinity or self.preferred_affinity
                    or self.preferred_anti_affinity)


EMPTY_POD_INFO = PodInfo()


def namespaces_of_term(pod: PodSpec, term: PodAffinityTerm) -> frozenset[str]:
    """As getNamespacesFromPodAffinityTerm: no namespaces and no namespace selector means the pod's own."""
    if not term.namespaces and term.namespace_selector is None:
        return frozenset((pod.namespace,))
    return frozenset(term.namespaces)


def _term(pod: PodSpec, term: PodAffinityTerm) -> AffinityTerm:
    return AffinityTerm(namespaces_of_term(pod, term), as_selector(term.label_selector), term.topology_key,
                        as_selector(term.namespace_selector))


def _category(pod: PodSpec, terms, weighted: bool, errors: list[str], what: str) -> tuple:
    try:
        if weighted:
            return tuple(WeightedAffinityTerm(_term(pod, w.term), w.weight) for w in terms)
        return tuple(_term(pod, t) for t in terms)
    except SelectorError as err:
        errors.append(f"{what}: {err}")
        return ()


def _parse(pod: PodSpec) -> PodInfo:
    aff, anti = pod.pod_affinity, pod.pod_anti_affinity
    if aff is None and anti is None:
        return EMPTY_POD_INFO
    errors: list[str] = []
    info = PodInfo(
        required_affinity=_category(pod, aff.required if aff else (), False, errors, "requiredAffinityTerms"),
        required_anti_affinity=_category(pod, anti.required if anti else (), False, errors, "requiredAntiAffinityTerms"),
        preferred_affinity=_category(pod, aff.preferred if aff else (), True, errors, "preferredAffinityTerms"),
        preferred_anti_affinity=_category(pod, anti.preferred if anti else (), True, errors,
                                          "preferredAntiAffinityTerms"),
        # As utilerrors.NewAggregate(...).Error(): one error alone, several in brackets.
        parse_error=(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]") if errors else None,
    )
    return info


def pod_info(pod: PodSpec) -> PodInfo:
    """The pod's parsed affinity terms, computed once per PodSpec (and again if its affinity is replaced)."""
    if pod.pod_affinity is None and pod.pod_anti_affinity is None:
        return EMPTY_POD_INFO
    return derived(pod, pod_info, (pod.pod_affinity, pod.pod_anti_affinity, pod.namespace), lambda: _parse(pod))


def incoming_term(term: AffinityTerm, namespace_labels: Mapping[str, Mapping[str, str]]) -> AffinityTerm:
    """As mergeAffinityTermNamespacesIfNotEmpty, for the incoming pod's own terms: a namespace selector
    other than the empty one is unrolled into the namespaces it selects now and then dropped, so
    matching an existing pod needs no lookup of that pod's namespace labels."""
    if term.namespace_selector.empty():
        return term
    extra = {name for name, labels in namespace_labels.items() if term.namespace_selector.matches(labels)}
    return AffinityTerm(term.namespaces | extra, term.selector, term.topology_key, NOTHING)

