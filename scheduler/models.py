"""Persistent state and audit: nodes, pods, scheduling attempts, bindings and events.

Postgres is the truth. A node's `req_*` columns hold what its bound and assumed pods take
from it; they change only through conditional updates (scheduler/state/reservations.py), so no
interleaving of workers can push them past allocatable.
"""

from django.conf import settings
from django.db import models

from .engine.pods import DEFAULT_SCHEDULER_NAME

RESULT_SCHEDULED = "scheduled"
RESULT_UNSCHEDULABLE = "unschedulable"
RESULT_ERROR = "error"
RESULT_BIND_FAILED = "bind_failed"
RESULT_CHOICES = [
    (RESULT_SCHEDULED, "scheduled"),
    (RESULT_UNSCHEDULABLE, "unschedulable"),
    (RESULT_ERROR, "error"),
    (RESULT_BIND_FAILED, "bind failed"),
]


class Node(models.Model):
    name = models.CharField(max_length=253, unique=True)
    manifest = models.JSONField(help_text="The v1 Node as applied (normalised).")
    unschedulable = models.BooleanField(default=False)
    alloc_cpu = models.BigIntegerField(default=0, help_text="millicores")
    alloc_memory = models.BigIntegerField(default=0, help_text="bytes")
    alloc_ephemeral = models.BigIntegerField(default=0, help_text="bytes")
    alloc_pods = models.BigIntegerField(default=0)
    alloc_scalar = models.JSONField(default=dict, blank=True, help_text="extended resources -> integer")
    req_cpu = models.BigIntegerField(default=0)
    req_memory = models.BigIntegerField(default=0)
    req_ephemeral = models.BigIntegerField(default=0)
    req_pods = models.BigIntegerField(default=0)
    req_scalar = models.JSONField(default=dict, blank=True)
    nonzero_cpu = models.BigIntegerField(default=0, help_text="requested cpu with the scoring defaults")
    nonzero_memory = models.BigIntegerField(default=0)
    used_ports = models.JSONField(default=list, blank=True, help_text="[[protocol, port, ip], ...]")
    spec_version = models.BigIntegerField(default=1, help_text="bumped when the manifest changes")
    generation = models.BigIntegerField(default=0, help_text="bumped when the usage changes")
    # Set by a Postgres trigger on every insert and update to the writing transaction's id (txid_current()):
    # a worker re-reads only the rows written by transactions its last snapshot did not see finished
    # (state/snapshot.py). Indexed: at 50,000 nodes a refresh with nothing written took 16.7 ms scanning for them,
    # 3.3 ms with the index (each reservation's update then also writes the indexes: no HOT update).
    touched = models.BigIntegerField(default=0, editable=False,
                                     help_text="the id of the transaction that last wrote this row (Postgres)")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        indexes = [models.Index(fields=["spec_version"], name="node_spec_version"),
                   models.Index(fields=["touched"], name="node_touched")]

    def __str__(self) -> str:
        return self.name


POD_UID_CONSTRAINT = "pod_unique_uid"


class Pod(models.Model):
    PENDING, RUNNING = "Pending", "Running"

    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64)
    manifest = models.JSONField(help_text="The v1 Pod as applied (normalised).")
    scheduler_name = models.CharField(max_length=253, default=DEFAULT_SCHEDULER_NAME)
    priority = models.IntegerField(default=0)
    phase = models.CharField(max_length=16, default=PENDING)
    node_name = models.CharField(max_length=253, blank=True, default="", help_text="spec.nodeName once bound")
    assumed_node = models.CharField(max_length=253, blank=True, default="", help_text="reserved, not yet bound")
    assumed_at = models.DateTimeField(null=True, blank=True)
    # status.nominatedNodeName: the node this pod's preemption made room on (the nominator counts it there).
    nominated_node = models.CharField(max_length=253, blank=True, default="")
    # Set (conditionally, while the reservation still stands) just before the binder takes the
    # reservation to the backend: the reconciler never frees such a reservation at assumed_at's TTL.
    # Cleared by the binding's outcome or by the mirror seeing the pod bound; a mark older than
    # SCHEDBOARD_BINDING_TIMEOUT_SECONDS (its binder died and its job was lost) is freed then.
    binding_at = models.DateTimeField(null=True, blank=True, help_text="the binding of the reservation is in flight")
    deleting = models.BooleanField(default=False)
    # What the pod takes from its node, kept so a release needs no re-parse.
    req_cpu = models.BigIntegerField(default=0)
    req_memory = models.BigIntegerField(default=0)
    req_ephemeral = models.BigIntegerField(default=0)
    req_scalar = models.JSONField(default=dict, blank=True)
    nonzero_cpu = models.BigIntegerField(default=0)
    nonzero_memory = models.BigIntegerField(default=0)
    host_ports = models.JSONField(default=list, blank=True)
    # The PodScheduled condition, as kube-scheduler leaves it.
    scheduled_status = models.CharField(max_length=8, blank=True, default="")
    scheduled_reason = models.CharField(max_length=64, blank=True, default="")
    scheduled_message = models.TextField(blank=True, default="")
    scheduled_transition_at = models.DateTimeField(null=True, blank=True)
    attempts = models.IntegerField(default=0)
    created_at = models.DateTimeField(help_text="metadata.creationTimestamp")
    queued_at = models.DateTimeField(null=True, blank=True, help_text="first time queued (SLI start)")
    bound_at = models.DateTimeField(null=True, blank=True)
    # When its last scheduling gate was removed. Gates are set only at creation and may only be removed, so a
    # pod with this set was gated from its creation until then: what the rewind (/queue/?at=) reads.
    ungated_at = models.DateTimeField(null=True, blank=True, help_text="its last scheduling gate removed")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [
            models.UniqueConstraint(fields=["namespace", "name"], name="pod_unique_namespace_name"),
            # One pod per uid, as the API server's: apply checks it first with its own words, this closes
            # the race between two applies (a second pod under one uid could never be bound).
            models.UniqueConstraint(fields=["uid"], condition=~models.Q(uid=""), name=POD_UID_CONSTRAINT),
        ]
        indexes = [
            models.Index(fields=["node_name"], name="pod_node_name"),
            models.Index(fields=["assumed_node"], name="pod_assumed_node"),
            # The nominator's per-batch read: the few pods nominated and not yet placed.
            models.Index(fields=["nominated_node"], name="pod_nominated", condition=~models.Q(nominated_node="")),
        ]

    def __str__(self) -> str:
        return self.key

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


# The kinds of ClusterObject: what PodTopologySpread's default constraints (the Services and
# controllers selecting a pod) and InterPodAffinity's namespaceSelector (Namespace labels) read.
NAMESPACE, SERVICE, REPLICA_SET, STATEFUL_SET, REPLICATION_CONTROLLER = (
    "Namespace", "Service", "ReplicaSet", "StatefulSet", "ReplicationController")
CLUSTER_OBJECT_KINDS = (NAMESPACE, SERVICE, REPLICA_SET, STATEFUL_SET, REPLICATION_CONTROLLER)
# ---- preemption's kinds (issue 12): what Priority admission and DefaultPreemption read ----
PRIORITY_CLASS, POD_DISRUPTION_BUDGET = "PriorityClass", "PodDisruptionBudget"
CLUSTER_OBJECT_KINDS += (PRIORITY_CLASS, POD_DISRUPTION_BUDGET)
# ---- end of preemption's kinds ----
# The workload kinds only the controllers read (scheduler/controllers/): a Deployment owns ReplicaSets.
DEPLOYMENT = "Deployment"
CLUSTER_OBJECT_KINDS += (DEPLOYMENT,)


class ClusterObject(models.Model):
    """A Namespace, Service, ReplicaSet, StatefulSet, ReplicationController or Deployment, as applied or mirrored.

    `selector` is the object's selector as stored, JSON null for a nil one (it selects nothing):
    a Service's or ReplicationController's map, a ReplicaSet's or StatefulSet's LabelSelector.
    """

    kind = models.CharField(max_length=32, choices=[(k, k) for k in CLUSTER_OBJECT_KINDS])
    namespace = models.CharField(max_length=253, blank=True, default="", help_text="empty for a Namespace")
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64, blank=True, default="")
    labels = models.JSONField(default=dict, blank=True)
    selector = models.JSONField(null=True, blank=True)
    replicas = models.IntegerField(null=True, blank=True)
    manifest = models.JSONField(help_text="The object as applied (normalised).")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["kind", "namespace", "name"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "namespace", "name"], name="cluster_object_unique_name"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


class Attempt(models.Model):
    """One scheduling attempt of one pod: the decision, why, and how long each part took."""

    pod = models.ForeignKey(Pod, null=True, blank=True, on_delete=models.SET_NULL, related_name="attempt_set")
    namespace = models.CharField(max_length=253)
    pod_name = models.CharField(max_length=253)
    pod_uid = models.CharField(max_length=64, blank=True, default="")
    number = models.IntegerField(help_text="the pod's attempt count at this attempt")
    started_at = models.DateTimeField()
    # When the worker began reading the node usage and placed pods this attempt decided on (just before its
    # snapshot's queries): a replay applies the cluster's changes up to this instant, not up to started_at.
    snapshot_at = models.DateTimeField(null=True, blank=True)
    # The newest pod deletion (DeletedPod id) committed when that snapshot was read: a deletion is stamped when
    # its transaction deletes the row, before it commits, so its stamp alone cannot say whether a snapshot read
    # a few milliseconds later saw it; a replay holds back the deletions this attempt did not see.
    snapshot_deleted_pod = models.BigIntegerField(null=True, blank=True)
    # Where the worker's random choices stood when this attempt's cycle began (engine/tiebreak.py): the seed and
    # the number of draws before it (selectHost's pick among equal top scores, preemption's offset among the
    # candidates), and the round-robin index the node scan started at. A replay draws the same (migration 0016).
    tiebreak_seed = models.BigIntegerField(null=True, blank=True)
    tiebreak_position = models.BigIntegerField(null=True, blank=True)
    start_node_index = models.IntegerField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    result = models.CharField(max_length=16, choices=RESULT_CHOICES)
    node_name = models.CharField(max_length=253, blank=True, default="", help_text="chosen node")
    message = models.TextField(blank=True, default="")
    reasons = models.JSONField(default=dict, blank=True, help_text="reason -> number of nodes")
    candidates = models.JSONField(default=list, blank=True, help_text="top candidates with per-plugin scores")
    # Written as SCHEDBOARD_TRACE says; the format is in scheduler/engine/explain.py (trace()).
    trace = models.JSONField(default=dict, blank=True,
                             help_text="filter verdicts per node (grouped) and, when traced, every candidate's scores")
    num_nodes = models.IntegerField(default=0)
    feasible_nodes = models.IntegerField(default=0)
    evaluated_nodes = models.IntegerField(default=0)
    profile_name = models.CharField(max_length=253, default=DEFAULT_SCHEDULER_NAME)
    profile_version = models.IntegerField(default=0)
    worker = models.CharField(max_length=128, blank=True, default="")
    queue_wait_ms = models.FloatField(null=True, blank=True)
    algorithm_ms = models.FloatField(null=True, blank=True, help_text="filter, score and select")
    attempt_ms = models.FloatField(null=True, blank=True, help_text="the whole scheduling cycle: algorithm, assume, reserve")
    binding_ms = models.FloatField(null=True, blank=True)
    e2e_ms = models.FloatField(null=True, blank=True, help_text="first queued to bound (the SLI)")

    class Meta:
        ordering = ["-started_at", "-id"]
        # The audit pages by keyset on (started_at, id), so each index ends with both: any filter
        # below plus a page is one index range (dashboard/audit.py). The pod-name search has a
        # trigram index on Postgres (migration 0004).
        indexes = [
            models.Index(fields=["namespace", "pod_name", "-started_at", "-id"], name="attempt_by_pod"),
            models.Index(fields=["node_name", "-started_at", "-id"], name="attempt_by_node"),
            models.Index(fields=["-started_at", "-id"], name="attempt_by_time"),
            models.Index(fields=["result", "-started_at", "-id"], name="attempt_by_result"),
            models.Index(fields=["profile_version", "-started_at", "-id"], name="attempt_by_version"),
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.pod_name} #{self.number} {self.result}"


class Binding(models.Model):
    pod = models.ForeignKey(Pod, null=True, blank=True, on_delete=models.SET_NULL, related_name="binding_set")
    namespace = models.CharField(max_length=253)
    pod_name = models.CharField(max_length=253)
    pod_uid = models.CharField(max_length=64, blank=True, default="")
    node_name = models.CharField(max_length=253)
    attempt = models.OneToOneField(Attempt, null=True, blank=True, on_delete=models.SET_NULL)
    bound_at = models.DateTimeField()

    class Meta:
        ordering = ["-bound_at", "-id"]
        indexes = [
            models.Index(fields=["namespace", "pod_name"], name="binding_by_pod"),
            models.Index(fields=["node_name", "-bound_at"], name="binding_by_node"),
            models.Index(fields=["-bound_at"], name="binding_by_time"),
            # The audit lists bindings whose attempt retention deleted (dashboard/audit.py) a keyset page at a time:
            # once attempts go after days and bindings stay, these are nearly all of the table's rows, but the
            # newest rows (with their attempt) would otherwise be read and skipped first.
            models.Index(fields=["-bound_at", "-id"], name="binding_without_attempt",
                         condition=models.Q(attempt__isnull=True)),
        ]
        constraints = [
            # A pod (by uid) is bound once; a second binding is a bug, and Postgres refuses it.
            models.UniqueConstraint(fields=["pod_uid"], name="binding_once_per_pod_uid"),
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.pod_name} -> {self.node_name}"


class Event(models.Model):
    """A Kubernetes-style event. A repeat of the same event bumps `count` and `last_timestamp`."""

    NORMAL, WARNING = "Normal", "Warning"

    dedup_key = models.CharField(max_length=64, unique=True)
    type = models.CharField(max_length=16)
    reason = models.CharField(max_length=128)
    action = models.CharField(max_length=128, blank=True, default="")
    message = models.TextField()
    involved_kind = models.CharField(max_length=32)
    involved_namespace = models.CharField(max_length=253, blank=True, default="")
    involved_name = models.CharField(max_length=253)
    involved_uid = models.CharField(max_length=64, blank=True, default="")
    reporting_controller = models.CharField(max_length=253, default=DEFAULT_SCHEDULER_NAME)
    count = models.IntegerField(default=1)
    first_timestamp = models.DateTimeField()
    last_timestamp = models.DateTimeField()

    class Meta:
        ordering = ["last_timestamp", "id"]
        indexes = [
            models.Index(fields=["involved_namespace", "involved_name"], name="event_by_object"),
            models.Index(fields=["-last_timestamp"], name="event_by_time"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.reason} {self.involved_kind}/{self.involved_name}"


class Preemption(models.Model):
    """A preemption under way (upstream's Evaluator.preempting, kept in Postgres so every worker sees it and no
    restart loses it): written with the preemptor's nomination, in the transaction of the attempt that chose
    the victims, and deleted by the preempt task once it has evicted them (on the kubernetes backend, by the
    lease holder once its API calls are made). While it stands and one of its victims is still there and not
    yet being deleted, the preemptor is not attempted again (DefaultPreemption's PreEnqueue); the reconciler
    sends the task again when it has not finished within PREEMPTION_RESEND_SECONDS (its worker died)."""

    preemptor_uid = models.CharField(max_length=64, unique=True)  # one preemption under way per pod
    node = models.CharField(max_length=253, help_text="the nominated node the victims are on")
    attempt = models.BigIntegerField(null=True, blank=True, help_text="the attempt that chose the victims")
    job = models.JSONField(help_text="what the preempt task is sent (state/nominations.preemption_job)")
    created_at = models.DateTimeField()
    sent_at = models.DateTimeField(help_text="when the task was last sent")

    class Meta:
        indexes = [models.Index(fields=["sent_at"], name="preemption_by_sent_at")]

    def __str__(self) -> str:
        return f"{self.job['preemptor']['namespace']}/{self.job['preemptor']['name']} on {self.node}"


class ClusterEvent(models.Model):
    """A cluster change that may make unschedulable pods schedulable (upstream's ClusterEvent).

    Written in the same transaction as the change, read by every reconciler, so the queue
    reacts even when the change came from another process or the queue was lost.
    """

    NODE_ADD, NODE_UPDATE, ASSIGNED_POD_DELETE = "NodeAdd", "NodeUpdate", "AssignedPodDelete"

    kind = models.CharField(max_length=32)
    object_name = models.CharField(max_length=512, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_name}"


class DeletedPod(models.Model):
    """A pod row as it was when it was deleted, written by a database trigger on the pod table (migration
    0011), so every way a pod goes (delete, the kube mirror, tests, retention of nothing) is recorded alike.
    What the rewind (scheduler/state/rewind.py) and a recorded trace read to know a pod existed until then."""

    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64, blank=True, default="")
    node_name = models.CharField(max_length=253, blank=True, default="")
    assumed_node = models.CharField(max_length=253, blank=True, default="")
    priority = models.IntegerField(default=0)
    req_cpu = models.BigIntegerField(default=0)
    req_memory = models.BigIntegerField(default=0)
    req_ephemeral = models.BigIntegerField(default=0)
    req_scalar = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()
    queued_at = models.DateTimeField(null=True, blank=True)
    bound_at = models.DateTimeField(null=True, blank=True)
    ungated_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField()
    manifest = models.JSONField()

    class Meta:
        ordering = ["-deleted_at", "-id"]
        indexes = [models.Index(fields=["deleted_at"], name="deleted_pod_by_time")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name} (deleted {self.deleted_at})"


class DeletedNode(models.Model):
    """A node row as it was when it was deleted (a trigger on the node table, migration 0011)."""

    name = models.CharField(max_length=253)
    manifest = models.JSONField()
    unschedulable = models.BooleanField(default=False)
    alloc_cpu = models.BigIntegerField(default=0)
    alloc_memory = models.BigIntegerField(default=0)
    alloc_ephemeral = models.BigIntegerField(default=0)
    alloc_pods = models.BigIntegerField(default=0)
    alloc_scalar = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()
    deleted_at = models.DateTimeField()

    class Meta:
        ordering = ["-deleted_at", "-id"]
        indexes = [models.Index(fields=["deleted_at"], name="deleted_node_by_time")]

    def __str__(self) -> str:
        return f"{self.name} (deleted {self.deleted_at})"


class NodeRevision(models.Model):
    """A node's manifest as it was until a change replaced it, written by a trigger on the node table
    (migration 0014) only when the manifest changes (not on the request counters' updates), so a recorded
    trace holds each node as it was at its start and every update with its time."""

    name = models.CharField(max_length=253)
    manifest = models.JSONField(help_text="the manifest before the change")
    replaced_at = models.DateTimeField(help_text="when the change replaced it")

    class Meta:
        ordering = ["-replaced_at", "-id"]
        indexes = [models.Index(fields=["replaced_at"], name="node_revision_by_time")]

    def __str__(self) -> str:
        return f"{self.name} (until {self.replaced_at})"


class SchedulerConfigVersion(models.Model):
    """One saved version of the whole scheduler configuration; rows are never changed, only added.

    Workers run the active row (at most one is active); with no row, version 0 is the initial
    configuration (SCHEDBOARD_CONFIG, else kube-scheduler's default).
    """

    number = models.PositiveIntegerField(unique=True, help_text="1, 2, ...; 0 is the initial configuration")
    config = models.JSONField(help_text="SchedulerConfig.to_dict()")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+", help_text="empty when saved from the command line")
    reason = models.TextField(help_text="why this version was saved")
    active = models.BooleanField(default=False)

    class Meta:
        ordering = ["-number"]
        constraints = [
            models.CheckConstraint(condition=models.Q(reason__regex=r"\S"), name="config_version_reason_not_blank"),
            models.CheckConstraint(condition=models.Q(number__gte=1), name="config_version_number_from_one"),
            models.UniqueConstraint(fields=["active"], condition=models.Q(active=True), name="config_version_one_active"),
            # kube-scheduler's validation where a constraint can say it (the rest, on Postgres, in
            # migration 0005's jsonpath checks): a row the service would refuse is refused here too.
            models.CheckConstraint(
                condition=models.Q(config__has_keys=["profiles", "pod_initial_backoff_seconds", "pod_max_backoff_seconds"]),
                name="config_version_has_fields"),
            models.CheckConstraint(
                condition=models.Q(config__percentage_of_nodes_to_score=None)
                | models.Q(config__percentage_of_nodes_to_score__gte=0, config__percentage_of_nodes_to_score__lte=100),
                name="config_version_percentage_in_range"),
            models.CheckConstraint(condition=models.Q(config__pod_initial_backoff_seconds__gte=1),
                                   name="config_version_initial_backoff_positive"),
        ]

    def __str__(self) -> str:
        return f"version {self.number}" + (" (active)" if self.active else "")


# ---- replay (scheduler/replay/) ---------------------------------------------------------------------------

class ReplayRun(models.Model):
    """A replay started from the dashboard: its inputs, its progress while the Celery task runs, its report."""

    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    STATUS_CHOICES = [(s, s) for s in (QUEUED, RUNNING, DONE, FAILED)]

    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    trace_name = models.CharField(max_length=255)
    trace = models.TextField(help_text="the trace as given (JSON lines, or a kubectl dump)")
    configs = models.JSONField(help_text='[{"name": ..., "config": SchedulerConfig as stored, or null: recorded}]')
    seed = models.IntegerField(null=True, blank=True)
    status = models.CharField(max_length=8, choices=STATUS_CHOICES, default=QUEUED)
    progress = models.FloatField(default=0.0, help_text="0..1 over all configurations")
    report = models.JSONField(null=True, blank=True, help_text="the `replay --json` report")
    error = models.TextField(blank=True, default="")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"replay {self.pk} of {self.trace_name} ({self.status})"
