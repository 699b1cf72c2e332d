"""The audit page /bindings/: every attempt and binding, filtered, paged by keyset, exported as CSV or JSON."""

from __future__ import annotations

import csv
import json

from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from scheduler import retention

from .. import audit

EXPORTS = {"csv": "text/csv; charset=utf-8", "json": "application/json"}


class _Echo:
    """csv.writer's file: hands each formatted line back instead of storing it."""

    def write(self, value: str) -> str:
        return value


# OWASP's CSV injection rule: a spreadsheet runs a cell that starts with one of these as a formula
# (=HYPERLINK(...), @SUM(...), -2+3+cmd|...), so such a text cell gets a leading single quote, which
# spreadsheets read as "this is text". Numbers are written by us, never a formula, and stay numbers.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    """A value as a CSV cell a spreadsheet will not evaluate."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value


def _csv_lines(records, attempt_url):
    writer = csv.writer(_Echo())
    yield writer.writerow(audit.EXPORT_FIELDS + ["url"])
    for r in records:
        yield writer.writerow([csv_cell(r[f]) for f in audit.EXPORT_FIELDS] + [attempt_url(r["id"])])


def _json_lines(records, attempt_url):
    # One JSON array, written a row at a time.
    yield "["
    for i, r in enumerate(records):
        yield ("\n" if i == 0 else ",\n") + json.dumps(r | {"url": attempt_url(r["id"])})
    yield "\n]\n"


def _query(form, **change) -> str:
    """The current filter as a query string (the permalink), with some keys changed or dropped."""
    params = {k: form.data[k] for k in audit.AuditFilterForm.FILTERS if form.data.get(k)}
    params.update({k: v for k, v in change.items() if v is not None})
    return urlencode(params)


def kept_for(seconds: float | None) -> str:
    """A retention horizon as an operator says it: "7 days", "1 hour 30 minutes", "forever"."""
    if seconds is None:
        return "forever"
    left, parts = int(round(seconds)), []
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        n, left = divmod(left, size)
        if n:
            parts.append(f"{n} {unit}{'s' if n != 1 else ''}")
    return " ".join(parts[:2]) or f"{seconds:g} seconds"


def retention_rows() -> list[dict]:
    """How long each kind of row is kept and the oldest one still present, for the audit page."""
    return [{"name": r.name, "kept": kept_for(r.seconds), "setting": r.setting, "oldest": r.oldest}
            for r in retention.retained()]


@require_GET
def audit_list(request):
    form = audit.AuditFilterForm(request.GET)
    export = request.GET.get("format", "")
    if export and export not in EXPORTS:
        form.is_valid()
        form.add_error(None, f"Unknown export format {export!r}: use csv or json.")
    if not form.is_valid():
        if export:
            errors = "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())
            return HttpResponse(f"bad filter: {errors}\n", status=400, content_type="text/plain; charset=utf-8")
        return render(request, "dashboard/audit.html", {"form": form, "rows": [], "invalid": True}, status=400)
    data = form.cleaned_data
    qs = audit.filtered(data)
    bindings = audit.bindings_without_attempt(data)
    if export:
        # Every row's permalink, built from one reversed URL rather than reversing per row (a binding whose
        # attempt was deleted has none).
        prefix = request.build_absolute_uri(reverse("attempt", args=[0]))[: -len("0/")]
        lines = (_csv_lines if export == "csv" else _json_lines)(audit.all_rows(qs, bindings=bindings),
                                                                  lambda pk: f"{prefix}{pk}/" if pk is not None else "")
        response = StreamingHttpResponse(lines, content_type=EXPORTS[export])
        response["Content-Disposition"] = f'attachment; filename="schedboard-audit-{audit.now_stamp()}.{export}"'
        return response
    result = audit.page(qs, after=data["after"], before=data["before"], limit=data["limit"] or audit.DEFAULT_LIMIT,
                        bindings=bindings)
    return render(request, "dashboard/audit.html", {
        "form": form,
        "retention": retention_rows(),
        "rows": result.rows,
        "first_url": "?" + _query(form),
        "older_url": "?" + _query(form, after=result.older) if result.older else None,
        "newer_url": "?" + _query(form, before=result.newer) if result.newer else None,
        "csv_url": "?" + _query(form, format="csv"),
        "json_url": "?" + _query(form, format="json"),
        "paged": bool(data["after"] or data["before"]),
    })
