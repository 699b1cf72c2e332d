"""events.k8s.io/v1 events as client-go's events broadcaster records them, series included.

An event is keyed by (type, action, reason, reportingController, reportingInstance, regarding,
related) — not by its note. The first of a key is created; the second turns it into a series
(patched with count 2); later ones only count in memory, and the count reaches the API server when
the series ends (6 minutes without a repeat) or at the 30-minute refresh, as upstream.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from .client import ApiError, Backoff, call

log = logging.getLogger(__name__)

FINISH_TIME = 6 * 60.0
REFRESH_TIME = 30 * 60.0
MAX_NOTE_LENGTH = 1024  # as the recorder: longer notes are cut
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


def micro_time(when: datetime) -> str:
    """metav1.MicroTime as JSON: RFC 3339 with microseconds, UTC."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def pod_reference(namespace: str, name: str, uid: str, resource_version: str = "") -> dict:
    """The ObjectReference reference.GetReference makes for a pod (resourceVersion included, as upstream)."""
    ref = {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name, "uid": uid}
    if resource_version:
        ref["resourceVersion"] = resource_version
    return ref


@dataclass
class _Cached:
    event: dict
    series_count: int = 0
    last_observed: datetime | None = None
    event_time: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    dirty: bool = False  # counted in memory since the last write


class EventRecorder:
    """Records events to events.k8s.io/v1 with upstream's series aggregation; one per process."""

    def __init__(self, events_api, *, hostname: str | None = None, clock=None, backoff: Backoff | None = None):
        self.api = events_api
        self.hostname = hostname or socket.gethostname()
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.backoff = backoff or Backoff(initial=0.2, cap=5.0, attempts=4)
        self.cache: dict[tuple, _Cached] = {}
        self._lock = threading.Lock()
        self._last_refresh = time.monotonic()

    def _key(self, event: dict) -> tuple:
        regarding = tuple(sorted(event["regarding"].items()))
        related = tuple(sorted((event.get("related") or {}).items()))
        return (event["type"], event["action"], event["reason"], event["reportingController"],
                event["reportingInstance"], regarding, related)

    def eventf(self, regarding: dict, *, type: str, reason: str, action: str, note: str,
               reporting_controller: str, related: dict | None = None) -> None:
        now = self.clock()
        namespace = regarding.get("namespace") or "default"
        event = {
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            # As makeEvent: the object's name and the time in nanoseconds, hex.
            "metadata": {"name": f"{regarding['name']}.{int(now.timestamp() * 1e9):x}", "namespace": namespace},
            "eventTime": micro_time(now),
            "reportingController": reporting_controller,
            "reportingInstance": f"{reporting_controller}-{self.hostname}",
            "action": action, "reason": reason, "regarding": regarding,
            "note": note[:MAX_NOTE_LENGTH], "type": type,
        }
        if related:  # as Eventf(regarding, related, ...): the preemptor of a "Preempted" victim
            event["related"] = related
        with self._lock:
            key = self._key(event)
            cached = self.cache.get(key)
            if cached is not None:
                cached.series_count = max(2, cached.series_count + 1)
                cached.last_observed = now
                if cached.series_count > 2:
                    cached.dirty = True  # counted only; written when the series ends or is refreshed
                    return
                to_write = cached
            else:
                to_write = self.cache[key] = _Cached(event=event, event_time=now)
        self._record(to_write)

    def _series(self, cached: _Cached) -> dict:
        return {"count": cached.series_count, "lastObservedTime": micro_time(cached.last_observed or cached.event_time)}

    def _record(self, cached: _Cached) -> None:
        event = cached.event
        meta = event["metadata"]
        try:
            if cached.series_count >= 2:
                try:
                    call(self.api.patch_namespaced_event, meta["name"], meta["namespace"],
                         {"series": self._series(cached)}, _content_type=STRATEGIC_MERGE_PATCH, backoff=self.backoff,
                         decode=False)
                    cached.dirty = False
                    return
                except ApiError as exc:
                    if exc.status != 404:
                        raise
                    # The event was removed (TTL): create it again, carrying the series.
                body = {**event, "series": self._series(cached)}
            else:
                body = event
            call(self.api.create_namespaced_event, meta["namespace"], body, backoff=self.backoff, decode=False)
            cached.dirty = False
        except ApiError as exc:
            # As upstream: an event is best effort, never a reason to stop scheduling.
            log.warning("could not record event %s %s for %s/%s: %s", event["type"], event["reason"],
                        event["regarding"].get("namespace"), event["regarding"].get("name"), exc)

    def tick(self) -> None:
        """finishSeries and refreshExistingEventSeries: call now and then (the committer does, each loop)."""
        now = self.clock()
        refresh = time.monotonic() - self._last_refresh >= REFRESH_TIME
        if refresh:
            self._last_refresh = time.monotonic()
        finished, to_write = [], []
        with self._lock:
            for key, cached in list(self.cache.items()):
                if cached.series_count >= 2:
                    if (now - (cached.last_observed or cached.event_time)).total_seconds() > FINISH_TIME:
                        finished.append(key)
                        to_write.append(cached)
                    elif refresh:
                        to_write.append(cached)
                elif (now - cached.event_time).total_seconds() > FINISH_TIME:
                    finished.append(key)
            for key in finished:
                self.cache.pop(key, None)
        for cached in to_write:
            self._record(cached)
