"""The audit's query: every attempt (and its binding) filtered, in (started_at, id) order, a page at
a time by keyset, or all of it streamed as CSV or JSON.

Keyset, not OFFSET: the next page starts strictly after the last row's (started_at, id), so a page
deep in millions of rows costs what the first one does (an index range scan on the matching
(…, started_at, id) index, see the Attempt indexes), and rows inserted meanwhile never shift a page.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime, timezone as dt_timezone

from django import forms
from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from scheduler.models import RESULT_CHOICES, Attempt

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


class Cursor:
    """A position in the (started_at, id) order, opaque in the URL: base64 of "<iso time>|<id>"."""

    @staticmethod
    def encode(started_at: datetime, pk: int) -> str:
        return base64.urlsafe_b64encode(f"{started_at.isoformat()}|{pk}".encode()).decode().rstrip("=")

    @staticmethod
    def decode(value: str) -> tuple[datetime, int]:
        try:
            raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
            when, pk = raw.split("|")
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
            return started_at, pk
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


_TABLE = Attempt._meta.db_table


def _position_params(position: tuple[datetime, int]) -> list:
    # Raw SQL gets no field conversion: store the time as the column does (SQLite keeps text, and
    # "…00" < "…00+00:00" would compare a row as older than itself).
    started_at, pk = position
    return [connection.ops.adapt_datetimefield_value(started_at), pk]


def _older_than(qs: QuerySet, position: tuple[datetime, int]) -> QuerySet:
    # A row comparison, so the planner reads one range of the (…, started_at, id) index.
    return qs.extra(where=[f'("{_TABLE}"."started_at", "{_TABLE}"."id") < (%s, %s)'], params=_position_params(position))


def _newer_than(qs: QuerySet, position: tuple[datetime, int]) -> QuerySet:
    return qs.extra(where=[f'("{_TABLE}"."started_at", "{_TABLE}"."id") > (%s, %s)'], params=_position_params(position))


@dataclass
class Page:
    rows: list[Attempt]
    older: str | None  # cursor of the next (older) page, if there is one
    newer: str | None  # cursor of the previous (newer) page, if there is one


def page(qs: QuerySet, *, after=None, before=None, limit: int = DEFAULT_LIMIT) -> Page:
    """One page in (started_at, id) descending order, with the cursors of its neighbours."""
    qs = qs.select_related("binding")
    if before is not None:
        # Going back: read the `limit` rows just newer than the cursor, ascending, then flip them.
        rows = list(_newer_than(qs, before).order_by("started_at", "id")[: limit + 1])
        more_newer = len(rows) > limit
        rows = rows[:limit][::-1]
        older = Cursor.encode(rows[-1].started_at, rows[-1].pk) if rows else None
        newer = Cursor.encode(rows[0].started_at, rows[0].pk) if rows and more_newer else None
        return Page(rows, older, newer)
    ordered = qs.order_by("-started_at", "-id")
    if after is not None:
        ordered = _older_than(ordered, after)
    rows = list(ordered[: limit + 1])
    more_older = len(rows) > limit
    rows = rows[:limit]
    older = Cursor.encode(rows[-1].started_at, rows[-1].pk) if rows and more_older else None
    newer = Cursor.encode(rows[0].started_at, rows[0].pk) if rows and after is not None else None
    return Page(rows, older, newer)


# Export column -> the attempt's field (or its binding's) it comes from.
EXPORT_COLUMNS = {
    "id": "id", "started_at": "started_at", "namespace": "namespace", "pod": "pod_name", "attempt": "number",
    "result": "result", "node": "node_name", "bound_at": "binding__bound_at", "profile": "profile_name",
    "profile_version": "profile_version", "message": "message", "queue_wait_ms": "queue_wait_ms",
    "algorithm_ms": "algorithm_ms", "attempt_ms": "attempt_ms", "binding_ms": "binding_ms", "e2e_ms": "e2e_ms",
    "worker": "worker",
}
EXPORT_FIELDS = list(EXPORT_COLUMNS)


def all_rows(qs: QuerySet, *, chunk: int = EXPORT_CHUNK):
    """Every selected attempt as an export record, newest first, a keyset chunk at a time (bounded
    memory, no cursor held open between chunks); plain values, not model instances, for speed."""
    qs = qs.order_by("-started_at", "-id").values_list(*EXPORT_COLUMNS.values())
    position = None
    while True:
        rows = list((_older_than(qs, position) if position else qs)[:chunk])
        for row in rows:
            record = dict(zip(EXPORT_FIELDS, row))
            for key in ("started_at", "bound_at"):
                if record[key] is not None:
                    record[key] = record[key].isoformat()
            yield record
        if len(rows) < chunk:
            return
        position = (rows[-1][1], rows[-1][0])  # (started_at, id)


def now_stamp() -> str:
    return timezone.now().strftime("%Y%m%dT%H%M%SZ")
