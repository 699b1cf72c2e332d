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
from datetime import datetime

from django import forms
from django.db.models import QuerySet
from django.utils import timezone

from scheduler.models import RESULT_CHOICES, Attempt

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
EXPORT_CHUNK = 2000


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
            return started_at, int(pk)
        except (ValueError, binascii.Error, UnicodeDecodeError):
            raise forms.ValidationError("This page link is damaged; start again from the first page.") from None


class AuditFilterForm(forms.Form):
    """The filter, from the query string: a link carries it, so every view of the audit is a permalink."""

    namespace = forms.CharField(required=False, max_length=253)
    pod = forms.CharField(required=False, max_length=253, label="Pod name")
    q = forms.CharField(required=False, max_length=253, label="Pod name contains")
    node = forms.CharField(required=False, max_length=253)
    result = forms.ChoiceField(required=False, choices=[("", "any")] + RESULT_CHOICES)
    version = forms.IntegerField(required=False, min_value=0, label="Profile version")
    since = forms.DateTimeField(required=False, label="From (UTC)",
                                widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}))
    until = forms.DateTimeField(required=False, label="Until (UTC)",
                                widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}))
    limit = forms.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT, label="Rows per page")
    after = forms.CharField(required=False, widget=forms.HiddenInput)
    before = forms.CharField(required=False, widget=forms.HiddenInput)

    FILTERS = ("namespace", "pod", "q", "node", "result", "version", "since", "until", "limit")

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


def filtered(data: dict) -> QuerySet:
    """The attempts a cleaned filter selects, newest first."""
    qs = Attempt.objects.all()
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


def _older_than(qs: QuerySet, position: tuple[datetime, int]) -> QuerySet:
    # A row comparison, so the planner reads one range of the (…, started_at, id) index.
    return qs.extra(where=[f'("{_TABLE}"."started_at", "{_TABLE}"."id") < (%s, %s)'], params=list(position))


def _newer_than(qs: QuerySet, position: tuple[datetime, int]) -> QuerySet:
    return qs.extra(where=[f'("{_TABLE}"."started_at", "{_TABLE}"."id") > (%s, %s)'], params=list(position))


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


def all_rows(qs: QuerySet, *, chunk: int = EXPORT_CHUNK):
    """Every selected attempt, newest first, fetched a keyset chunk at a time (bounded memory, no long cursor)."""
    qs = qs.select_related("binding").order_by("-started_at", "-id")
    position = None
    while True:
        rows = list((_older_than(qs, position) if position else qs)[:chunk])
        yield from rows
        if len(rows) < chunk:
            return
        position = (rows[-1].started_at, rows[-1].pk)


EXPORT_FIELDS = ["id", "started_at", "namespace", "pod", "attempt", "result", "node", "bound_at", "profile",
                 "profile_version", "message", "queue_wait_ms", "algorithm_ms", "attempt_ms", "binding_ms", "e2e_ms",
                 "worker"]


def export_record(a: Attempt) -> dict:
    binding = getattr(a, "binding", None)
    return {
        "id": a.pk,
        "started_at": a.started_at.isoformat(),
        "namespace": a.namespace,
        "pod": a.pod_name,
        "attempt": a.number,
        "result": a.result,
        "node": a.node_name,
        "bound_at": binding.bound_at.isoformat() if binding else None,
        "profile": a.profile_name,
        "profile_version": a.profile_version,
        "message": a.message,
        "queue_wait_ms": a.queue_wait_ms,
        "algorithm_ms": a.algorithm_ms,
        "attempt_ms": a.attempt_ms,
        "binding_ms": a.binding_ms,
        "e2e_ms": a.e2e_ms,
        "worker": a.worker,
    }


def now_stamp() -> str:
    return timezone.now().strftime("%Y%m%dT%H%M%SZ")
