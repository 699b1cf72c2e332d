"""The v1 JSON of what PodTopologySpread and InterPodAffinity read from a pod (labels, owner
references, topology spread constraints, pod (anti-)affinity) turned into the engine's types.

Input here is already valid (validated by the manifest decoder, or taken as the API server stored
it): these builders only convert, keeping upstream's nil-versus-empty distinctions (a missing
labelSelector is None and selects nothing; `{}` is LabelSelector() and selects everything).
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache

from scheduler.engine.labels import LabelSelector, LabelSelectorRequirement
from scheduler.engine.pods import (OwnerReference, PodAffinity, PodAffinityTerm, TopologySpreadConstraint,
                          WeightedPodAffinityTerm)


def label_selector(value) -> LabelSelector | None:
    """A metav1.LabelSelector; None for a nil (absent or null) selector."""
    if value is None:
        return None
    return LabelSelector.of(
        value.get("matchLabels") or {},
        tuple(LabelSelectorRequirement(r.get("key") or "", r.get("operator") or "", tuple(r.get("values") or ()))
              for r in value.get("matchExpressions") or ()),
    )


def _term(value: dict) -> PodAffinityTerm:
    return PodAffinityTerm(
        topology_key=value.get("topologyKey") or "",
        label_selector=label_selector(value.get("labelSelector")),
        namespaces=tuple(value.get("namespaces") or ()),
        namespace_selector=label_selector(value.get("namespaceSelector")),
        match_label_keys=tuple(value.get("matchLabelKeys") or ()),
        mismatch_label_keys=tuple(value.get("mismatchLabelKeys") or ()),
    )


def _affinity(value) -> PodAffinity | None:
    if value is None:
        return None
    return PodAffinity(
        required=tuple(_term(t) for t in value.get("requiredDuringSchedulingIgnoredDuringExecution") or ()),
        preferred=tuple(WeightedPodAffinityTerm(int(w.get("weight") or 0), _term(w.get("podAffinityTerm") or {}))
                        for w in value.get("preferredDuringSchedulingIgnoredDuringExecution") or ()),
    )


def pod_affinities(affinity) -> tuple[PodAffinity | None, PodAffinity | None]:
    """spec.affinity -> (podAffinity, podAntiAffinity), None where unset."""
    if not isinstance(affinity, dict):
        return None, None
    return _affinity(affinity.get("podAffinity")), _affinity(affinity.get("podAntiAffinity"))


@lru_cache(maxsize=4096)
def _pod_affinities_of_text(text: str) -> tuple[PodAffinity | None, PodAffinity | None]:
    return pod_affinities(json.loads(text))


def pod_affinities_shared(affinity) -> tuple[PodAffinity | None, PodAffinity | None]:
    """pod_affinities, the same objects for equal JSON: replicas share their parsed terms (and so
    one entry per distinct term in the pod index, and one parse)."""
    if not isinstance(affinity, dict) or ("podAffinity" not in affinity and "podAntiAffinity" not in affinity):
        return None, None
    return _pod_affinities_of_text(json.dumps(affinity, sort_keys=True))


def topology_spread_constraints(value) -> tuple[TopologySpreadConstraint, ...]:
    return tuple(
        TopologySpreadConstraint(
            max_skew=int(c.get("maxSkew") or 0),
            topology_key=c.get("topologyKey") or "",
            when_unsatisfiable=c.get("whenUnsatisfiable") or "",
            label_selector=label_selector(c.get("labelSelector")),
            min_domains=c.get("minDomains"),
            node_affinity_policy=c.get("nodeAffinityPolicy"),
            node_taints_policy=c.get("nodeTaintsPolicy"),
            match_label_keys=tuple(c.get("matchLabelKeys") or ()),
        )
        for c in value or ()
    )


def owner_references(value) -> tuple[OwnerReference, ...]:
    return tuple(OwnerReference(api_version=r.get("apiVersion") or "", kind=r.get("kind") or "",
                                name=r.get("name") or "", controller=bool(r.get("controller")))
                 for r in value or ())


def metadata_fields(manifest: dict) -> dict:
    """The PodSpec fields that come from the pod's metadata and status (a spec shared by replicas differs in
    these)."""
    meta = manifest.get("metadata") or {}
    labels = meta.get("labels")
    return {"labels": dict(labels) if isinstance(labels, dict) else {},
            "owner_references": owner_references(meta.get("ownerReferences")),
            **status_fields(manifest)}


def status_fields(manifest: dict) -> dict:
    """What preemption reads of a pod's status: status.startTime (seconds since the epoch, None when unset
    or unreadable), status.nominatedNodeName, and the reason of a True DisruptionTarget condition."""
    status = manifest.get("status")
    if not isinstance(status, dict):
        return {"start_time": None, "nominated_node_name": "", "disruption_target_reason": ""}
    reason = ""
    for c in status.get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == "DisruptionTarget" and c.get("status") == "True":
            reason = str(c.get("reason") or "")
    nominated = status.get("nominatedNodeName")
    return {"start_time": rfc3339_seconds(status.get("startTime")),
            "nominated_node_name": nominated if isinstance(nominated, str) else "",
            "disruption_target_reason": reason}


def rfc3339_seconds(value) -> float | None:
    """An RFC 3339 time ("2026-12-01T10:00:00Z") as seconds since the epoch; None when absent or not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None

