"""A pod's life around the scheduler, for its page: who controls it (kubectl describe's "Controlled By", up
the owner chain: ReplicaSet then Deployment), how a deleted pod went (its DisruptionTarget condition:
DeletionByTaintManager, DeletionByPodGC, EvictionByEvictionAPI, as the row kept at deletion has it), and
what replaced it (the owner's SuccessfulCreate events after the deletion; a StatefulSet's replacement has
the same name), with the owner's events as `kubectl describe` of it would list them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from scheduler.models import ClusterObject, DeletedPod, Event, Pod

OWNER_EVENTS = 20  # the owner's latest events shown
# The pod a controller's SuccessfulCreate names: "Created pod: NAME" (ReplicaSet, ReplicationController),
# "create Pod NAME in StatefulSet SET successful" (StatefulSet).
_CREATED = re.compile(r"^(?:Created pod: (?P<rs>\S+)|create Pod (?P<sts>\S+) in StatefulSet \S+ successful)$")


@dataclass
class Owner:
    kind: str
    name: str
    exists: bool
    events: list = field(default_factory=list)


@dataclass
class Replacement:
    """A pod the owner created after this one went: the timeline from the deletion to its binding."""
    namespace: str
    name: str
    exists: bool
    created_after: float | None = None  # seconds after the deletion
    node: str = ""
    bound_after: float | None = None


@dataclass
class Lifecycle:
    owners: list[Owner]  # the controller first, then its controller, ...
    deleted: DeletedPod | None  # the latest pod of this name that was deleted
    disruption: dict | None  # its DisruptionTarget condition
    replacements: list["Replacement"]


def _controller(manifest: dict) -> dict | None:
    for ref in (manifest.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def owner_chain(manifest: dict, namespace: str) -> list[Owner]:
    owners, seen = [], set()
    ref = _controller(manifest)
    while ref and ref.get("uid") not in seen and len(owners) < 5:
        seen.add(ref.get("uid"))
        row = ClusterObject.objects.filter(namespace=namespace, kind=ref.get("kind"), uid=ref.get("uid")).first()
        owners.append(Owner(str(ref.get("kind")), str(ref.get("name")), row is not None))
        ref = _controller(row.manifest) if row is not None else None
    return owners


def disruption_of(manifest: dict) -> dict | None:
    for c in (manifest.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == "DisruptionTarget" and c.get("status") == "True":
            return c
    return None


def _replacement(namespace: str, name: str, deleted: DeletedPod) -> Replacement:
    row = Pod.objects.filter(namespace=namespace, name=name).first()
    if row is None:
        return Replacement(namespace, name, False)
    since = lambda t: round((t - deleted.deleted_at).total_seconds(), 1) if t else None  # noqa: E731
    return Replacement(namespace, name, True, since(row.created_at), row.node_name, since(row.bound_at))


def lifecycle(namespace: str, name: str, pod: Pod | None) -> Lifecycle:
    deleted = DeletedPod.objects.filter(namespace=namespace, name=name).order_by("-deleted_at", "-id").first()
    manifest = pod.manifest if pod is not None else (deleted.manifest if deleted is not None else {})
    owners = owner_chain(manifest, namespace)
    for owner in owners:
        owner.events = list(Event.objects.filter(involved_kind=owner.kind, involved_namespace=namespace,
                                                 involved_name=owner.name).order_by("-last_timestamp", "-id")[:OWNER_EVENTS])
    replacements = []
    if deleted is not None and owners:
        direct = owners[0]
        for e in direct.events:
            m = _CREATED.match(e.message.strip())
            if m and e.last_timestamp >= deleted.deleted_at:
                created = m.group("rs") or m.group("sts")
                if (created != name or pod is not None) and created not in {r.name for r in replacements}:
                    replacements.append(_replacement(namespace, created, deleted))
    return Lifecycle(owners=owners, deleted=deleted, disruption=disruption_of(deleted.manifest) if deleted else None,
                     replacements=replacements)
