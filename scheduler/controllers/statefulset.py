"""The StatefulSet controller (pkg/controller/statefulset): pods named <set>-<ordinal> for ordinals
0..replicas-1, a lost one recreated under the same name; labels controller-revision-hash (<set>-<hash>),
statefulset.kubernetes.io/pod-name and apps.kubernetes.io/pod-index added to the template's, hostname and
subdomain (spec.serviceName) set, as newVersionedStatefulSetPod does. Events on the set:
SuccessfulCreate "create Pod NAME in StatefulSet SET successful", SuccessfulDelete "delete Pod ...".

podManagementPolicy OrderedReady (the default): one pod created per sync, and none while a lower ordinal
is not yet Running; scaling down removes the highest ordinal first, one per sync. Parallel: all at once.
Ready is Running here (the simulated pods have no probes)."""

from __future__ import annotations

from ..manifests.errors import ManifestError
from ..models import STATEFUL_SET, ClusterObject, Event, Pod
from ..state.events import events_record
from .hashing import template_hash
from .pods import OwnedPod, create_pods, delete_pods, owned_pods, owner_event, pod_from_template, template

CONTROLLER = "statefulset-controller"
REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def ordinal(set_name: str, pod_name: str) -> int | None:
    """As getParentNameAndOrdinal: the trailing -N of a pod named after its set, else None."""
    head, _, tail = pod_name.rpartition("-")
    return int(tail) if head == set_name and tail.isdigit() and (tail == "0" or not tail.startswith("0")) else None


def pod_manifest(sts: ClusterObject, i: int) -> dict:
    name = f"{sts.name}-{i}"
    labels = {**((template(sts).get("metadata") or {}).get("labels") or {}),
              REVISION_LABEL: f"{sts.name}-{template_hash(template(sts))}", POD_NAME_LABEL: name,
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


def sync(sts: ClusterObject) -> dict:
    """One pass of the set's pods: the pods created and deleted (names)."""
    want = sts.replicas if sts.replicas is not None else 1
    ordered = ((sts.manifest.get("spec") or {}).get("podManagementPolicy") or "OrderedReady") == "OrderedReady"
    by_ordinal: dict[int, OwnedPod] = {}
    for pod in owned_pods(sts):
        i = ordinal(sts.name, pod.name)
        if i is not None:
            by_ordinal[i] = pod
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
        elif ordered and (pod.deleting or pod.phase != "Running" or not pod.node_name):
            break  # OrderedReady: wait for this one before the next ordinal
    if not (ordered and created):
        condemned = sorted((i for i in by_ordinal if i >= want), reverse=True)
        for i in condemned[:1] if ordered else condemned:
            pod = by_ordinal[i]
            if not pod.deleting and delete_pods([pod]):
                deleted.append(pod.name)
                events.append(_event(sts, "delete", pod.name))
    events_record(events)
    return {"created": created, "deleted": deleted}


def sync_all() -> dict:
    out = {}
    for sts in ClusterObject.objects.filter(kind=STATEFUL_SET):
        result = sync(sts)
        if result["created"] or result["deleted"]:
            out[f"{sts.namespace}/{sts.name}"] = result
    return out
