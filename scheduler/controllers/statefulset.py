"""The StatefulSet controller (pkg/controller/statefulset): pods named <set>-<ordinal> for ordinals
0..replicas-1, a lost one recreated under the same name; labels controller-revision-hash (<set>-<hash>),
statefulset.kubernetes.io/pod-name and apps.kubernetes.io/pod-index added to the template's, hostname and
subdomain (spec.serviceName) set, as newVersionedStatefulSetPod does. Events on the set:
SuccessfulCreate "create Pod NAME in StatefulSet SET successful", SuccessfulDelete "delete Pod ...".

podManagementPolicy OrderedReady (the default): one pod created per sync, and none while a lower ordinal
is not yet Running and Ready; scaling down removes the highest ordinal first, one per sync. Parallel: all
at once. The set claims its pods as upstream (adoption and release of the pods named after it that its
selector matches: claims.py). updateStrategy RollingUpdate (the default): once every pod is healthy, the
highest ordinal at or above the partition whose controller-revision-hash is not the template's is deleted
(and recreated at the new revision), one at a time; OnDelete leaves them until deleted. The status counts
the pods (replicas, ready, available after minReadySeconds, current and updated revisions).

The revision names are `<set>-<hash>` with the pod-template-hash of hashing.py; upstream names a
ControllerRevision by the hash of its serialized patch, which no pod label here depends on otherwise."""

from __future__ import annotations

from datetime import datetime, timezone as dt_timezone

from ..manifests.errors import ManifestError
from ..models import STATEFUL_SET, ClusterObject, Event, Pod
from ..state.events import events_record
from .claims import claim_pods, selector_of
from .hashing import template_hash
from .owned_objects import generation, status_of, write_status
from .pods import OwnedPod, create_pods, delete_pods, namespace_pods, owner_event, pod_from_template, template

CONTROLLER = "statefulset-controller"
REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def ordinal(set_name: str, pod_name: str) -> int | None:
    """As getParentNameAndOrdinal: the trailing -N of a pod named after its set, else None."""
    head, _, tail = pod_name.rpartition("-")
    return int(tail) if head == set_name and tail.isdigit() and (tail == "0" or not tail.startswith("0")) else None


def update_revision(sts: ClusterObject) -> str:
    return f"{sts.name}-{template_hash(template(sts), (status_of(sts).get('collisionCount')))}"


def pod_manifest(sts: ClusterObject, i: int) -> dict:
    name = f"{sts.name}-{i}"
    labels = {**((template(sts).get("metadata") or {}).get("labels") or {}),
              REVISION_LABEL: update_revision(sts), POD_NAME_LABEL: name,
              POD_INDEX_LABEL: str(i)}
    changes = {"hostname": name}
    service = (sts.manifest.get("spec") or {}).get("serviceName")
    if service:
        changes["subdomain"] = service
    return pod_from_template(sts, name, labels=labels, spec_changes=changes)


def _event(sts: ClusterObject, verb: str, pod: str, type: str = Event.NORMAL, error: str = ""):
    if error:
        return owner_event(sts, f"Failed{verb.capitalize()}",
                           f"{verb} Pod {pod} in StatefulSet {sts.name} failed error: {error}", CONTROLLER, type)
    return owner_event(sts, f"Successful{verb.capitalize()}", f"{verb} Pod {pod} in StatefulSet {sts.name} successful",
                       CONTROLLER)


def _revision_of(pod: OwnedPod) -> str:
    return pod.labels.get(REVISION_LABEL, "")


def _healthy(pod: OwnedPod) -> bool:
    """isHealthy: Running and Ready, not terminating."""
    return pod.phase == "Running" and pod.ready and not pod.deleting


def _status(sts: ClusterObject, pods: list[OwnedPod], now: datetime) -> dict:
    """As updateStatefulSet's status: the counts over the set's pods, the current revision moving to the update
    revision once a rolling update has every pod updated and ready."""
    spec = sts.manifest.get("spec") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    old = status_of(sts)
    update = update_revision(sts)
    current = old.get("currentRevision") or update
    counts = {"replicas": len(pods), "readyReplicas": 0, "availableReplicas": 0, "currentReplicas": 0,
              "updatedReplicas": 0}
    for p in pods:
        if p.phase == "Running" and p.ready:
            counts["readyReplicas"] += 1
            counts["availableReplicas"] += p.available(min_ready, now)
        if not p.deleting:
            counts["currentReplicas"] += _revision_of(p) == current
            counts["updatedReplicas"] += _revision_of(p) == update
    rolling = ((spec.get("updateStrategy") or {}).get("type") or "RollingUpdate") == "RollingUpdate"
    if rolling and counts["updatedReplicas"] == counts["replicas"] and counts["readyReplicas"] == counts["replicas"]:
        counts["currentReplicas"], current = counts["updatedReplicas"], update
    status = {"observedGeneration": generation(sts), "replicas": counts["replicas"]}
    for key in ("readyReplicas", "currentReplicas", "updatedReplicas"):
        if counts[key]:
            status[key] = counts[key]
    status.update({"currentRevision": current, "updateRevision": update})
    if isinstance(old.get("collisionCount"), int):
        status["collisionCount"] = old["collisionCount"]
    status["availableReplicas"] = counts["availableReplicas"]  # not omitempty
    return status


def _rolling_update(sts: ClusterObject, by_ordinal: dict[int, OwnedPod], want: int) -> list[str]:
    """The RollingUpdate pass: the highest ordinal (at or above the partition) not at the update revision is
    deleted, once every one above it is healthy; none while an updated one is not."""
    strategy = (sts.manifest.get("spec") or {}).get("updateStrategy") or {}
    if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
        return []  # OnDelete: the pods change when they are deleted
    partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
    update = update_revision(sts)
    for target in range(want - 1, partition - 1, -1):
        pod = by_ordinal.get(target)
        if pod is None:
            return []
        if _revision_of(pod) != update and not pod.deleting:
            return delete_pods([pod])
        if not _healthy(pod):
            return []
    return []


def sync(sts: ClusterObject, now: datetime | None = None) -> dict:
    """One pass of the set's pods: the pods created and deleted (names)."""
    now = now or datetime.now(dt_timezone.utc)
    want = sts.replicas if sts.replicas is not None else 1
    ordered = ((sts.manifest.get("spec") or {}).get("podManagementPolicy") or "OrderedReady") == "OrderedReady"
    selector = selector_of(sts)
    # As upstream's isMemberOf filter: only pods named <set>-<ordinal> are claimed.
    pods = claim_pods(sts, [p for p in namespace_pods(sts.namespace) if ordinal(sts.name, p.name) is not None],
                      lambda p: selector.matches(p.labels))
    by_ordinal: dict[int, OwnedPod] = {}
    for pod in pods:
        by_ordinal[ordinal(sts.name, pod.name)] = pod
    created, deleted, events = [], [], []
    for i in range(want):
        pod = by_ordinal.get(i)
        if pod is None:
            manifest = pod_manifest(sts, i)
            if Pod.objects.filter(namespace=sts.namespace, name=manifest["metadata"]["name"]).exists():
                # Someone else's pod holds the name (the API server would answer AlreadyExists): not ours to take.
                events.append(_event(sts, "create", manifest["metadata"]["name"], Event.WARNING,
                                     f'pods "{manifest["metadata"]["name"]}" already exists'))
                break
            try:
                create_pods(sts, [manifest])
            except ManifestError as e:
                events.append(_event(sts, "create", manifest["metadata"]["name"], Event.WARNING, str(e.problems[0])))
                break
            created.append(manifest["metadata"]["name"])
            events.append(_event(sts, "create", manifest["metadata"]["name"]))
            if ordered:
                break
        elif pod.phase in ("Failed", "Succeeded") and not pod.deleting:
            # A terminated pod is deleted, and recreated under its name next sync.
            deleted += delete_pods([pod])
            events.append(_event(sts, "delete", pod.name))
            if ordered:
                break
        elif ordered and not _healthy(pod):
            break  # OrderedReady: wait for this one before the next ordinal
    if not (ordered and created):
        condemned = sorted((i for i in by_ordinal if i >= want), reverse=True)
        for i in condemned[:1] if ordered else condemned:
            pod = by_ordinal[i]
            if not pod.deleting and delete_pods([pod]):
                deleted.append(pod.name)
                events.append(_event(sts, "delete", pod.name))
    if not created and not deleted and all(i in by_ordinal and _healthy(by_ordinal[i]) for i in range(want)):
        for name in _rolling_update(sts, by_ordinal, want):
            deleted.append(name)
            events.append(_event(sts, "delete", name))
    events_record(events)
    write_status(sts, _status(sts, pods, now))
    return {"created": created, "deleted": deleted}


def sync_all(now: datetime | None = None) -> dict:
    out = {}
    for sts in ClusterObject.objects.filter(kind=STATEFUL_SET):
        result = sync(sts, now)
        if result["created"] or result["deleted"]:
            out[f"{sts.namespace}/{sts.name}"] = result
    return out
