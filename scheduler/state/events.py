"""Kubernetes events and cluster events as rows: events_record counts a repeated event as the event
correlator does; cluster_event_record is what moves unschedulable pods (the reconciler reads it)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.utils import timezone

from ..engine.pods import DEFAULT_SCHEDULER_NAME
from ..models import ClusterEvent
from .sql import array_param


@dataclass
class EventSpec:
    """A Kubernetes event to record (repeats are counted by events_record)."""

    type: str
    reason: str
    message: str
    kind: str
    namespace: str
    name: str
    uid: str = ""
    action: str = ""
    reporting_controller: str = DEFAULT_SCHEDULER_NAME


_EVENT_UPSERT = """
INSERT INTO scheduler_event (dedup_key, type, reason, action, message, involved_kind, involved_namespace,
    involved_name, involved_uid, reporting_controller, count, first_timestamp, last_timestamp)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 1, %s, %s)
ON CONFLICT (dedup_key) DO UPDATE SET count = scheduler_event.count + 1, last_timestamp = excluded.last_timestamp
"""


# The same upsert for a whole batch (Postgres): one statement over arrays, each distinct event once with
# how many times it came (a statement may not update one row twice), in the order they came.
_EVENTS_UPSERT = """
INSERT INTO scheduler_event (dedup_key, type, reason, action, message, involved_kind, involved_namespace,
    involved_name, involved_uid, reporting_controller, count, first_timestamp, last_timestamp)
SELECT v.*, %s, %s FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[],
    %s::text[], %s::text[], %s::text[], %s::integer[]) AS v
ON CONFLICT (dedup_key) DO UPDATE SET count = scheduler_event.count + excluded.count,
    last_timestamp = excluded.last_timestamp
"""


def events_record(events: list[EventSpec], *, now: datetime | None = None) -> None:
    """Insert events in one round trip; an identical event for the same object bumps its count (as the event correlator)."""
    if not events:
        return
    ts = connection.ops.adapt_datetimefield_value(now or timezone.now())
    rows: dict[str, list] = {}
    for e in events:
        key = hashlib.sha256(
            "\x00".join((e.kind, e.namespace, e.name, e.uid, e.type, e.reason, e.message, e.reporting_controller)).encode()
        ).hexdigest()
        row = rows.get(key)
        if row is None:
            rows[key] = [key, e.type, e.reason, e.action, e.message, e.kind, e.namespace, e.name, e.uid,
                         e.reporting_controller, 1]
        else:
            row[-1] += 1
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(_EVENTS_UPSERT, [ts, ts, *(array_param(c) for c in zip(*rows.values()))])
            return
        cursor.executemany(_EVENT_UPSERT, [(*row[:-1], ts, ts) for row in rows.values() for _ in range(row[-1])])


def cluster_event_record(kind: str, object_name: str) -> None:
    ClusterEvent.objects.create(kind=kind, object_name=object_name)
