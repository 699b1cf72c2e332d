"""Reconciliation (beat): cluster events move unschedulable pods, stale reservations are freed, dead workers'
in-flight pods reclaimed, pending pods the queue lost re-queued; and the periodic usage recount."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone as dt_timezone

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from .. import dispatch
from ..backends import get_backend
from ..models import ClusterEvent, Pod
from ..queue import hints
from ..queue.kick import kick
from ..queue.queues import get_queue
from ..state.gated import gated_pods
from ..state.preemptions import preemptions_due
from ..state.reservations import release_assumed, row_usage, usage_recount
from ..telemetry import metrics
from ..versions.profiles import scheduler_names

log = logging.getLogger(__name__)


_last_cluster_event_id: int | None = None
# The recorded kinds the queueing hints judge (scheduler/queue/hints.py); any other moves every pod.
_HINTED_KINDS = frozenset((ClusterEvent.NODE_ADD, ClusterEvent.NODE_UPDATE, ClusterEvent.ASSIGNED_POD_DELETE))


def forget_cluster_events() -> None:
    """Start again from the newest cluster event at the next reconcile (tests start afresh)."""
    global _last_cluster_event_id
    _last_cluster_event_id = None


def reconcile(*, queue=None) -> dict:
    """Repair the queue from the truth in Postgres; safe to run anywhere, any number of times."""
    global _last_cluster_event_id
    queue = queue or get_queue()
    now = timezone.now()
    report = {"expired": 0, "requeued": 0, "moved": 0, "reclaimed": 0, "preemptions_resent": 0}

    # Cluster events (from any process) move the unschedulable pods their queueing hints queue, as the
    # informers would (the process that made the change did so at once; this is for the others, and for a
    # queue that was lost).
    if _last_cluster_event_id is None:
        _last_cluster_event_id = ClusterEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    recorded = list(ClusterEvent.objects.filter(id__gt=_last_cluster_event_id)
                    .values_list("id", "kind", "object_name", "created_at"))
    if recorded:
        _last_cluster_event_id = recorded[-1][0]
        hinted = [(kind, name) for _, kind, name, _ in recorded if kind in _HINTED_KINDS]
        if hinted:
            hints.move_after_recorded(queue, hinted, since=min(at for *_, at in recorded))
        for kind in sorted({kind for _, kind, _, _ in recorded} - _HINTED_KINDS):
            queue.move_all_to_active_or_backoff(kind)
        report["moved"] += len({kind for _, kind, _, _ in recorded})

    # Reservations whose binding never came (a worker died between reserve and bind). One whose
    # binding is in flight (marked by its binder) is left alone: the binder's outcome settles it, or
    # the mirror seeing the pod bound. A mark older than the binding timeout (its binder died and its
    # job was lost with Redis) is freed only once the mirror has seen everything the cluster accepted up
    # to then: no binder sends a binding that late (see loop/bind.py), and one sent before and accepted
    # shows the pod bound in the mirror (node_name set), so its room is not handed to another pod. While
    # nobody watches (a failover, the API server down), nothing is claimed and no mark is freed.
    # Only a binding that goes out of this database needs that (a call to an API server cannot be taken
    # back): on the simulated cluster the binding is this database's own conditional write, which simply
    # finds the reservation gone, so a dead worker's pod is freed after the assume TTL as any other.
    stale = now - timedelta(seconds=settings.SCHEDBOARD_ASSUME_TTL_SECONDS)
    backend = get_backend()
    expirable = Q()
    through = None
    if backend.mirrors_bindings:
        expirable = Q(binding_at__isnull=True)
        through = backend.mirror_current_through()
        if through is not None:
            seen_until = min(now, datetime.fromtimestamp(through, tz=dt_timezone.utc))
            expirable |= Q(binding_at__lt=seen_until - timedelta(seconds=settings.SCHEDBOARD_BINDING_TIMEOUT_SECONDS))
    for pod in Pod.objects.filter(expirable, node_name="", assumed_at__lt=stale).exclude(assumed_node=""):
        if release_assumed(pod_id=pod.pk, node_name=pod.assumed_node, usage=row_usage(pod),
                           condition=expirable & Q(assumed_at__lt=stale)):
            if pod.binding_at is not None:
                log.warning("freed the reservation of %s on %s: its binding was marked in flight at %s and never "
                            "settled", pod.key, pod.assumed_node, pod.binding_at.isoformat())
            report["expired"] += 1
            queue.add(pod.key, pod.priority)

    # Preemptions whose task has not ended them in time (its worker died with it): their task again, which
    # evicts what is left or ends a preemption that is over (the preemptor is held until then).
    for job in preemptions_due(now=now):
        dispatch.send(dispatch.PREEMPT, job)
        report["preemptions_resent"] += 1

    # In-flight pods whose worker died, then pending pods the queue does not know (Redis lost). A mirror that
    # cannot say it is complete (its leader listing, or no leader) may hold half a list: a list queues its pods
    # itself once it is all stored (kube/mirror.py), as kube-scheduler schedules only after its caches sync.
    # The scan reads every pending pod, so it runs once a SCHEDBOARD_REQUEUE_LOST_SECONDS period (claimed in
    # the queue: a lost queue has lost its claim too, so it is scanned at the next reconcile).
    report["reclaimed"] = len(queue.reclaim_expired(None, settings.SCHEDBOARD_INFLIGHT_LEASE_SECONDS))
    if ((not backend.mirrors_bindings or through is not None)
            and queue.claim_period("requeue-lost", settings.SCHEDBOARD_REQUEUE_LOST_SECONDS)):
        report["requeued"] = _requeue_lost(queue, now)
    queue.flush()
    if queue.ready():  # activeQ, or backoffQ's rejected pods a pop takes when activeQ is empty
        kick()
    return report


def _requeue_lost(queue, now) -> int:
    """Queue every pending pod of ours the queue does not know; returns how many."""
    known = queue.keys()
    pending = Pod.objects.filter(node_name="", assumed_node="", deleting=False,
                                 scheduler_name__in=scheduler_names()).exclude(gated_pods())
    requeued = 0
    for ns, name, priority in pending.values_list("namespace", "name", "priority").iterator():
        key = f"{ns}/{name}"
        if key not in known:
            queue.add(key, priority)
            requeued += 1
    pending.filter(queued_at__isnull=True).update(queued_at=now)
    return requeued


def recount() -> dict:
    """The periodic recount of every node's usage (beat, SCHEDBOARD_RECOUNT_SECONDS): repairs drift, counts it."""
    report = usage_recount(on_repair=lambda resource: metrics.usage_drift_repaired.labels(resource).inc())
    metrics.usage_recounts.inc()
    if report["repaired"]:
        # Nodes that got room back may fit pods waiting as unschedulable.
        get_queue().move_all_to_active_or_backoff(ClusterEvent.NODE_UPDATE)
    return report
