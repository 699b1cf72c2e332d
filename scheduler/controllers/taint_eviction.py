"""The taint eviction controller (pkg/controller/tainteviction): a pod on a node with NoExecute taints is
deleted at once when it does not tolerate them all, after the least tolerationSeconds of the tolerations
it uses when all carry one, and never when one of them has none. A deletion is announced with the
TaintManagerEviction event and writes DisruptionTarget/DeletionByTaintManager; lifting the taints before
then cancels it ("Cancelling deletion of Pod ...").

Upstream starts a pod's clock when it notices the taint (or the pod on the tainted node); we start it at
the taint's timeAdded (set by the node controller, or by the API server for any NoExecute taint) or the
pod's binding, whichever is later, so the clock survives our runs."""

from __future__ import annotations

from datetime import datetime, timezone as dt_timezone

from django.utils.dateparse import parse_datetime

from ..cluster.disruption import DELETION_BY_TAINT_MANAGER, evict
from ..engine.pods import Taint, Toleration
from ..engine.plugins.taint_toleration import tolerates
from ..models import Event, Node, Pod
from ..state.events import EventSpec, events_record
from . import memory

CONTROLLER = "taint-eviction-controller"
REASON = "TaintManagerEviction"
CONDITION_MESSAGE = "Taint manager: deleting due to NoExecute taint"
_SCHEDULED = "taint-eviction"  # "ns/name" -> when its deletion fires (upstream's timed work queue)


def _tolerations(manifest: dict) -> list[Toleration]:
    out = []
    for t in (manifest.get("spec") or {}).get("tolerations") or ():
        if isinstance(t, dict):
            out.append(Toleration(key=t.get("key") or "", operator=t.get("operator") or "Equal", value=t.get("value") or "",
                                  effect=t.get("effect") or "", toleration_seconds=t.get("tolerationSeconds")))
    return out


def min_toleration_seconds(taints: list[Taint], tolerations: list[Toleration]) -> float | None:
    """0 to delete now, None to tolerate forever, else seconds (GetMatchingTolerations + getMinTolerationTime)."""
    used = []
    for taint in taints:
        match = next((t for t in tolerations if tolerates(t, taint)), None)
        if match is None:
            return 0
        used.append(match)
    if not used:
        return 0
    seconds = [t.toleration_seconds for t in used if t.toleration_seconds is not None]
    if not seconds:
        return None
    return max(0, min(seconds))


def _event(key: str, message: str) -> EventSpec:
    namespace, _, name = key.partition("/")
    return EventSpec(type=Event.NORMAL, reason=REASON, message=f"{message} {key}", kind="Pod", namespace=namespace,
                     name=name, reporting_controller=CONTROLLER)


def run(*, now: datetime | None = None, record_at: datetime | None = None) -> dict:
    """One pass: the pods deleted, and the evictions still waiting (key -> seconds left). `now` decides what
    is due; events and conditions are stamped `record_at` (default `now`): a scenario's clock runs ahead of
    the wall's, and what it writes must not be dated in the future."""
    now = now or datetime.now(dt_timezone.utc)
    record_at = record_at or now
    stamp = now.timestamp()
    waiting: dict[str, float] = {}
    due: list[str] = []
    # Only tainted nodes can carry a NoExecute taint: the others are left out in the query (no manifest decoded).
    for node_name, manifest in Node.objects.filter(manifest__spec__has_key="taints").values_list("name", "manifest"):
        raw = [t for t in (manifest.get("spec") or {}).get("taints") or ()
               if isinstance(t, dict) and t.get("effect") == "NoExecute"]
        if not raw:
            continue
        taints = [Taint(key=t.get("key") or "", value=t.get("value") or "", effect="NoExecute") for t in raw]
        added = max((parse_datetime(str(t.get("timeAdded") or "")) or now for t in raw), default=now)
        for namespace, name, pod_manifest, bound_at in (Pod.objects.filter(node_name=node_name, deleting=False)
                                                        .values_list("namespace", "name", "manifest", "bound_at")):
            seconds = min_toleration_seconds(taints, _tolerations(pod_manifest))
            if seconds is None:
                continue
            start = max(added, bound_at or added).timestamp()
            fire = start + seconds
            key = f"{namespace}/{name}"
            if seconds == 0 or fire <= stamp:
                due.append(key)
            else:
                waiting[key] = fire
    scheduled = memory.recall(_SCHEDULED)
    # Work scheduled before and no longer wanted (taints lifted, toleration now forever): cancelled, with the event.
    cancelled = [key for key in scheduled if key not in waiting and key not in due
                 and Pod.objects.filter(namespace=key.partition("/")[0], name=key.partition("/")[2]).exists()]
    events_record([_event(key, "Cancelling deletion of Pod") for key in cancelled], now=record_at)
    memory.forget(_SCHEDULED, [key for key in scheduled if key not in waiting])
    memory.remember(_SCHEDULED, waiting)
    deleted = []
    for key in due:
        namespace, _, name = key.partition("/")
        if evict(namespace=namespace, name=name, reason=DELETION_BY_TAINT_MANAGER, message=CONDITION_MESSAGE,
                 events=[_event(key, "Marking for deletion Pod")], now=record_at):
            deleted.append(key)
    return {"evicted": deleted, "waiting": {k: round(v - stamp, 3) for k, v in sorted(waiting.items())},
            "cancelled": cancelled}
