"""The Deployment controller (pkg/controller/deployment: deployment_controller.go syncDeployment, sync.go,
rolling.go, recreate.go): a Deployment owns ReplicaSets named <deployment>-<pod-template-hash> (the hash also
in the ReplicaSet's labels, selector and pod template, so its pods carry it), claimed by its selector
(adopted and released as ControllerRefManager does). Each sync, as upstream's, in this order: paused ->
sync (scale only); a scaling event (an active ReplicaSet's desired-replicas annotation differs from
spec.replicas) -> sync, which resizes the active ReplicaSets proportionally during a rollout; else the
strategy:

- RollingUpdate: scale the new ReplicaSet up to replicas + maxSurge in all, then scale old ones down while
  at least replicas - maxUnavailable pods stay available (unhealthy old pods first), one step per sync.
- Recreate: scale every old ReplicaSet to 0, wait until none of their pods is left, then create and scale
  up the new one.

Revisions: the new ReplicaSet gets max(old revisions) + 1 (the old number kept in revision-history), the
Deployment carries it; old ReplicaSets with no pods, past spec.revisionHistoryLimit, are deleted oldest
revision first once the rollout is complete. Every resize is announced on the Deployment as
ScalingReplicaSet "Scaled up|down replica set NAME to N from M" ("... to N" when created so), and the
status and conditions are written at the end (deployment_status.py). The ReplicaSet controller then makes or
removes the pods."""

from __future__ import annotations

import copy
from datetime import datetime, timezone as dt_timezone

from ..cluster.objects import cluster_object_delete
from ..manifests.errors import ManifestError
from ..models import DEPLOYMENT, REPLICA_SET, ClusterObject, Event
from ..state.events import EventSpec, events_record
from .deployment_status import (PROGRESSING, calculate_status, condition, new_condition, paused_conditions,
                                rollout_status, set_condition)
from .deployment_util import (FAILED_RS_CREATE, FOUND_NEW_RS, HASH_LABEL, NEW_REPLICA_SET, RECREATE, REVISION,
                              ROLLING_UPDATE, RS, Deployment, active, by_creation, deployment_complete,
                              equal_ignore_hash, find_active_or_latest, find_old_replica_sets,
                              find_new_replica_set, has_progress_deadline, has_revision_history_limit,
                              is_rolling, is_saturated, max_revision, max_surge, max_unavailable,
                              new_replica_set_annotations, new_rs_new_replicas, proportion, replica_count,
                              replicas_annotations, revision, status_count)
from .hashing import template_hash
from .owned_objects import claimed_objects, create_object, update_object
from .pods import controller_of, namespace_pods, owner_event, owner_reference

CONTROLLER = "deployment-controller"
# Re-exported for callers that name the label and annotations through this module.
__all__ = ["CONTROLLER", "HASH_LABEL", "REVISION", "sync", "sync_all"]


class _Sync:
    """One syncDeployment: the Deployment's view, its claimed ReplicaSets, and the events to record."""

    def __init__(self, row: ClusterObject, now: datetime):
        self.d = Deployment.of(row)
        self.now = now
        self.events: list[EventSpec] = []
        self.scaled: dict[str, tuple[int, int]] = {}
        self.error = ""
        self.rses = [RS(r) for r in claimed_objects(row, REPLICA_SET)]

    # ---- the API calls ------------------------------------------------------------------------------

    def event(self, reason: str, message: str, type: str = Event.NORMAL) -> None:
        self.events.append(owner_event(self.d.row, reason, message, CONTROLLER, type))

    def scale_replica_set(self, rs: RS, new_scale: int, operation: str) -> tuple[bool, RS]:
        """scaleReplicaSet: spec.replicas and the replica annotations written; the event when the size changed."""
        size_changes = rs.replicas != new_scale
        want = replicas_annotations(self.d)
        if not size_changes and all(rs.annotations.get(k) == v for k, v in want.items()):
            return False, rs
        old = rs.replicas

        def mutate(manifest: dict) -> None:
            manifest["spec"] = {**(manifest.get("spec") or {}), "replicas": new_scale}
            meta = manifest.setdefault("metadata", {})
            meta["annotations"] = {**(meta.get("annotations") or {}), **want}
        row = update_object(kind=REPLICA_SET, namespace=rs.row.namespace, name=rs.name, uid=rs.uid, mutate=mutate)
        if row is None:
            return False, rs
        updated = RS(row)
        self.rses = [updated if r.uid == rs.uid else r for r in self.rses]
        if size_changes:
            self.scaled[rs.name] = (self.scaled.get(rs.name, (old, old))[0], new_scale)
            self.event("ScalingReplicaSet", f"Scaled {operation} replica set {rs.name} to {new_scale} from {old}")
        return size_changes, updated

    def scale_and_record(self, rs: RS, new_scale: int) -> tuple[bool, RS]:
        if rs.replicas == new_scale:
            return False, rs
        return self.scale_replica_set(rs, new_scale, "up" if rs.replicas < new_scale else "down")

    # ---- getAllReplicaSetsAndSyncRevision --------------------------------------------------------------

    def replica_sets(self, create: bool) -> tuple[RS | None, list[RS]]:
        _, old = find_old_replica_sets(self.d, self.rses)
        return self.new_replica_set(old, create), old

    def new_replica_set(self, old: list[RS], create: bool) -> RS | None:
        """getNewReplicaSet: the existing one brought up to date (annotations, minReadySeconds, the revision on the
        Deployment), or, with `create`, a new one named by the template's hash."""
        d = self.d
        existing = find_new_replica_set(d, self.rses)
        new_revision = max_revision(old) + 1
        if existing is not None:
            annotations = new_replica_set_annotations(d, existing.annotations, new_revision, exists=True)
            min_ready = d.min_ready_seconds
            if annotations != existing.annotations or existing.min_ready_seconds != min_ready:
                def mutate(manifest: dict) -> None:
                    manifest.setdefault("metadata", {})["annotations"] = annotations
                    spec = manifest.setdefault("spec", {})
                    if min_ready:
                        spec["minReadySeconds"] = min_ready
                    else:
                        spec.pop("minReadySeconds", None)
                row = update_object(kind=REPLICA_SET, namespace=existing.row.namespace, name=existing.name,
                                    uid=existing.uid, mutate=mutate)
                if row is None:
                    return existing
                updated = RS(row)
                self.rses = [updated if r.uid == existing.uid else r for r in self.rses]
                return updated
            rev = existing.annotations.get(REVISION)
            if rev is not None and d.annotations.get(REVISION) != rev:
                d.annotations[REVISION] = rev
            if has_progress_deadline(d) and condition(d.status, PROGRESSING) is None:
                set_condition(d.status, new_condition(PROGRESSING, "True", FOUND_NEW_RS,
                                                      f'Found new replica set "{existing.name}"', self.now))
            return existing
        if not create:
            return None
        tmpl = d.template
        pod_hash = template_hash(tmpl, d.collision_count)
        meta = tmpl.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), HASH_LABEL: pod_hash}
        selector = copy.deepcopy(d.spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: pod_hash}
        name = f"{d.name}-{pod_hash}"
        replicas = new_rs_new_replicas(d, [*old, None], 0)
        spec = {"replicas": replicas, "selector": selector, "template": tmpl}
        if d.min_ready_seconds:
            spec["minReadySeconds"] = d.min_ready_seconds
        manifest = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "metadata": {"name": name, "namespace": d.namespace, "labels": dict(meta["labels"]),
                                 "annotations": new_replica_set_annotations(d, {}, new_revision, exists=False),
                                 "ownerReferences": [owner_reference(d.row)]},
                    "spec": spec}
        taken = ClusterObject.objects.filter(kind=REPLICA_SET, namespace=d.namespace, name=name).first()
        if taken is not None:
            # AlreadyExists: ours with the same template is the new one; anything else is a hash collision.
            if (controller_of(taken.manifest) or {}).get("uid") == d.row.uid and \
                    equal_ignore_hash(d.template, (taken.manifest.get("spec") or {}).get("template") or {}):
                return RS(taken)
            d.status["collisionCount"] = (d.collision_count or 0) + 1
            self.error = f'replicasets.apps "{name}" already exists'
            return None
        try:
            row = create_object(manifest)
        except ManifestError as e:
            msg = f'Failed to create new replica set "{name}": {e.problems[0]}'
            if has_progress_deadline(d):
                set_condition(d.status, new_condition(PROGRESSING, "False", FAILED_RS_CREATE, msg, self.now))
            self.event(FAILED_RS_CREATE, msg, Event.WARNING)
            self.error = str(e.problems[0])
            return None
        created = RS(row)
        self.rses.append(created)
        if replicas > 0:
            self.scaled[name] = (0, replicas)
            self.event("ScalingReplicaSet", f"Scaled up replica set {name} to {replicas}")
        d.annotations[REVISION] = str(new_revision)
        if has_progress_deadline(d):
            set_condition(d.status, new_condition(PROGRESSING, "True", NEW_REPLICA_SET,
                                                  f'Created new replica set "{name}"', self.now))
        return created

    # ---- sync (scaling and paused) -------------------------------------------------------------------

    def is_scaling_event(self) -> bool:
        new, old = self.replica_sets(create=False)
        for rs in active([*old, new]):
            try:
                desired = int(rs.annotations.get("deployment.kubernetes.io/desired-replicas", ""), 10)
            except ValueError:
                continue
            if desired != self.d.replicas:
                return True
        return False

    def sync(self) -> None:
        new, old = self.replica_sets(create=False)
        self.scale(new, old)
        if self.d.paused:
            self.clean_up(old)
        self.write_status(rollout=False, new=new, old=old)

    def scale(self, new: RS | None, old: list[RS]) -> None:
        """dc.scale: the one active (or newest) ReplicaSet to the full count, else a saturated new one's old ones
        to 0, else (RollingUpdate) replicas + maxSurge spread over the active ones in proportion."""
        d = self.d
        only = find_active_or_latest(new, old)
        if only is not None:
            if only.replicas != d.replicas:
                self.scale_and_record(only, d.replicas)
            return
        if is_saturated(d, new):
            for rs in active(old):
                self.scale_and_record(rs, 0)
            return
        if not is_rolling(d):
            return
        all_rses = active([*old, new])
        allowed = d.replicas + max_surge(d) if d.replicas > 0 else 0
        to_add = allowed - replica_count(all_rses)
        operation = ""
        if to_add > 0:  # ReplicaSetsBySizeNewer: largest first, newer first among equals
            all_rses.sort(key=lambda rs: (-rs.replicas, -rs.created.timestamp(), _desc(rs.name)))
            operation = "up"
        elif to_add < 0:  # ReplicaSetsBySizeOlder: largest first, older first among equals
            all_rses.sort(key=lambda rs: (-rs.replicas, rs.created.timestamp(), rs.name))
            operation = "down"
        sizes, added = {}, 0
        for rs in all_rses:
            if to_add != 0:
                p = proportion(rs, d, to_add, added)
                sizes[rs.name] = rs.replicas + p
                added += p
            else:
                sizes[rs.name] = rs.replicas
        for i, rs in enumerate(all_rses):
            if i == 0 and to_add != 0:
                sizes[rs.name] = max(0, sizes[rs.name] + to_add - added)
            self.scale_replica_set(rs, sizes[rs.name], operation)

    # ---- the strategies --------------------------------------------------------------------------------

    # Each path ends by writing the status of the ReplicaSets as the sync first read them (upstream hands
    # syncRolloutStatus the objects it listed, not the ones its resizes returned).

    def rollout_rolling(self) -> None:
        new, old = self.replica_sets(create=True)
        if new is None:
            self.write_raw()
            return
        if self.reconcile_new(new, old) or self.reconcile_old(new, old):
            self.write_status(rollout=True, new=new, old=old)
            return
        if deployment_complete(self.d, self.d.status):
            self.clean_up(old)
        self.write_status(rollout=True, new=new, old=old)

    def reconcile_new(self, new: RS, old: list[RS]) -> bool:
        d = self.d
        if new.replicas == d.replicas:
            return False
        if new.replicas > d.replicas:
            return self.scale_and_record(new, d.replicas)[0]
        return self.scale_and_record(new, new_rs_new_replicas(d, [*old, new], new.replicas))[0]

    def reconcile_old(self, new: RS, old: list[RS]) -> bool:
        d = self.d
        live_old = active(old)
        if replica_count(live_old) == 0:
            return False
        all_rses = [*live_old, new]
        min_available = d.replicas - max_unavailable(d)
        new_unavailable = new.replicas - new.count("availableReplicas")
        max_scaled_down = replica_count(all_rses) - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        # Unhealthy replicas first (cleanupUnhealthyReplicas), then down to the availability floor.
        live_old = by_creation(live_old)
        cleaned = 0
        for i, rs in enumerate(live_old):
            if cleaned >= max_scaled_down:
                break
            if rs.replicas == 0 or rs.replicas == rs.count("availableReplicas"):
                continue
            count = min(max_scaled_down - cleaned, rs.replicas - rs.count("availableReplicas"))
            _, live_old[i] = self.scale_and_record(rs, rs.replicas - count)
            cleaned += count
        all_rses = [*live_old, new]
        available = status_count(all_rses, "availableReplicas")
        scaled_down = 0
        if available > min_available:
            total = available - min_available
            for rs in by_creation(live_old):
                if scaled_down >= total:
                    break
                if rs.replicas == 0:
                    continue
                count = min(rs.replicas, total - scaled_down)
                self.scale_and_record(rs, rs.replicas - count)
                scaled_down += count
        return cleaned + scaled_down > 0

    def rollout_recreate(self) -> None:
        new, old = self.replica_sets(create=False)
        scaled_down = False
        for rs in active(old):
            scaled_down |= self.scale_and_record(rs, 0)[0]
        if scaled_down or self.old_pods_running(new, old):
            self.write_status(rollout=True, new=new, old=old)
            return
        if new is None:
            new, old = self.replica_sets(create=True)
            if new is None:
                self.write_raw()
                return
        self.scale_and_record(new, self.d.replicas)
        if deployment_complete(self.d, self.d.status):
            self.clean_up(old)
        self.write_status(rollout=True, new=new, old=old)

    def old_pods_running(self, new: RS | None, old: list[RS]) -> bool:
        """oldPodsRunning: an old ReplicaSet reports pods, or a pod of one (terminal ones aside) still exists."""
        if status_count(old, "replicas") > 0:
            return True
        old_uids = {rs.uid for rs in self.rses if new is None or rs.uid != new.uid}
        return any(p.controller_uid in old_uids and p.phase not in ("Failed", "Succeeded")
                   for p in namespace_pods(self.d.namespace))

    # ---- cleanup and status --------------------------------------------------------------------------

    def clean_up(self, old: list[RS]) -> None:
        """cleanupDeployment: all but the newest revisionHistoryLimit old ReplicaSets go, those with no pods."""
        d = self.d
        if not has_revision_history_limit(d):
            return
        cleanable = [rs for rs in old if not rs.deleting]
        diff = len(cleanable) - d.revision_history_limit
        if diff <= 0:
            return
        cleanable.sort(key=lambda rs: ((revision(rs) or 0), rs.created, rs.name))
        for rs in cleanable[:diff]:
            if rs.count("replicas") != 0 or rs.replicas != 0 or \
                    rs.generation > int(rs.status.get("observedGeneration") or 0):
                continue
            if cluster_object_delete(kind=REPLICA_SET, namespace=rs.row.namespace, name=rs.name):
                self.rses = [r for r in self.rses if r.uid != rs.uid]

    def write_status(self, *, rollout: bool, new: RS | None, old: list[RS]) -> None:
        """syncRolloutStatus (or, scaling, syncDeploymentStatus) and the revision annotation, in one write."""
        all_rses = [*old, new]
        if rollout:
            self.d.status = rollout_status(all_rses, new, self.d, self.now)
        else:
            self.d.status = calculate_status(all_rses, new, self.d, self.now)
        self.write_raw()

    def write_raw(self) -> None:
        """The Deployment's status and revision as this sync left them (an error path writes no new counts:
        upstream updates the status it changed, then returns the error)."""
        d = self.d
        status, rev = d.status, d.annotations.get(REVISION)

        def mutate(manifest: dict) -> None:
            meta = manifest.setdefault("metadata", {})
            if rev is not None:
                meta["annotations"] = {**(meta.get("annotations") or {}), REVISION: rev}
            manifest["status"] = status
        update_object(kind=DEPLOYMENT, namespace=d.namespace, name=d.name, uid=d.row.uid, mutate=mutate)


def _desc(name: str) -> tuple:
    """A key that orders names in reverse (the newer-first tie-break compares names backwards too)."""
    return tuple(-ord(c) for c in name) + (1,)


def sync(row: ClusterObject, now: datetime | None = None) -> dict:
    """One syncDeployment: the ReplicaSets resized, name -> (from, to); an `error` when it could not go on."""
    s = _Sync(row, now or datetime.now(dt_timezone.utc))
    d = s.d
    paused_conditions(d, s.now)  # written with the status at the end
    if d.paused:
        s.sync()
    elif s.is_scaling_event():
        s.sync()
    elif d.strategy == RECREATE:
        s.rollout_recreate()
    else:
        s.rollout_rolling()
    events_record(s.events)
    out = {"scaled": s.scaled}
    if s.error:
        out["error"] = s.error
    return out


def sync_all(now: datetime | None = None) -> dict:
    out = {}
    for d in ClusterObject.objects.filter(kind=DEPLOYMENT):
        result = sync(d, now)
        if result["scaled"] or result.get("error"):
            out[f"{d.namespace}/{d.name}"] = result
    return out


__all__ += ["ROLLING_UPDATE", "RECREATE"]
