"""The cluster objects besides nodes and pods that plugins read through informers upstream:
Namespaces' labels (InterPodAffinity's namespaceSelector), the selectors of Services,
ReplicationControllers, ReplicaSets and StatefulSets (PodTopologySpread's default constraints),
and PodDisruptionBudgets (DefaultPreemption).

A snapshot carries one ClusterObjects (NodeTable.objects); whoever builds the snapshot fills it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .labels import EVERYTHING, LabelSelector, Selector, SelectorError, as_selector, selector_from_set
from .pods import PodSpec

# As helper.DefaultSelector's rcKind, rsKind and ssKind (group/version and kind must both match).
RC_KIND = ("v1", "ReplicationController")
RS_KIND = ("apps/v1", "ReplicaSet")
SS_KIND = ("apps/v1", "StatefulSet")


@dataclass(frozen=True)
class PodDisruptionBudget:
    """What preemption reads of a policy/v1 PodDisruptionBudget: its selector (None: nil, which,
    like an empty one, protects no pod) and status.disruptionsAllowed / status.disruptedPods (names
    of pods whose eviction the API server already granted)."""

    namespace: str
    name: str
    selector: LabelSelector | None = None
    disruptions_allowed: int = 0
    disrupted_pods: frozenset[str] = frozenset()


@dataclass
class ClusterObjects:
    # Namespace name -> its labels.
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    # Namespace -> each Service's spec.selector (None: a nil selector, which matches no pod).
    services: dict[str, list[dict[str, str] | None]] = field(default_factory=dict)
    # (namespace, name) -> spec.selector.
    replication_controllers: dict[tuple[str, str], dict[str, str] | None] = field(default_factory=dict)
    replica_sets: dict[tuple[str, str], LabelSelector | None] = field(default_factory=dict)
    stateful_sets: dict[tuple[str, str], LabelSelector | None] = field(default_factory=dict)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)

    def labels_of_namespace(self, namespace: str) -> Mapping[str, str]:
        """As GetNamespaceLabelsSnapshot: an unknown namespace has no labels."""
        return self.namespace_labels.get(namespace) or {}

    def namespaces_matching(self, selector: Selector) -> set[str]:
        """As the namespace lister's List(selector)."""
        return {name for name, labels in self.namespace_labels.items() if selector.matches(labels)}

    def default_selector(self, pod: PodSpec) -> Selector:
        """As helper.DefaultSelector: the Services selecting the pod (their selectors merged), then the
        pod's controller if it is a ReplicationController (its selector merged into the same set), a
        ReplicaSet or a StatefulSet (its selector's requirements added)."""
        services = self.services.get(pod.namespace)
        if not services and not pod.owner_references:
            return EVERYTHING  # the common case: nothing selects or owns the pod
        label_set: dict[str, str] = {}
        for svc_selector in services or ():
            # As GetPodServices: a nil selector matches nothing (not everything).
            if svc_selector is None:
                continue
            if selector_from_set(svc_selector).matches(pod.labels):
                label_set.update(svc_selector)
        selector = selector_from_set(label_set)
        owner = pod.controller
        if owner is None:
            return selector
        kind = (owner.api_version, owner.kind)
        key = (pod.namespace, owner.name)
        if kind == RC_KIND:
            if key in self.replication_controllers:
                label_set.update(self.replication_controllers[key] or {})
                selector = selector_from_set(label_set)
        elif kind in (RS_KIND, SS_KIND):
            table = self.replica_sets if kind == RS_KIND else self.stateful_sets
            if key in table:
                try:
                    other = as_selector(table[key])
                except SelectorError:
                    return selector
                if not other.nothing:  # As Requirements(): Nothing has none to add
                    selector = selector.add(*other.requirements)
        return selector
