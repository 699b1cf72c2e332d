"""The Deployment controller's arithmetic and bookkeeping (pkg/controller/deployment/util/deployment_util.go):
the views of a Deployment and its ReplicaSets the controller works on, maxSurge/maxUnavailable resolved
(surge rounds up, unavailable down, both zero -> one unavailable), the new ReplicaSet found by its template,
the revision and replica annotations, proportional scaling's fractions. Counts are int32 in Go; none here
come near its bounds."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from datetime import datetime

from django.utils.dateparse import parse_datetime

from ..models import ClusterObject
from .owned_objects import generation, status_of

HASH_LABEL = "pod-template-hash"  # apps.DefaultDeploymentUniqueLabelKey
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
DEPRECATED_ROLLBACK_TO = "deprecated.deployment.rollback.to"
ANNOTATIONS_TO_SKIP = {LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS, DEPRECATED_ROLLBACK_TO}
MAX_REV_HISTORY_LENGTH_IN_CHARS = 2000  # sync.go's maxRevHistoryLengthInChars
MAX_INT32 = 2**31 - 1

ROLLING_UPDATE, RECREATE = "RollingUpdate", "Recreate"
DEFAULT_MAX_SURGE = DEFAULT_MAX_UNAVAILABLE = "25%"
DEFAULT_REVISION_HISTORY_LIMIT = 10
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600

# Condition reasons (deployment_util.go).
REPLICA_SET_UPDATED = "ReplicaSetUpdated"
FAILED_RS_CREATE = "ReplicaSetCreateError"
NEW_REPLICA_SET = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"


def creation_time(obj: ClusterObject) -> datetime:
    """metadata.creationTimestamp (second precision, so ties are common and break by name as upstream)."""
    return parse_datetime(str((obj.manifest.get("metadata") or {}).get("creationTimestamp") or "")) or obj.created_at


@dataclass
class RS:
    """A ReplicaSet as the Deployment controller reads it from its informer."""

    row: ClusterObject

    @property
    def name(self) -> str:
        return self.row.name

    @property
    def uid(self) -> str:
        return self.row.uid

    @property
    def replicas(self) -> int:
        return self.row.replicas if self.row.replicas is not None else 1

    @property
    def annotations(self) -> dict:
        return dict((self.row.manifest.get("metadata") or {}).get("annotations") or {})

    @property
    def template(self) -> dict:
        return copy.deepcopy((self.row.manifest.get("spec") or {}).get("template") or {})

    @property
    def min_ready_seconds(self) -> int:
        return int((self.row.manifest.get("spec") or {}).get("minReadySeconds") or 0)

    @property
    def status(self) -> dict:
        return status_of(self.row)

    def count(self, key: str) -> int:
        return int(self.status.get(key) or 0)

    @property
    def created(self) -> datetime:
        return creation_time(self.row)

    @property
    def generation(self) -> int:
        return generation(self.row)

    @property
    def deleting(self) -> bool:
        return bool((self.row.manifest.get("metadata") or {}).get("deletionTimestamp"))


@dataclass
class Deployment:
    """A Deployment being synced: the row as read, and the annotations and status the sync writes back."""

    row: ClusterObject
    annotations: dict = field(default_factory=dict)
    status: dict = field(default_factory=dict)

    @classmethod
    def of(cls, row: ClusterObject) -> Deployment:
        return cls(row, dict((row.manifest.get("metadata") or {}).get("annotations") or {}),
                   copy.deepcopy(status_of(row)))

    @property
    def name(self) -> str:
        return self.row.name

    @property
    def namespace(self) -> str:
        return self.row.namespace

    @property
    def spec(self) -> dict:
        return self.row.manifest.get("spec") or {}

    @property
    def replicas(self) -> int:
        return self.row.replicas if self.row.replicas is not None else 1

    @property
    def template(self) -> dict:
        return copy.deepcopy(self.spec.get("template") or {})

    @property
    def strategy(self) -> str:
        return (self.spec.get("strategy") or {}).get("type") or ROLLING_UPDATE

    @property
    def rolling(self) -> dict:
        return (self.spec.get("strategy") or {}).get("rollingUpdate") or {}

    @property
    def min_ready_seconds(self) -> int:
        return int(self.spec.get("minReadySeconds") or 0)

    @property
    def paused(self) -> bool:
        return bool(self.spec.get("paused"))

    @property
    def revision_history_limit(self) -> int | None:
        value = self.spec.get("revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def progress_deadline(self) -> int | None:
        value = self.spec.get("progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE_SECONDS)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def generation(self) -> int:
        return generation(self.row)

    @property
    def collision_count(self) -> int | None:
        value = self.status.get("collisionCount")
        return value if isinstance(value, int) else None


# ---- maxSurge / maxUnavailable ------------------------------------------------------------------------

def int_or_percent(value, total: int, round_up: bool) -> int:
    """As intstr.GetScaledValueFromIntOrPercent (float64 arithmetic, as Go's)."""
    if isinstance(value, bool):
        raise ValueError("invalid value for IntOrString")
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        raise ValueError(f"invalid value for IntOrString: invalid type: string is not a percentage")
    percent = int(text[:-1])
    scaled = float(percent) * float(total) / 100
    return int(math.ceil(scaled) if round_up else math.floor(scaled))


def resolve_fenceposts(max_surge, max_unavailable, desired: int) -> tuple[int, int]:
    """As ResolveFenceposts: surge rounded up, unavailable down; both zero -> one unavailable."""
    surge = int_or_percent(0 if max_surge is None else max_surge, desired, True)
    unavailable = int_or_percent(0 if max_unavailable is None else max_unavailable, desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def is_rolling(d: Deployment) -> bool:
    return d.strategy == ROLLING_UPDATE


def max_unavailable(d: Deployment) -> int:
    if not is_rolling(d) or d.replicas == 0:
        return 0
    _, unavailable = resolve_fenceposts(d.rolling.get("maxSurge"), d.rolling.get("maxUnavailable"), d.replicas)
    return min(unavailable, d.replicas)


def max_surge(d: Deployment) -> int:
    if not is_rolling(d):
        return 0
    surge, _ = resolve_fenceposts(d.rolling.get("maxSurge"), d.rolling.get("maxUnavailable"), d.replicas)
    return surge


# ---- finding the ReplicaSets --------------------------------------------------------------------------

def by_creation(rses: list[RS]) -> list[RS]:
    """controller.ReplicaSetsByCreationTimestamp: oldest first, names breaking ties."""
    return sorted(rses, key=lambda rs: (rs.created, rs.name))


def without_hash(tmpl: dict) -> dict:
    """The template as EqualIgnoreHash compares it: no pod-template-hash label, and empty maps and lists the
    same as absent ones (apiequality.Semantic treats nil and empty alike)."""
    tmpl = copy.deepcopy(tmpl)
    labels = (tmpl.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return _semantic(tmpl)


def _semantic(value):
    if isinstance(value, dict):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def equal_ignore_hash(a: dict, b: dict) -> bool:
    return without_hash(a) == without_hash(b)


def find_new_replica_set(d: Deployment, rses: list[RS]) -> RS | None:
    """The oldest ReplicaSet whose template is the Deployment's (FindNewReplicaSet)."""
    want = d.template
    return next((rs for rs in by_creation(rses) if equal_ignore_hash(rs.template, want)), None)


def find_old_replica_sets(d: Deployment, rses: list[RS]) -> tuple[list[RS], list[RS]]:
    """(the old ones with replicas, every old one), as FindOldReplicaSets."""
    new = find_new_replica_set(d, rses)
    old = [rs for rs in rses if new is None or rs.uid != new.uid]
    return [rs for rs in old if rs.replicas != 0], old


def revision(rs: RS) -> int | None:
    """The revision annotation; 0 without one, None when it is not a number (skipped, as upstream)."""
    text = rs.annotations.get(REVISION)
    if text is None:
        return 0
    try:
        return int(text, 10)
    except ValueError:
        return None


def max_revision(rses: list[RS]) -> int:
    return max((r for r in (revision(rs) for rs in rses) if r is not None), default=0)


def active(rses: list[RS | None]) -> list[RS]:
    """controller.FilterActiveReplicaSets: those with replicas."""
    return [rs for rs in rses if rs is not None and rs.replicas > 0]


def replica_count(rses: list[RS | None]) -> int:
    return sum(rs.replicas for rs in rses if rs is not None)


def status_count(rses: list[RS | None], key: str) -> int:
    """GetActual/Ready/AvailableReplicaCountForReplicaSets: status.replicas, readyReplicas, availableReplicas."""
    return sum(rs.count(key) for rs in rses if rs is not None)


def find_active_or_latest(new: RS | None, old: list[RS]) -> RS | None:
    """The only active ReplicaSet, or the newest when none is active; None when several are."""
    if new is None and not old:
        return None
    old = sorted(old, key=lambda rs: (rs.created, rs.name), reverse=True)
    live = active(old + [new])
    if not live:
        return new if new is not None else old[0]
    return live[0] if len(live) == 1 else None


def is_saturated(d: Deployment, rs: RS | None) -> bool:
    if rs is None:
        return False
    try:
        desired = int(rs.annotations.get(DESIRED_REPLICAS, ""), 10)
    except ValueError:
        return False
    return rs.replicas == d.replicas and desired == d.replicas and rs.count("availableReplicas") == d.replicas


def new_rs_new_replicas(d: Deployment, all_rses: list[RS | None], new_replicas: int) -> int:
    """NewRSNewReplicas: how far the new ReplicaSet may grow now."""
    if d.strategy == ROLLING_UPDATE:
        surge = int_or_percent(d.rolling.get("maxSurge", DEFAULT_MAX_SURGE), d.replicas, True)
        current = replica_count(all_rses)
        max_total = d.replicas + surge
        if current >= max_total:
            return new_replicas
        return new_replicas + min(max_total - current, d.replicas - new_replicas)
    return d.replicas


# ---- annotations --------------------------------------------------------------------------------------

def replicas_annotations(d: Deployment) -> dict[str, str]:
    return {DESIRED_REPLICAS: str(d.replicas), MAX_REPLICAS: str(d.replicas + max_surge(d))}


def new_replica_set_annotations(d: Deployment, current: dict, new_revision: int, exists: bool) -> dict:
    """SetNewReplicaSetAnnotations: the Deployment's annotations copied (but the skipped ones), the revision
    raised to new_revision (the old one kept in revision-history when there was one), and for a ReplicaSet
    about to be created the replica annotations. Returns the annotations to write."""
    out = dict(current)
    for k, v in d.annotations.items():
        if k not in ANNOTATIONS_TO_SKIP:
            out[k] = v
    old_text = out.get(REVISION)
    try:
        old = int(old_text, 10) if old_text else 0
    except ValueError:
        return dict(current)  # not an int: left alone (upstream logs and changes nothing)
    if old < new_revision:
        out[REVISION] = str(new_revision)
        if old_text is not None:
            history = out.get(REVISION_HISTORY, "")
            revisions = history.split(",")
            if not revisions[0]:
                out[REVISION_HISTORY] = old_text
            else:
                total = len(history) + len(old_text) + 1
                start = 0
                while total > MAX_REV_HISTORY_LENGTH_IN_CHARS and start < len(revisions):
                    total -= len(revisions[start]) + 1
                    start += 1
                if total <= MAX_REV_HISTORY_LENGTH_IN_CHARS:
                    out[REVISION_HISTORY] = ",".join(revisions[start:] + [old_text])
    if not exists:
        out.update(replicas_annotations(d))
    return out


def replica_set_fraction(rs: RS, d: Deployment) -> int:
    """getReplicaSetFraction: this ReplicaSet's share of a resize, from its max-replicas annotation."""
    if d.replicas == 0:
        return -rs.replicas
    deployment_replicas = d.replicas + max_surge(d)
    try:
        annotated = int(rs.annotations.get(MAX_REPLICAS, ""), 10)
    except ValueError:
        annotated = int(d.status.get("replicas") or 0)
    if annotated == 0:
        return 0  # upstream never gets here with 0 (it would divide by it)
    size = float(rs.replicas * deployment_replicas) / float(annotated)
    return _round_to_int32(size) - rs.replicas


def _round_to_int32(a: float) -> int:
    """integer.RoundToInt32: half away from zero, truncating toward zero."""
    return int(a - 0.5) if a < 0 else int(a + 0.5)


def proportion(rs: RS | None, d: Deployment, to_add: int, added: int) -> int:
    """GetProportion."""
    if rs is None or rs.replicas == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = replica_set_fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def deployment_complete(d: Deployment, status: dict) -> bool:
    want = d.replicas
    return (int(status.get("updatedReplicas") or 0) == want and int(status.get("replicas") or 0) == want
            and int(status.get("availableReplicas") or 0) == want
            and int(status.get("observedGeneration") or 0) >= d.generation)


def has_progress_deadline(d: Deployment) -> bool:
    return d.progress_deadline is not None and d.progress_deadline != MAX_INT32


def has_revision_history_limit(d: Deployment) -> bool:
    return d.revision_history_limit is not None and d.revision_history_limit != MAX_INT32
