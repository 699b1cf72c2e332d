"""/replays/: start a replay of a trace under two configurations (a Celery task with a progress bar),
list past ones, and show A vs B with plots. The work is scheduler/replay/'s; these views read rows and forms."""

from __future__ import annotations

import io
from datetime import timedelta

from django import forms
from django.utils import timezone
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from scheduler.engine.config import ConfigError, load_config
from scheduler.models import Attempt, Pod, SchedulerConfigVersion
from scheduler.versions.profiles import INITIAL_VERSION, active_version_number, config_for_version
from scheduler.models import ReplayRun
from scheduler.replay.record import go_duration, record_from_database
from scheduler.replay.run import RECORDED
from scheduler.replay.services import replay_start
from scheduler.replay.trace import TraceError

MAX_TRACE_BYTES = 64 << 20
LIST_SIZE = 50
DIFFER_SHOWN = 500  # as many as the report details (scheduler.replay.run.DIFFER_DETAILED)
LIVE_ATTEMPTS = 20


def _config_choices() -> list[tuple[str, str]]:
    active = active_version_number()
    versions = [(f"v{n}", f"version {n}" + (" (active)" if n == active else ""))
                for n in SchedulerConfigVersion.objects.values_list("number", flat=True)[:50]]
    initial = [(f"v{INITIAL_VERSION}", "version 0 (initial)" + (" (active)" if active == INITIAL_VERSION else ""))]
    return [(RECORDED, "as recorded (the live run's, switches included)"), *versions, *initial]


class ReplayForm(forms.Form):
    trace = forms.FileField(label="Trace (from `manage.py record`, or a kubectl nodes+pods dump)", required=False)
    record_since = forms.CharField(label="or record it now from the database, going back (e.g. 1h, 30m)",
                                   required=False, max_length=32)
    config_a = forms.ChoiceField(label="Configuration A")
    file_a = forms.FileField(label="or a KubeSchedulerConfiguration file for A", required=False)
    config_b = forms.ChoiceField(label="Configuration B")
    file_b = forms.FileField(label="or a KubeSchedulerConfiguration file for B", required=False)
    seed = forms.IntegerField(label="Seed (empty: the live run's draws, as recorded)", required=False, min_value=0,
                              max_value=2**31 - 1)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        choices = _config_choices()
        for name in ("config_a", "config_b"):
            self.fields[name].choices = choices
        self.fields["config_b"].initial = f"v{active_version_number()}"

    def _config(self, choice_field: str, file_field: str):
        upload = self.cleaned_data.get(file_field)
        if upload:
            try:
                return upload.name, load_config(upload.read().decode("utf-8"), upload.name)
            except (ConfigError, UnicodeDecodeError) as exc:
                self.add_error(file_field, str(exc))
                return None
        choice = self.cleaned_data.get(choice_field)
        if choice == RECORDED:
            return RECORDED, None
        number = int(choice[1:])
        return f"version {number}", config_for_version(number)

    def clean(self):
        data = super().clean()
        trace, since = data.get("trace"), (data.get("record_since") or "").strip()
        if trace is None and not since:
            self.add_error("trace", "give a trace, or how far back to record one from the database")
        elif trace is None:
            try:
                seconds = go_duration(since)
            except ValueError as exc:
                self.add_error("record_since", str(exc))
            else:
                now = timezone.now()
                out = io.StringIO()
                record_from_database(start=now - timedelta(seconds=seconds), end=now).dump(out)
                data["trace_text"], data["trace_name"] = out.getvalue(), f"the database, last {since}"
        else:
            data["trace_name"] = trace.name
            if trace.size > MAX_TRACE_BYTES:
                self.add_error("trace", f"at most {MAX_TRACE_BYTES >> 20} MiB")
            else:
                try:
                    data["trace_text"] = trace.read().decode("utf-8")
                except UnicodeDecodeError:
                    self.add_error("trace", "not UTF-8 text")
        data["configs"] = [self._config("config_a", "file_a"), self._config("config_b", "file_b")]
        return data


@require_http_methods(["GET", "POST"])
def replays(request):
    # ?record=1h&config_a=v3 (the admin's "replay the last hour with this version") fills the form; POST starts it.
    initial = {k: request.GET[g] for k, g in (("record_since", "record"), ("config_a", "config_a")) if g in request.GET}
    form = ReplayForm(request.POST or None, request.FILES or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        configs = form.cleaned_data["configs"]
        if None not in configs:
            try:
                run = replay_start(trace_name=form.cleaned_data["trace_name"], trace_text=form.cleaned_data["trace_text"],
                                   configs=configs, seed=form.cleaned_data["seed"], user=request.user)
            except TraceError as exc:
                form.add_error("trace", str(exc))
            else:
                return redirect("replay", run_id=run.pk)
    runs = ReplayRun.objects.defer("trace", "report")[:LIST_SIZE]
    return render(request, "dashboard/replays.html", {"form": form, "runs": runs})


@require_GET
def replay_detail(request, run_id: int):
    run = get_object_or_404(ReplayRun, pk=run_id)
    report = run.report or {}
    configs = report.get("configs", [])
    for c in configs:  # "hostname 3, zone 1": the table stays narrow (the full keys are in the JSON)
        c["spread_short"] = ", ".join(f"{k.rsplit('/', 1)[-1]} {v}" for k, v in (c.get("spread_skew") or {}).items())
    differ = report.get("differ", [])
    rows = [{"key": key, "ns": key.split("/", 1)[0], "name": key.split("/", 1)[1],
             "nodes": [(n, c["placements"].get(key)) for n, c in enumerate(configs)]} for key in differ[:DIFFER_SHOWN]]
    # Only what the plots need goes to the page's script (placements can be large).
    plots = [{"config": c["config"], "nodes": c.get("nodes"), "timeline": c.get("timeline")} for c in configs]
    return render(request, "dashboard/replay.html", {
        "run": run, "report": report, "configs": configs, "differ_rows": rows, "differ_count": len(differ),
        "plots": plots,
    })


@require_GET
def replay_progress(request, run_id: int):
    run = get_object_or_404(ReplayRun.objects.only("status", "progress", "error"), pk=run_id)
    return JsonResponse({"status": run.status, "progress": run.progress, "error": run.error})


@require_GET
def replay_pod(request, run_id: int, namespace: str, name: str):
    """One pod whose placement differs: its replayed attempt under each configuration side by side, and
    the live run's attempts of that pod (when the trace came from this database), each linked."""
    run = get_object_or_404(ReplayRun.objects.defer("trace"), pk=run_id)
    key = f"{namespace}/{name}"
    configs = (run.report or {}).get("configs", [])
    attempts = [(n, c["config"], c.get("differ_attempts", {}).get(key)) for n, c in enumerate(configs)]
    if not any(a for _, _, a in attempts):
        raise Http404(f"replay {run_id} details no differing placement of {key}")
    live = list(Attempt.objects.filter(namespace=namespace, pod_name=name)
                .only("pk", "number", "result", "node_name", "started_at").order_by("-started_at")[:LIVE_ATTEMPTS])
    return render(request, "dashboard/replay_pod.html", {
        "run": run, "key": key, "namespace": namespace, "name": name, "attempts": attempts, "live": live,
        "pod_exists": Pod.objects.filter(namespace=namespace, name=name).exists()})
