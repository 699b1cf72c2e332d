"""The node cache and the scheduling queue as they were at a past instant, rebuilt from the recorded history.

Sources: pods (live rows, and deleted ones kept by migration 0011's trigger with their deletion time) say
when each pod was queued, bound (and where) and deleted; the Attempt rows say when each was tried, with
what result, and where a scheduled pod was assumed. So at an instant T:

  bound on a node  the pod's bound_at <= T < its deletion (Binding rows say the same; the test checks it)
  assumed          a scheduled attempt finished by T and the pod not bound yet at T (a failed binding:
                   until the binding's end, finished_at + binding_ms)
  in flight        an attempt started by T and not finished at T
  the sub-queues   from the pod's latest attempt before T, as the queue treats its result: none yet ->
                   active; unschedulable -> unschedulable (flushed to active after 5 minutes,
                   podMaxInUnschedulablePodsDuration); an error or a failed binding -> backoff until its
                   backoff (initial doubling to max, by attempts) runs out, then active.
  gated            created by T with scheduling gates, its last gate removed after T (Pod.ungated_at,
                   migration 0016) or not yet: gates are set only at creation and only ever removed, so a pod
                   is gated from its creation to that instant. Which of several gates were left at T is not
                   recorded: the page shows the gates it has now, or when the last went.

A node changed since T shows the allocatable and cordon it had at T (NodeRevision, migration 0014, keeps
each manifest a change replaced). What the history cannot say, so the rewind does not either: a node's
changes before migration 0014 or past retention (today's columns), and when a cluster event moved a pod out
of the unschedulable queue before the flush (it shows as unschedulable until its next attempt).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache

from django.db import connection
from django.db.models import Q

from ..engine.queue import calculate_backoff_duration
from ..engine.pods import DEFAULT_SCHEDULER_NAME
from ..engine.scheduling_gates import gates_of
from ..engine.resources import CPU, MEMORY, PODS
from ..manifests.errors import ManifestError
from ..manifests.objects import node_from_manifest
from ..models import (RESULT_BIND_FAILED, RESULT_ERROR, RESULT_SCHEDULED, RESULT_UNSCHEDULABLE, Attempt, Binding,
                      DeletedNode, DeletedPod, Node, NodeRevision, Pod, SchedulerConfigVersion)

# As podMaxInUnschedulablePodsDuration: the flush moves a pod out of the unschedulable queue after this.
POD_MAX_IN_UNSCHEDULABLE_PODS_SECONDS = 300.0
# How far before T a still-assumed pod's attempt can lie (the binding timeout, with room).
ASSUMED_LOOKBACK = timedelta(hours=1)
AROUND = 25  # attempts and bindings listed on each side of T

ACTIVE, BACKOFF, UNSCHEDULABLE, IN_FLIGHT = "active", "backoff", "unschedulable", "in_flight"
QUEUES = (ACTIVE, BACKOFF, UNSCHEDULABLE)

_POD_FIELDS = ("namespace", "name", "uid", "priority", "req_cpu", "req_memory", "node_name", "bound_at", "queued_at")


@dataclass
class RewoundNode:
    name: str
    alloc_cpu: int
    alloc_memory: int
    alloc_pods: int
    unschedulable: bool
    req_cpu: int = 0  # bound and assumed pods, as the cache counts them
    req_memory: int = 0
    pods: int = 0
    assumed: list[str] = field(default_factory=list)
    bound_cpu: int = 0  # bound pods only (what the audit's bindings add up to)
    bound_memory: int = 0
    deleted_at: datetime | None = None  # a node deleted since T
    revised: bool = False  # changed since T: allocatable and unschedulable as they were (NodeRevision)

    def percent(self, resource: str) -> int:
        alloc = {"cpu": self.alloc_cpu, "memory": self.alloc_memory, "pods": self.alloc_pods}[resource]
        used = {"cpu": self.req_cpu, "memory": self.req_memory, "pods": self.pods}[resource]
        return round(100 * used / alloc) if alloc else 0

    # For the rewind page's template, which cannot pass arguments.
    percent_cpu = property(lambda self: self.percent("cpu"))
    percent_memory = property(lambda self: self.percent("memory"))
    req_cores = property(lambda self: self.req_cpu / 1000)
    alloc_cores = property(lambda self: self.alloc_cpu / 1000)
    req_memory_gib = property(lambda self: self.req_memory / 2**30)
    alloc_memory_gib = property(lambda self: self.alloc_memory / 2**30)


@dataclass
class RewoundPod:
    key: str
    priority: int
    queue: str
    since: datetime  # when it entered that queue (queued, or its last attempt's end)
    attempts: int
    last_result: str = ""
    last_message: str = ""
    backoff_expires: datetime | None = None
    attempt_id: int | None = None


@dataclass
class RewoundGated:
    """A pod held by its scheduling gates at T (upstream's Gated pods in unschedulablePods)."""

    key: str
    priority: int
    since: datetime  # its creation: gates are set only then
    gates: list[str]  # the gates it has now (or had when deleted): those of T include them
    ungated_at: datetime | None = None  # its last gate removed since T
    deleted_at: datetime | None = None


@dataclass
class Rewind:
    at: datetime
    nodes: list[RewoundNode]
    queues: dict[str, list[RewoundPod]]
    in_flight: list[RewoundPod]
    gated: list[RewoundGated]
    attempts_before: list[Attempt]
    attempts_after: list[Attempt]
    bindings_before: list[Binding]
    bindings_after: list[Binding]
    oldest_attempt: datetime | None


def _pods_at(at: datetime) -> list[dict]:
    """Every pod that existed at T: live rows created by then, and deleted rows created by then and deleted after."""
    live = Pod.objects.filter(created_at__lte=at).values(*_POD_FIELDS)
    gone = DeletedPod.objects.filter(created_at__lte=at, deleted_at__gt=at).values(*_POD_FIELDS)
    return list(live) + list(gone)


def _nodes_at(at: datetime) -> list[RewoundNode]:
    fields = ("name", "alloc_cpu", "alloc_memory", "alloc_pods", "unschedulable")
    nodes = [RewoundNode(*row) for row in Node.objects.filter(created_at__lte=at).values_list(*fields)]
    for *row, deleted in DeletedNode.objects.filter(created_at__lte=at, deleted_at__gt=at).order_by("deleted_at").values_list(
            *fields, "deleted_at"):
        nodes.append(RewoundNode(*row, deleted_at=deleted))
    unique = {n.name: n for n in nodes}  # a name deleted and added again since: the one of T's time wins (the later row)
    # A node changed since T (migration 0014 keeps the manifest each change replaced): as it was at T.
    for name, manifest in (NodeRevision.objects.filter(name__in=unique, replaced_at__gt=at)
                           .order_by("name", "replaced_at", "id").values_list("name", "manifest")):
        n = unique[name]
        if n.revised:
            continue  # the earliest change after T holds the manifest of T
        n.revised = True
        try:
            spec = node_from_manifest(manifest)
        except ManifestError:
            continue  # a row the decoder refuses now: today's columns
        n.alloc_cpu, n.alloc_memory = spec.allocatable.get(CPU, 0), spec.allocatable.get(MEMORY, 0)
        n.alloc_pods, n.unschedulable = spec.allocatable.get(PODS, 0), spec.unschedulable
    return sorted(unique.values(), key=lambda n: n.name)


def _gated_at(at: datetime, scheduler_names: set[str] | None) -> list[RewoundGated]:
    """The pods gated at T: created by then with gates, their last gate removed after T or never, not deleted
    by T; with `scheduler_names`, those of these profiles only (another scheduler's gated pods are not ours)."""
    held = Q(ungated_at__gt=at) | Q(ungated_at__isnull=True, manifest__spec__has_key="schedulingGates")
    fields = ("namespace", "name", "priority", "created_at", "ungated_at", "manifest")
    rows = [(*row, None) for row in Pod.objects.filter(held, created_at__lte=at).values_list(*fields)]
    rows += DeletedPod.objects.filter(held, created_at__lte=at, deleted_at__gt=at).values_list(*fields, "deleted_at")
    out = []
    for ns, name, priority, created, ungated, manifest, deleted in rows:
        spec = (manifest or {}).get("spec") or {}
        if spec.get("nodeName") or (ungated is None and not gates_of(manifest)):
            continue  # bound from its creation (the API server refuses nodeName with gates), or no gates at all
        if scheduler_names is not None and (spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME) not in scheduler_names:
            continue
        out.append(RewoundGated(f"{ns}/{name}", priority, created, gates_of(manifest), ungated, deleted))
    # As the live page lists them: by priority, then by age.
    return sorted(out, key=lambda g: (-g.priority, g.since, g.key))


def latest_attempts(queryset, keys: set[tuple[str, str]]) -> dict[tuple[str, str], Attempt]:
    """The newest of these attempts per (namespace, pod name) among `keys`: DISTINCT ON on Postgres (the
    attempt_by_pod index's order), the first row per pod elsewhere."""
    if not keys:
        return {}
    rows = (queryset.filter(pod_name__in={name for _, name in keys}, namespace__in={ns for ns, _ in keys})
            .order_by("namespace", "pod_name", "-started_at", "-id"))
    if connection.vendor == "postgresql":
        rows = rows.distinct("namespace", "pod_name")
    out: dict[tuple[str, str], Attempt] = {}
    for a in rows:
        key = (a.namespace, a.pod_name)
        if key in keys and key not in out:
            out[key] = a
    return out


@lru_cache(maxsize=64)
def _backoff_bounds(version: int) -> tuple[float, float]:
    from ..versions.profiles import config_for_version

    try:
        config = config_for_version(version)
    except SchedulerConfigVersion.DoesNotExist:
        from ..versions.profiles import initial_config

        config = initial_config()
    return float(config.pod_initial_backoff_seconds), float(config.pod_max_backoff_seconds)


def _assumed_at(at: datetime, pods: dict[tuple[str, str], dict]) -> dict[tuple[str, str], str]:
    """(namespace, name) -> node for the pods assumed (reserved, not yet bound) at T."""
    out = {}
    attempts = (Attempt.objects.filter(result__in=(RESULT_SCHEDULED, RESULT_BIND_FAILED), finished_at__lte=at,
                                       finished_at__gte=at - ASSUMED_LOOKBACK)
                .values_list("namespace", "pod_name", "pod_uid", "node_name", "finished_at", "result", "binding_ms"))
    for ns, name, uid, node, finished, result, binding_ms in attempts:
        pod = pods.get((ns, name))
        if pod is None or (uid and pod["uid"] and uid != pod["uid"]) or not node:
            continue
        if pod["bound_at"] is not None and pod["bound_at"] <= at:
            continue
        if result == RESULT_BIND_FAILED and finished + timedelta(milliseconds=binding_ms or 0) <= at:
            continue
        out[(ns, name)] = node
    return out


def _queued(pod: dict, latest: Attempt | None, at: datetime) -> RewoundPod:
    key = f"{pod['namespace']}/{pod['name']}"
    if latest is None:
        return RewoundPod(key, pod["priority"], ACTIVE, pod["queued_at"], 0)
    out = RewoundPod(key, pod["priority"], ACTIVE, latest.finished_at or latest.started_at, latest.number,
                     latest.result, latest.message, attempt_id=latest.pk)
    if latest.finished_at is None or latest.finished_at > at:
        out.queue, out.since = IN_FLIGHT, latest.started_at
        return out
    initial, maximum = _backoff_bounds(latest.profile_version)
    backoff = timedelta(seconds=calculate_backoff_duration(latest.number, initial, maximum))
    if latest.result == RESULT_UNSCHEDULABLE:
        flushed = out.since + timedelta(seconds=POD_MAX_IN_UNSCHEDULABLE_PODS_SECONDS)
        if at < flushed:
            out.queue, out.backoff_expires = UNSCHEDULABLE, out.since + backoff
        else:
            out.since = flushed
        return out
    if latest.result == RESULT_BIND_FAILED:
        out.since = latest.finished_at + timedelta(milliseconds=latest.binding_ms or 0)
    if latest.result in (RESULT_ERROR, RESULT_BIND_FAILED):
        expires = out.since + backoff
        if at < expires:
            out.queue, out.backoff_expires = BACKOFF, expires
        else:
            out.since = expires
    return out


def rewind(*, at: datetime, around: int = AROUND, scheduler_names: set[str] | None = None) -> Rewind:
    """The node cache and the queue at `at`, with the attempts and bindings around it; the gated pods of
    `scheduler_names` (every scheduler's when None)."""
    pods = {(p["namespace"], p["name"]): p for p in _pods_at(at)}
    gated = _gated_at(at, scheduler_names)
    gated_keys = {tuple(g.key.split("/", 1)) for g in gated}
    nodes = _nodes_at(at)
    by_name = {n.name: n for n in nodes}
    for p in pods.values():
        if p["node_name"] and p["bound_at"] is not None and p["bound_at"] <= at and p["node_name"] in by_name:
            n = by_name[p["node_name"]]
            n.bound_cpu += p["req_cpu"]
            n.bound_memory += p["req_memory"]
            n.pods += 1
    for n in nodes:
        n.req_cpu, n.req_memory = n.bound_cpu, n.bound_memory
    assumed = _assumed_at(at, pods)
    for (ns, name), node in sorted(assumed.items()):
        n = by_name.get(node)
        if n is not None:
            p = pods[(ns, name)]
            n.req_cpu += p["req_cpu"]
            n.req_memory += p["req_memory"]
            n.pods += 1
            n.assumed.append(f"{ns}/{name}")

    pending = {k: p for k, p in pods.items() if p["queued_at"] is not None and p["queued_at"] <= at
               and not (p["bound_at"] is not None and p["bound_at"] <= at) and k not in assumed and k not in gated_keys}
    latest = latest_attempts(Attempt.objects.filter(started_at__lte=at), set(pending))
    queues: dict[str, list[RewoundPod]] = {q: [] for q in QUEUES}
    in_flight = []
    for key, p in pending.items():
        a = latest.get(key)
        if a is not None and a.pod_uid and p["uid"] and a.pod_uid != p["uid"]:
            a = None  # an earlier pod of the same name
        entry = _queued(p, a, at)
        (in_flight if entry.queue == IN_FLIGHT else queues[entry.queue]).append(entry)
    # Each sub-queue in the order it hands pods out: activeQ by priority then time, the others by time.
    queues[ACTIVE].sort(key=lambda e: (-e.priority, e.since, e.key))
    queues[BACKOFF].sort(key=lambda e: (e.backoff_expires, e.key))
    queues[UNSCHEDULABLE].sort(key=lambda e: (e.since, e.key))
    in_flight.sort(key=lambda e: (e.since, e.key))

    attempts = Attempt.objects.defer("trace", "candidates")
    return Rewind(
        at=at, nodes=nodes, queues=queues, in_flight=in_flight, gated=gated,
        attempts_before=list(reversed(attempts.filter(started_at__lte=at).order_by("-started_at", "-id")[:around])),
        attempts_after=list(attempts.filter(started_at__gt=at).order_by("started_at", "id")[:around]),
        bindings_before=list(reversed(Binding.objects.filter(bound_at__lte=at).order_by("-bound_at", "-id")[:around])),
        bindings_after=list(Binding.objects.filter(bound_at__gt=at).order_by("bound_at", "id")[:around]),
        oldest_attempt=Attempt.objects.order_by("started_at").values_list("started_at", flat=True).first(),
    )

