"""The audit's query: every attempt (and its binding) filtered, in (started_at, id) order, a page at
a time by keyset, or all of it streamed as CSV or JSON.

Keyset, not OFFSET: the next page starts strictly after the last row's (started_at, id), so a page
deep in millions of rows costs what the first one does (an index range scan on the matching
(…, started_at, id) index, see the Attempt indexes), and rows inserted meanwhile never shift a page.

Attempts are deleted after SCHEDBOARD_RETAIN_ATTEMPTS while bindings may be kept longer (forever by
default: scheduler/retention.py). A binding whose attempt is gone is still part of the audit: it is
listed among the attempts by its bound time (the pod, the node, when; nothing the attempt knew), read
a keyset page at a time from its own partial index (binding_without_attempt), and the two ordered
streams are merged. The order is (time, kind, id) newest first, an attempt before a binding at equal
times; a page cursor names the kind of its row.
"""

from __future__ import annotations

import base64
import binascii
import heapq
from dataclasses import dataclass
from datetime import datetime, timezone as dt_timezone

from django import forms
from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from scheduler.models import RESULT_CHOICES, RESULT_SCHEDULED, Attempt, Binding

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
EXPORT_CHUNK = 2000
# The largest id a BigAutoField holds (a signed 64-bit integer on Postgres and SQLite alike); a larger one
# overflows the database driver (OverflowError on SQLite) rather than simply matching nothing.
MAX_ID = 2**63 - 1
# profile_version is an IntegerField: 32 bits on Postgres.
MAX_VERSION = 2**31 - 1
OUT_OF_RANGE = "This time is out of range: in UTC it must fall between years 1 and 9999."


def in_range(when: datetime) -> bool:
    """Whether an aware time is storable: SQLite keeps times as naive UTC text, so a time whose UTC falls
    outside datetime's years 1..9999 (0001-01-01T00:00+05:00 is year 0 in UTC) overflows on conversion;
    Postgres would take it, but a filter must mean the same on both."""
    try:
        when.astimezone(dt_timezone.utc)
    except OverflowError:
        return False
    return True


# The kind of a row, as its cursor says it; at equal times an attempt sorts after (is newer than) a binding.
ATTEMPT, BINDING = 1, 0


class Cursor:
    """A position in the (time, kind, id) order, opaque in the URL: base64 of "<iso time>|<id>" for an
    attempt (the links made before bindings were listed stay valid), "<iso time>|<id>|b" for a binding.
    Decoded: (time, id) for an attempt, (time, id, BINDING) for a binding."""

    @staticmethod
    def encode(when: datetime, pk: int, kind: int = ATTEMPT) -> str:
        raw = f"{when.isoformat()}|{pk}" + ("|b" if kind == BINDING else "")
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @staticmethod
    def decode(value: str) -> tuple:
        try:
            raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
            parts = raw.split("|")
            binding = len(parts) == 3 and parts[2] == "b"
            if binding:
                parts = parts[:2]
            when, pk = parts
            started_at = datetime.fromisoformat(when)
            if started_at.tzinfo is None:
                raise ValueError("naive time")
            if not in_range(started_at):
                raise ValueError("time out of range")
            if not pk.isascii() or not pk.isdigit():
                raise ValueError("not an id")
            pk = int(pk)  # ValueError past 4,300 digits
            if pk > MAX_ID:
                raise ValueError("id out of range")
            return (started_at, pk, BINDING) if binding else (started_at, pk)
        except (ValueError, OverflowError, binascii.Error, UnicodeDecodeError):
            raise forms.ValidationError("This page link is damaged; start again from the first page.") from None


class AuditFilterForm(forms.Form):
    """The filter, from the query string: a link carries it, so every view of the audit is a permalink."""

    namespace = forms.CharField(required=False, max_length=253)
    pod = forms.CharField(required=False, max_length=253, label="Pod name")
    q = forms.CharField(required=False, max_length=253, label="Pod name contains")
    node = forms.CharField(required=False, max_length=253)
    result = forms.ChoiceField(required=False, choices=[("", "any")] + RESULT_CHOICES)
    version = forms.IntegerField(required=False, min_value=0, max_value=MAX_VERSION, label="Profile version")
    since = forms.DateTimeField(required=False, label="From (UTC)",
                                widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}))
    until = forms.DateTimeField(required=False, label="Until (UTC)",
                                widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}))
    limit = forms.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT, label="Rows per page")
    after = forms.CharField(required=False, widget=forms.HiddenInput)
    before = forms.CharField(required=False, widget=forms.HiddenInput)

    FILTERS = ("namespace", "pod", "q", "node", "result", "version", "since", "until", "limit")

    def _clean_time(self, name):
        value = self.cleaned_data[name]
        if value is not None and not in_range(value):
            raise forms.ValidationError(OUT_OF_RANGE)
        return value

    def clean_since(self):
        return self._clean_time("since")

    def clean_until(self):
        return self._clean_time("until")

    def clean_after(self):
        value = self.cleaned_data["after"]
        return Cursor.decode(value) if value else None

    def clean_before(self):
        value = self.cleaned_data["before"]
        return Cursor.decode(value) if value else None

    def clean(self):
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            self.add_error("until", "Must not be before “From”.")
        if data.get("after") and data.get("before"):
            raise forms.ValidationError("A page link cannot go both forward and back.")
        return data


# Lists never show the decision detail; a failed attempt's trace alone can be tens of kilobytes.
DETAIL_FIELDS = ("trace", "candidates", "reasons")


def filtered(data: dict) -> QuerySet:
    """The attempts a cleaned filter selects, newest first."""
    qs = Attempt.objects.defer(*DETAIL_FIELDS)
    for field, column in (("namespace", "namespace"), ("pod", "pod_name"), ("node", "node_name"), ("result", "result")):
        if data.get(field):
            qs = qs.filter(**{column: data[field]})
    if data.get("q"):
        # Pod names are lowercase (DNS-1123), so a lowercased substring match is case-insensitive,
        # and a plain LIKE can use the trigram index on pod_name (UPPER(...) LIKE would not).
        qs = qs.filter(pod_name__contains=data["q"].lower())
    if data.get("version") is not None:
        qs = qs.filter(profile_version=data["version"])
    if data.get("since"):
        qs = qs.filter(started_at__gte=data["since"])
    if data.get("until"):
        qs = qs.filter(started_at__lte=data["until"])
    return qs


def bindings_without_attempt(data: dict) -> QuerySet | None:
    """The bindings whose attempt retention deleted that a cleaned filter selects (None: the filter
    asks for what such a binding no longer knows: a failed result or a profile version)."""
    if data.get("result") not in (None, "", RESULT_SCHEDULED) or data.get("version") is not None:
        return None
    qs = Binding.objects.filter(attempt__isnull=True)
    for field, column in (("namespace", "namespace"), ("pod", "pod_name"), ("node", "node_name")):
        if data.get(field):
            qs = qs.filter(**{column: data[field]})
    if data.get("q"):
        qs = qs.filter(pod_name__contains=data["q"].lower())
    if data.get("since"):
        qs = qs.filter(bound_at__gte=data["since"])
    if data.get("until"):
        qs = qs.filter(bound_at__lte=data["until"])
    return qs


_TABLE = Attempt._meta.db_table


def _position_params(position: tuple) -> list:
    # Raw SQL gets no field conversion: store the time as the column does (SQLite keeps text, and
    # "…00" < "…00+00:00" would compare a row as older than itself).
    when, pk = position[:2]
    return [connection.ops.adapt_datetimefield_value(when), pk]


def _kind(position: tuple) -> int:
    return position[2] if len(position) > 2 else ATTEMPT


class _Stream:
    """One kind of row in the audit's order: its table, time column, and how to read past a cursor."""

    def __init__(self, kind: int, time_field: str, table: str):
        self.kind, self.time_field, self.table = kind, time_field, table

    def key(self, row) -> tuple:
        return (getattr(row, self.time_field), self.kind, row.pk)

    def _compare(self, qs: QuerySet, op: str, position: tuple) -> QuerySet:
        # A row comparison, so the planner reads one range of the (…, time, id) index.
        return qs.extra(where=[f'("{self.table}"."{self.time_field}", "{self.table}"."id") {op} (%s, %s)'],
                        params=_position_params(position))

    def older(self, qs: QuerySet, position: tuple) -> QuerySet:
        """The rows before `position` in (time, kind, id) order."""
        if _kind(position) == self.kind:
            return self._compare(qs, "<", position)
        # The cursor is the other kind's: at its time, an attempt is after it when the cursor is a binding.
        lookup = "lt" if self.kind == ATTEMPT else "lte"
        return qs.filter(**{f"{self.time_field}__{lookup}": position[0]})

    def newer(self, qs: QuerySet, position: tuple) -> QuerySet:
        if _kind(position) == self.kind:
            return self._compare(qs, ">", position)
        lookup = "gte" if self.kind == ATTEMPT else "gt"
        return qs.filter(**{f"{self.time_field}__{lookup}": position[0]})

    def cursor(self, row) -> str:
        return Cursor.encode(getattr(row, self.time_field), row.pk, self.kind)


_ATTEMPTS = _Stream(ATTEMPT, "started_at", _TABLE)
_BINDINGS = _Stream(BINDING, "bound_at", Binding._meta.db_table)


def _older_than(qs: QuerySet, position: tuple) -> QuerySet:
    return _ATTEMPTS.older(qs, position)


def _newer_than(qs: QuerySet, position: tuple) -> QuerySet:
    return _ATTEMPTS.newer(qs, position)


@dataclass
class Page:
    rows: list  # Attempts, and Bindings whose attempt is gone (marked `attempt_deleted`)
    older: str | None  # cursor of the next (older) page, if there is one
    newer: str | None  # cursor of the previous (newer) page, if there is one


def page(qs: QuerySet, *, after=None, before=None, limit: int = DEFAULT_LIMIT, bindings: QuerySet | None = None) -> Page:
    """One page in (time, kind, id) descending order, with the cursors of its neighbours: the attempts of
    `qs`, merged with `bindings` (bindings without an attempt) when given."""
    streams = [(_ATTEMPTS, qs.select_related("binding"))]
    if bindings is not None:
        streams.append((_BINDINGS, bindings))
    tagged: list[tuple[tuple, _Stream, object]] = []
    if before is not None:
        # Going back: read the `limit` rows just newer than the cursor, ascending, then flip them.
        for stream, rows in streams:
            rows = stream.newer(rows, before).order_by(stream.time_field, "id")[: limit + 1]
            tagged += [(stream.key(r), stream, r) for r in rows]
        tagged.sort(key=lambda t: t[0])
        more_newer = len(tagged) > limit
        tagged = tagged[:limit][::-1]
        older = tagged[-1][1].cursor(tagged[-1][2]) if tagged else None
        newer = tagged[0][1].cursor(tagged[0][2]) if tagged and more_newer else None
        return Page(_rows(tagged), older, newer)
    for stream, rows in streams:
        rows = rows.order_by(f"-{stream.time_field}", "-id")
        if after is not None:
            rows = stream.older(rows, after)
        tagged += [(stream.key(r), stream, r) for r in rows[: limit + 1]]
    tagged.sort(key=lambda t: t[0], reverse=True)
    more_older = len(tagged) > limit
    tagged = tagged[:limit]
    older = tagged[-1][1].cursor(tagged[-1][2]) if tagged and more_older else None
    newer = tagged[0][1].cursor(tagged[0][2]) if tagged and after is not None else None
    return Page(_rows(tagged), older, newer)


def _rows(tagged) -> list:
    for _, stream, row in tagged:
        if stream is _BINDINGS:
            row.attempt_deleted = True  # the template shows what the binding alone knows
    return [row for _, _, row in tagged]


# Export column -> the attempt's field (or its binding's) it comes from.
EXPORT_COLUMNS = {
    "id": "id", "started_at": "started_at", "namespace": "namespace", "pod": "pod_name", "attempt": "number",
    "result": "result", "node": "node_name", "bound_at": "binding__bound_at", "profile": "profile_name",
    "profile_version": "profile_version", "message": "message", "queue_wait_ms": "queue_wait_ms",
    "algorithm_ms": "algorithm_ms", "attempt_ms": "attempt_ms", "binding_ms": "binding_ms", "e2e_ms": "e2e_ms",
    "worker": "worker",
}
EXPORT_FIELDS = list(EXPORT_COLUMNS)


# What an export record of a binding without its attempt says in the columns only the attempt knew.
ATTEMPT_DELETED_MESSAGE = "attempt record deleted by retention; the binding is kept"


def all_rows(qs: QuerySet, *, chunk: int = EXPORT_CHUNK, bindings: QuerySet | None = None):
    """Every selected attempt (and binding without its attempt, when given) as an export record, newest
    first, a keyset chunk at a time (bounded memory, no cursor held open between chunks); plain values,
    not model instances, for speed."""
    streams = [_attempt_records(qs, chunk)]
    if bindings is not None:
        streams.append(_binding_records(bindings, chunk))
    for _, record in heapq.merge(*streams, key=lambda kr: kr[0], reverse=True):
        for key in ("started_at", "bound_at"):
            if record[key] is not None:
                record[key] = record[key].isoformat()
        yield record


def _attempt_records(qs: QuerySet, chunk: int):
    qs = qs.order_by("-started_at", "-id").values_list(*EXPORT_COLUMNS.values())
    position = None
    while True:
        rows = list((_older_than(qs, position) if position else qs)[:chunk])
        for row in rows:
            yield (row[1], ATTEMPT, row[0]), dict(zip(EXPORT_FIELDS, row))
        if len(rows) < chunk:
            return
        position = (rows[-1][1], rows[-1][0])  # (started_at, id)


def _binding_records(qs: QuerySet, chunk: int):
    qs = qs.order_by("-bound_at", "-id").values_list("id", "bound_at", "namespace", "pod_name", "node_name")
    position = None
    while True:
        rows = list((_BINDINGS.older(qs, position) if position else qs)[:chunk])
        for pk, bound_at, namespace, pod_name, node_name in rows:
            record = dict.fromkeys(EXPORT_FIELDS)
            record.update(namespace=namespace, pod=pod_name, result=RESULT_SCHEDULED, node=node_name, bound_at=bound_at,
                          message=ATTEMPT_DELETED_MESSAGE)
            yield (bound_at, BINDING, pk), record
        if len(rows) < chunk:
            return
        position = (rows[-1][1], rows[-1][0], BINDING)


def now_stamp() -> str:
    return timezone.now().strftime("%Y%m%dT%H%M%SZ")
