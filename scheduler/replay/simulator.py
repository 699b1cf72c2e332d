"""The virtual-time replayer: one trace, one configuration, the real engine and queue.

Drives scheduler.engine's schedule_batch, Cache and Algorithm and the MemoryQueue (backoff, the
unschedulable pool, moves on cluster events) on a virtual clock, as one worker would: pop a batch,
schedule it pod by pod (each placement assumed, so the next pod sees it), bind at once, put the
failures back. Time only jumps: to the next event, the next backoff expiry or the next
unschedulable-pool timeout, so an hour of trace replays in the time its cycles take. Nothing here
touches the database.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from scheduler.engine import schedule_one as cycle
from scheduler.engine.cache import Cache
from scheduler.engine.cluster_objects import RC_KIND, RS_KIND, SS_KIND, ClusterObjects
from scheduler.engine.config import SchedulerConfig, config_from_dict
from scheduler.engine.framework import Algorithm, Profile
from scheduler.engine.labels import LabelSelector, LabelSelectorRequirement
from scheduler.engine.nodes import NodeSpec, NodeTable
from scheduler.engine.nominator import Nominator
from scheduler.engine.plugins.default_preemption import DefaultPreemption
from scheduler.engine.pods import PodSpec
from scheduler.engine.queueing_hints import (AFFINITY_REASONS, SPREAD_REASONS, PodChange, PodDelete, assigned,
                                             keys_to_move, node_added, node_update_events)
from scheduler.engine.queue import UNSCHEDULABLE_Q, MemoryQueue
from scheduler.manifests.errors import ManifestError
from scheduler.manifests.objects import node_from_manifest, pod_from_manifest

from . import trace as tr
from .metrics import Sample, sample_of

# The live worker's default (SCHEDBOARD_BATCH_SIZE) when traces began to record theirs (512 since 4 December): a
# trace without one replays in batches this big.
DEFAULT_BATCH_SIZE = 256
# The live worker puts a batch's failed pods back one after another, each at its own instant; the replay's
# clock stands still through a batch, so it steps each one this much further (the queue's unit: microseconds).
PUT_BACK_STEP = 1e-6


class VirtualClock:
    """Seconds since the trace's start; only the replayer moves it."""

    def __init__(self, now: float = 0.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class ReplayPod:
    spec: PodSpec
    arrived: float | None  # None: bound before the trace started
    node: str | None = None
    bound_at: float | None = None
    attempts: int = 0
    message: str = ""  # the last failure's message
    decision: dict | None = None  # the binding attempt: candidates, the top scores (decision_summary)


@dataclass
class RunResult:
    """What one configuration did to the trace; metrics.py turns it into the report."""

    config_name: str
    pods: dict[str, ReplayPod]
    table: NodeTable
    samples: list[Sample] = field(default_factory=list)
    # Every binding made, pods deleted later included: key -> the nodes in order (a name can come back).
    bindings: dict[str, list[str]] = field(default_factory=dict)
    attempts: int = 0
    preemptions: int = 0  # victims evicted (upstream's preemption_victims)
    evicted: list[str] = field(default_factory=list)  # the victims, by key (gone from the cluster, as deleted)
    preemptors: int = 0  # cycles whose PostFilter evicted someone (upstream's preemption_attempts with victims)
    lost_with_node: int = 0
    bind_failures: int = 0  # bindings refused as the live run's were
    skipped_events: list[str] = field(default_factory=list)  # events that could not apply, with why
    virtual_seconds: float = 0.0
    wall_seconds: float = 0.0


class _Reserves:
    """schedule_batch's Cluster port for one replaying worker: nobody else takes room, so every
    reservation holds (the live race between workers is what replay leaves out)."""

    def reserve_many(self, placements):
        return cycle.ReserveOutcome(conflicts=set(), gone=set())

    def refresh_nodes(self, cache, node_names):  # pragma: no cover - never a conflict to refresh after
        pass


def cluster_objects(manifests: list[dict]) -> ClusterObjects:
    """The objects PodTopologySpread and InterPodAffinity read, from their v1 manifests."""
    objects = ClusterObjects()

    def selector(raw) -> LabelSelector | None:
        if raw is None:
            return None
        exprs = [LabelSelectorRequirement(e["key"], e["operator"], tuple(e.get("values") or ()))
                 for e in raw.get("matchExpressions") or ()]
        return LabelSelector.of(raw.get("matchLabels") or {}, exprs)

    for m in manifests:
        kind, api_version = m.get("kind"), m.get("apiVersion")
        meta = m.get("metadata") or {}
        ns, name = meta.get("namespace") or "default", meta.get("name") or ""
        spec = m.get("spec") or {}
        if kind == "Namespace":
            objects.namespace_labels[name] = dict(meta.get("labels") or {})
        elif kind == "Service":
            objects.services.setdefault(ns, []).append(spec.get("selector"))
        elif (api_version, kind) == RC_KIND:
            objects.replication_controllers[(ns, name)] = spec.get("selector")
        elif (api_version, kind) == RS_KIND:
            objects.replica_sets[(ns, name)] = selector(spec.get("selector"))
        elif (api_version, kind) == SS_KIND:
            objects.stateful_sets[(ns, name)] = selector(spec.get("selector"))
    return objects


class _FollowingAlgorithm(Algorithm):
    """The replay's Algorithm: before a pod's cycle, its random choices go where the live attempt's stood
    (engine/tiebreak.py), so a tie among equal top scores or preemption's offset among candidates falls as it
    fell live, whichever worker drew it and wherever its stream was. Attempts the live run did not make draw on."""

    def __init__(self, seed: int | None, nominator, live_draws: Callable[[PodSpec], list | None]):
        super().__init__(seed, nominator=nominator)
        self.live_draws = live_draws

    def schedule(self, profile, pod, nodes, *, all_nodes: bool = False):
        at = self.live_draws(pod)
        if at is not None:
            seed, position, start_index = at
            self.tiebreak.seek(seed, position)
            self.next_start_node_index = start_index
        return super().schedule(profile, pod, nodes, all_nodes=all_nodes)


class Replayer:
    """Replays one trace under one configuration (or, with config=None, under the recorded ones)."""

    def __init__(self, trace: tr.Trace, *, config: SchedulerConfig | None, name: str, seed: int | None,
                 batch_size: int | None = None, cycle_seconds: float = 0.0,
                 pace: Callable[[float], None] | None = None,
                 on_progress: Callable[[int, int], None] | None = None,
                 specs: dict[int, PodSpec] | None = None, follow_live_draws: bool = True):
        self.trace = trace
        self.follows_recorded = config is None
        if config is None:
            recorded = trace.header.get("config")
            if not recorded:
                raise ValueError("the trace records no configuration: give one with --config")
            config = config_from_dict(recorded["config"])
        self.name = name
        self.clock = VirtualClock()
        self.seed = seed
        # Preemption's "now" (the start time of pods not started) is the trace's wall clock.
        start = trace.header.get("start")
        self._epoch = datetime.fromisoformat(start).timestamp() if start else 0.0
        # As the live queue ran (the trace's feature gates; upstream's default when it does not say).
        gates = trace.header.get("feature_gates") or {}
        self.queue = MemoryQueue(clock=self.clock, pop_from_backoff=gates.get("SchedulerPopFromBackoffQ", True),
                                 timeline_ttl=0)
        # With a nominator, as kube-scheduler: room preemption freed is kept for the pod it was freed for. Seeded
        # (the trace's live seed, or --seed); following the live attempts' draws unless another seed was asked for.
        self.live_draws: dict[str, list] = {}
        self.algorithm = _FollowingAlgorithm(seed, Nominator(), self._live_draw if follow_live_draws else lambda pod: None)
        self._use_config(config)
        self.batch_size = batch_size or trace.header.get("batch_size") or DEFAULT_BATCH_SIZE
        self.cycle_seconds = cycle_seconds  # virtual time one pod's cycle takes (0: scheduling is instant)
        self.pace = pace
        self.on_progress = on_progress
        self.pods: dict[str, ReplayPod] = {}
        self.unbound: set[str] = set()  # keys of the pods not on a node (the pending count of every sample)
        # Parsed pods by manifest identity: runs of one trace under several configurations parse each once.
        self.specs = {} if specs is None else specs
        self.bind_failures_left = dict(trace.bind_failures)
        self.nodes: dict[str, NodeSpec] = {}
        self.object_manifests = list(trace.objects)
        self.objects = cluster_objects(self.object_manifests)
        self.result = RunResult(name, self.pods, NodeTable([]))
        self.cache: Cache | None = None
        # Pod key -> the instants the live loop tried it again (the trace's retry_snapshot_t): its reconciler
        # retries on a 1 s tick, not at the exact backoff expiry, and between the two the cluster moves on.
        self.live_retries: dict[str, list[float]] = {}

    # ---- configuration -------------------------------------------------------------------
    def _use_config(self, config: SchedulerConfig) -> None:
        self.config = config
        self.profiles: dict[str, Profile] = config.build_profiles()
        for profile in self.profiles.values():
            for plugin in profile.post_filters:
                self._seed_post_filter(plugin)
        # As set_queue_backoff: the configuration's podInitialBackoffSeconds / podMaxBackoffSeconds.
        self.queue.initial_backoff = float(config.pod_initial_backoff_seconds)
        self.queue.max_backoff = float(config.pod_max_backoff_seconds)

    def _seed_post_filter(self, plugin) -> None:
        """DefaultPreemption draws a random offset among the candidate nodes (upstream's getOffsetRand): from
        the algorithm's stream, as the live worker's does, so a replay preempts the same victims every time;
        its clock is the virtual one."""
        if isinstance(plugin, DefaultPreemption):
            plugin.rng = self.algorithm.tiebreak
            plugin.evaluator.clock = lambda: self._epoch + self.clock.now

    def _live_draw(self, pod: PodSpec) -> list | None:
        """Where the live attempt this replayed one stands for (the pod's n-th, as _retry_as_live counts) drew from."""
        draws = self.live_draws.get(pod.key)
        replayed = self.pods.get(pod.key)
        n = replayed.attempts if replayed is not None else 0
        return draws[n] if draws and n < len(draws) else None

    # ---- the cluster ---------------------------------------------------------------------
    def _rebuild(self) -> None:
        """A new NodeTable when the node set changes, sorted by name as the worker's snapshot is, with
        every bound pod counted and indexed again."""
        table = NodeTable([self.nodes[name] for name in sorted(self.nodes)])
        table.objects = self.objects
        for pod in self.pods.values():
            if pod.node is not None:
                table.add_pod(table.index[pod.node], pod.spec)
        if self.cache is None:
            self.cache = Cache(table, clock=self.clock)
        else:
            self.cache.table = table
        self.result.table = table

    def _skip(self, event: dict, why: str) -> None:
        self.result.skipped_events.append(f"t={event.get('t', 0)}: {event['kind']} {why}")

    def _spec(self, manifest: dict) -> PodSpec:
        spec = self.specs.get(id(manifest))
        if spec is None:
            spec = self.specs[id(manifest)] = pod_from_manifest(manifest)
        return spec

    def _arrive(self, manifest: dict, node: str | None, now: float | None, arrived: float | None = None) -> None:
        spec = self._spec(manifest)
        if node is not None and node in self.nodes:
            if now is not None:
                spec = self._started(spec, now)  # created bound: it starts now
            self.pods[spec.key] = ReplayPod(spec, now, node=node, bound_at=now)
            if now is not None:
                self.result.bindings.setdefault(spec.key, []).append(node)
            if self.cache is not None:
                self.cache.table.add_pod(self.cache.table.index[node], spec)
            return
        self.pods[spec.key] = ReplayPod(spec, arrived if arrived is not None else now if now is not None else 0.0)
        self.unbound.add(spec.key)
        self._enqueue(spec, arrived)

    def _enqueue(self, spec: PodSpec, queued_at: float | None = None) -> None:
        # As the live apply: only a pod of one of our profiles, not being deleted, is queued; a gated one is
        # held (SchedulingGates' PreEnqueue; a trace records no update that could remove its gates).
        if spec.scheduler_name in self.profiles and not spec.deleting and not spec.scheduling_gates:
            # Stamped with its creation, as the live queue stamps it (not when the live loop picked it up): pods
            # picked up together pop in the live order, by priority then creation, not by name.
            now = self.clock.now
            self.clock.now = min(now, queued_at) if queued_at is not None else now
            try:
                self.queue.add(spec.key, spec.priority)
            finally:
                self.clock.now = now

    def _apply(self, event: dict) -> None:
        kind, now = event["kind"], self.clock.now
        if kind == tr.POD_ADD:
            try:
                spec_key = self._spec(event["manifest"]).key
            except ManifestError as exc:
                return self._skip(event, f"unreadable: {exc}")
            if spec_key in self.pods:
                return self._skip(event, f"{spec_key} already exists")
            # What the live loop did with this pod (a name used again is another pod: its own, from its arrival).
            self.live_retries[spec_key] = sorted(event.get("retry_snapshot_t") or ())
            self.live_draws[spec_key] = event.get("tiebreaks") or []
            self._arrive(event["manifest"], event.get("node"), now, event.get("arrived_t"))
        elif kind == tr.POD_DELETE:
            pod = self.pods.pop(event["key"], None)
            self.unbound.discard(event["key"])
            self.algorithm.nominator.delete(event["key"])
            if pod is not None and pod.node is not None:
                self.cache.table.remove_pod(self.cache.table.index[pod.node], pod.spec)
            elif pod is not None:
                self.queue.delete(event["key"])
            # A bound pod's deletion: as the live services, the unschedulable pods AssignedPodDelete's hints
            # queue move (also for a pod the trace never knew, whose deletion the live run still reacted to).
            if pod is None or pod.node is not None:
                self._hint_moves_after([self._deleted(pod)])
        elif kind in (tr.NODE_ADD, tr.NODE_UPDATE):
            spec = node_from_manifest(event["manifest"])
            old = self.nodes.get(spec.name)
            self.nodes[spec.name] = spec
            self._rebuild()
            self._hint_moves_after(node_added(spec) if old is None else node_update_events(old, spec))
        elif kind == tr.NODE_DELETE:
            if self.nodes.pop(event["name"], None) is None:
                return self._skip(event, f"node {event['name']} unknown")
            # Its pods go with it (as the pod garbage collector); a controller's replacement is a new arrival.
            gone = [k for k, p in self.pods.items() if p.node == event["name"]]
            for key in gone:
                del self.pods[key]
            self.result.lost_with_node += len(gone)
            self._rebuild()
        elif kind == tr.OBJECT_ADD:
            # Later manifests of the same object replace earlier ones (the live table keeps one row each).
            self.object_manifests.append(event["manifest"])
            self.objects = cluster_objects(self.object_manifests)
            self.cache.table.objects = self.objects
        elif kind == tr.CONFIG:
            if self.follows_recorded:
                self._use_config(config_from_dict(event["config"]))
                # As the reconciler: pending pods of a profile that now exists are queued.
                queued = self.queue.keys()
                for pod in self.pods.values():
                    if pod.node is None and pod.spec.key not in queued:
                        self._enqueue(pod.spec)

    # ---- the loop ------------------------------------------------------------------------
    def _schedule_batch(self) -> int:
        infos = self.queue.pop(self.batch_size)
        batch, by_key = [], {}
        for info in infos:
            pod = self.pods.get(info.key)
            profile = self.profiles.get(pod.spec.scheduler_name) if pod is not None else None
            if pod is None or pod.node is not None or profile is None:
                self.queue.done(info.key)  # deleted, placed, or not ours any more: as the live worker
                continue
            batch.append((pod.spec, profile))
            by_key[info.key] = info
        results = cycle.schedule_batch(batch, algorithm=self.algorithm, cache=self.cache, cluster=_Reserves())
        victims: list[str] = []
        bound: list[PodChange] = []
        put_back: list[tuple] = []  # the failures, in the batch's order (the live worker's after its batch)
        refused: list[tuple] = []  # the refused bindings (the live binder's, after those)
        for result in results:
            key = result.pod.key
            pod = self.pods[key]
            if self.cycle_seconds:
                self.clock.now += self.cycle_seconds
            if result.status == cycle.SKIPPED:
                self.queue.done(key)
                continue
            pod.attempts += 1
            self.result.attempts += 1
            if result.status == cycle.SCHEDULED and self.bind_failures_left.get(key):
                # The live binder was refused for this pod: so is this binding (the room goes back, the pod
                # backs off, as the live binder's requeue; no cluster event, as live).
                self.bind_failures_left[key] -= 1
                self.cache.forget(key)
                pod.message = f"binding to {result.node_name} refused, as the live run's was"
                self.result.bind_failures += 1
                refused.append((pod, False, pod.message))
            elif result.status == cycle.SCHEDULED:
                # Bound at once (a binding the live run saw refused is refused above).
                self.cache.confirm(key)
                pod.spec = self._started(pod.spec, self.clock.now, result.node_name)
                pod.node, pod.bound_at, pod.message = result.node_name, self.clock.now, ""
                pod.decision = decision_summary(result.decision, self.cache.table)
                self.unbound.discard(key)
                self.result.bindings.setdefault(key, []).append(result.node_name)
                self.queue.done(key)
                bound.append(PodChange(assigned(pod.spec.namespace, pod.spec.name, pod.spec.uid, result.node_name,
                                                pod.spec.labels)))
            else:
                pod.message = result.message
                put_back.append((pod, result.status == cycle.UNSCHEDULABLE, result.message))
                victims += [v.key for v in result.victims]
                self.result.preemptors += bool(result.victims)
        self._put_back([(by_key[pod.spec.key], pod, unschedulable, message)
                        for pod, unschedulable, message in put_back + refused])
        self._hint_moves(bound)
        self._evict(victims)
        return len(infos)

    def _put_back(self, failed: list[tuple]) -> None:
        """(queue record, pod, unschedulable, message) back to the queue, each a step later than the one before:
        the active queue orders pods of one priority by the instant they were put back, then by name, so
        sharing one instant they would come back in name order, not in the order the live worker tried them."""
        now = self.clock.now
        try:
            for step, (info, pod, unschedulable, message) in enumerate(failed):
                self.clock.now = now + step * PUT_BACK_STEP
                self.queue.add_unschedulable_if_not_present(info, unschedulable=unschedulable, message=message)
                self._retry_as_live(pod)
        finally:
            self.clock.now = now

    def _started(self, spec: PodSpec, now: float, node: str | None = None) -> PodSpec:
        """The pod as bound at `now` (virtual): its start time is status.startTime, or, without one, the binding's
        instant, as the live snapshot reads a pod no kubelet started (placed_pods: the simulated cluster's). It
        orders preemption's candidates (the latest-started victims go first) and victims. A copy: the parsed spec
        is shared by every configuration's run. Re-indexed on `node` when it is there already."""
        if spec.start_time is not None:
            return spec
        started = copy.copy(spec)
        started.start_time = self._epoch + now
        if node is not None:
            self.cache.table.pods.add_pod(self.cache.table.index[node], started)  # replaces the entry under its key
        return started

    def _hint_moves(self, bound: list[PodChange]) -> None:
        """As the live binder once its batch is bound (scheduler/queue/hints.py): AssignedPodAdd moves the
        waiting pods whose InterPodAffinity or PodTopologySpread hint says these bindings may help."""
        if not bound:
            return
        waiting = self.queue.unschedulable_with_message(AFFINITY_REASONS + SPREAD_REASONS)
        if not waiting:
            return
        specs = {k: self.pods[k].spec for k, _ in waiting if k in self.pods}
        for event, keys in keys_to_move(waiting, specs, bound).items():
            self.queue.move_to_active_or_backoff(keys, event)

    @staticmethod
    def _deleted(pod: ReplayPod | None) -> PodDelete:
        if pod is None:
            return PodDelete(None)
        return PodDelete(pod.spec if pod.spec.node_name == pod.node else dataclasses.replace(pod.spec, node_name=pod.node))

    def _hint_moves_after(self, changes: list) -> None:
        """As the live queue after a node event or an assigned pod's deletion (scheduler/queue/hints.py's
        move_after_events): the waiting pods some rejecting plugin's hint queues move."""
        if not changes:
            return
        waiting = self.queue.unschedulable_with_message(("",))
        if not waiting:
            return
        specs = {k: self.pods[k].spec for k, _ in waiting if k in self.pods}
        for event, keys in keys_to_move(waiting, specs, changes).items():
            self.queue.move_to_active_or_backoff(keys, event)

    def _retry_as_live(self, pod: ReplayPod) -> None:
        """A failed pod the live loop tried again at a recorded instant backs off until then (not until its own
        backoff's end): its next try sees the cluster as the live one did. A pod in the unschedulable pool still
        waits for a move, as live; the move then sends it to backoff until that instant."""
        times = self.live_retries.get(pod.spec.key)
        if not times or pod.attempts > len(times):
            return
        # Held, not just given a later backoff: with SchedulerPopFromBackoffQ backoffQ's pods are popped before
        # their backoff ends, and expiries are whole windows; the live loop's instant is neither.
        info = self.queue.get(pod.spec.key)
        if info is not None and info.backoff_expiry is not None:
            self.queue.hold_until(pod.spec.key, max(times[pod.attempts - 1], self.clock.now))

    def _evict(self, keys: list[str]) -> None:
        """As the preemption's deletions: each victim leaves its node (AssignedPodDelete moves the waiting
        pods, the preemptor among them, which its nomination keeps the room for)."""
        evicted = []
        for key in dict.fromkeys(keys):
            pod = self.pods.get(key)
            if pod is None or pod.node is None:
                continue
            self.cache.table.remove_pod(self.cache.table.index[pod.node], pod.spec)
            del self.pods[key]
            self.result.evicted.append(key)
            evicted.append(self._deleted(pod))
        if evicted:
            self.result.preemptions += len(evicted)
            self._hint_moves_after(evicted)

    def _next_wakeup(self, events: list[dict], i: int, horizon: float) -> float | None:
        """The earliest of: the next event, a backoff expiring, a pod's time in the unschedulable pool
        running out; None when nothing can change any more, or only a pod failing with an error would
        be tried again (it backs off and retries for ever, live too) past the horizon."""
        # Only the first of each pool matters (entries are in expiry / arrival order): copying every entry on
        # every wake-up made a replay with many pending pods quadratic.
        release = self.queue.next_backoff_release()
        times = [release] if release is not None and (i < len(events) or release <= horizon) else []
        if i < len(events):
            times.append(events[i]["t"])
            # Without events left, a pod timing out of the pool would fail again on an unchanged cluster.
            # The flush takes a pod strictly past its time (as flushUnschedulablePodsLeftover's `>`): wake
            # just after it, or the clock would stop at that instant with nothing to do, for ever.
            oldest = min((e.timestamp for e in self.queue.entries(UNSCHEDULABLE_Q, 1)), default=None)
            if oldest is not None:
                times.append(math.nextafter(oldest + self.queue.max_in_unschedulable, math.inf))
        if not times:
            return None
        # Time only moves forward: whatever is due now was done before this was asked.
        return max(min(times), math.nextafter(self.clock.now, math.inf))

    def run(self) -> RunResult:
        started = time.perf_counter()
        for m in self.trace.nodes:
            spec = node_from_manifest(m)
            self.nodes[spec.name] = spec
        self._rebuild()
        for manifest, node in self.trace.pods:
            self._arrive(manifest, node, None if node else 0.0)
        events = picked_up([e for e in self.trace.events if e["kind"] != tr.BOUND])
        self.live_draws.update(self.trace.pod_tiebreaks)
        # After the last event: the trace's end, and one unschedulable-pool timeout more for what is still backing off.
        horizon = max(self.trace.header.get("duration_s") or 0.0, events[-1]["t"] if events else 0.0)
        horizon += self.queue.max_in_unschedulable
        i = 0
        self._sample()
        while True:
            while i < len(events) and events[i]["t"] <= self.clock.now:
                self._apply(events[i])
                i += 1
                if self.on_progress:
                    self.on_progress(i, len(events))
            self.queue.flush(self.clock.now)
            if self.queue.ready():  # activeQ, or (SchedulerPopFromBackoffQ) backoffQ's rejected pods
                self._schedule_batch()
                self._sample()
                continue
            wake = self._next_wakeup(events, i, horizon)
            if wake is None:
                break
            self.clock.now = max(self.clock.now, wake)
            if self.pace:
                self.pace(self.clock.now)
            self._sample()
        self.result.virtual_seconds = self.clock.now
        self.result.wall_seconds = time.perf_counter() - started
        return self.result

    def _sample(self) -> None:
        s = sample_of(self.clock.now, len(self.unbound), self.cache.table)
        samples = self.result.samples
        if samples and samples[-1].t == s.t:
            samples[-1] = s  # one sample per instant: the state after everything at that instant
        else:
            samples.append(s)


TOP_SHOWN = 3


def picked_up(events: list[dict]) -> list[dict]:
    """A pod joins the queue when the live loop first looked at it (`first_attempt_t`, recorded from its first
    attempt), not when it was created: the live worker picks pods up on its next poll, tens of milliseconds
    later, and what happens meanwhile (a deletion freeing room) counts in its decision. Time to bind still
    counts from the creation (`arrived_t`). Under every configuration alike: the lag is the loop's, not the
    configuration's.

    Where the trace has it (`first_snapshot_t`, migration 0015), the pod joins when the live worker read
    the snapshot its first decision used: every change recorded up to then is applied before it is tried."""
    out = []
    for e in events:
        joined = e.get("first_snapshot_t") or e.get("first_attempt_t") or 0
        if e["kind"] == tr.POD_ADD and joined > e["t"]:
            e = {**e, "t": joined, "arrived_t": e["t"]}
        out.append(e)
    out.sort(key=lambda e: e["t"])  # stable: equal times keep their recorded order
    return out


def decision_summary(decision, table: NodeTable) -> dict | None:
    """What a replayed attempt weighed, kept small (every bound pod has one): how many nodes passed the
    filters out of how many evaluated, and the best total scores with their nodes."""
    if decision is None:
        return None
    candidates = np.asarray(decision.candidates, dtype=np.int64)
    totals = np.asarray(decision.totals)
    if len(totals) == len(candidates) and len(candidates):
        # The chosen node first among its ties (the seed picked it), the rest in candidate order; numpy,
        # as every binding keeps one (a Python sort over thousands of candidates per pod would dominate).
        chosen = candidates == (decision.selected_row if decision.selected_row is not None else -1)
        ranked = np.lexsort((np.arange(len(candidates)), ~chosen, -totals))[:TOP_SHOWN]
        top = [[table.names[int(candidates[i])], int(totals[i])] for i in ranked]
        ties = int((totals == totals.max()).sum())
    else:  # one candidate: upstream skips scoring
        top, ties = [[table.names[int(c)], None] for c in candidates[:TOP_SHOWN]], min(len(candidates), 1)
    return {"feasible": len(candidates), "evaluated": int(decision.evaluated_nodes), "nodes": int(decision.num_all_nodes),
            "top": top, "tied_at_top": ties}


def pacer(speed: str, *, monotonic: Callable[[], float] | None = None,
          sleep: Callable[[float], None] | None = None) -> Callable[[float], None] | None:
    """--speed: "max" replays as fast as it can; "realtime" or a factor N sleeps so virtual time runs
    at N x wall time (for watching a replay unfold: the progress and the pages follow it)."""
    if speed == "max":
        return None
    try:
        factor = 1.0 if speed == "realtime" else float(speed)
    except ValueError:
        factor = float("nan")
    if not factor > 0 or factor == float("inf"):
        raise ValueError(f"--speed {speed!r}: expected max, realtime or a positive number of times real time")
    monotonic, sleep = monotonic or time.monotonic, sleep or time.sleep
    wall_start = monotonic()

    def pace(virtual: float) -> None:
        delay = wall_start + virtual / factor - monotonic()
        if delay > 0:
            sleep(delay)

    return pace
