"""Dashboard pages of the scheduler configuration: the active version of each profile (/profiles/),
what-if over past attempts (/whatif/) and one attempt re-scored (/attempts/<id>/rescore/).

The views only read rows and forms; the re-scoring is scheduler/versions/whatif.py's, on plain data.
"""

from __future__ import annotations

from django import forms
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from dashboard.context_processors import can_open_admin
from scheduler.engine.config import ConfigError, SchedulerConfig
from scheduler.versions.services import config_with_draft_weights
from scheduler.models import RESULT_SCHEDULED, Attempt, SchedulerConfigVersion
from scheduler.versions.profiles import INITIAL_VERSION, active_config, config_for_version, profile_names
from scheduler.versions.whatif import DEFAULT_WINDOW, StoredAttempt, Target, rescore, what_if

MAX_WINDOW = 20_000
WINDOW_CHUNK = 500  # attempts fetched per round trip when a what-if streams its window
ADMIN_VERSIONS = "admin:scheduler_schedulerconfigversion_changelist"


# ---- /profiles/ -------------------------------------------------------------------------------

@require_GET
def profiles(request):
    number, config = active_config()
    staff = can_open_admin(request.user)
    row = SchedulerConfigVersion.objects.select_related("created_by").filter(number=number).first()
    return render(request, "dashboard/profiles.html", {
        "number": number,
        "version": row,
        "config": config,
        "profiles": [_profile_summary(p) for p in config.profiles],
        "recent": SchedulerConfigVersion.objects.select_related("created_by")[:10],
        "history_url": reverse(ADMIN_VERSIONS),
        # Links into the admin only for users it lets in (active staff), and edit links only with the permission.
        "staff": staff,
        "can_edit": staff and request.user.has_perm("scheduler.add_schedulerconfigversion"),
    })


def _profile_summary(p) -> dict:
    fit = p.args_for("NodeResourcesFit").scoring_strategy
    return {
        "name": p.scheduler_name,
        "percentage": p.percentage_of_nodes_to_score,
        "filters": p.filters,
        "scores": p.scores,
        "strategy": fit.type,
        "resources": [(r.name, r.weight) for r in fit.resources],
        "edit_url": reverse("admin:scheduler_schedulerconfigversion_profile", args=[p.scheduler_name]),
    }


# ---- the target: a version, or draft weights ---------------------------------------------------

def _version_choices() -> list[tuple[str, str]]:
    saved = [(str(n), f"version {n}" + (" (active)" if active else ""))
             for n, active in SchedulerConfigVersion.objects.values_list("number", "active")]
    initial = [(str(INITIAL_VERSION), "version 0 (initial)")]
    return saved + initial


class TargetForm(forms.Form):
    """Re-score with a saved version, or with draft weights for one profile (on top of a version).

    Draft weights are checked as the configuration loader checks a file's (int32, 0 -> 1, the total
    must not overflow); on a problem the form shows the loader's error with its field path.
    """

    version = forms.TypedChoiceField(coerce=int, label="configuration")
    use_draft = forms.BooleanField(required=False, label="with these draft weights instead")

    def __init__(self, data, *, plugins: list[tuple[str, int]], profile_name: str, **kwargs):
        super().__init__(data, **kwargs)
        self.fields["version"].choices = _version_choices()
        self.profile_name = profile_name
        self.plugin_names = [name for name, _ in plugins]
        self.draft_weights: dict[str, int] | None = None
        for name, weight in plugins:
            self.fields[f"w_{name}"] = forms.IntegerField(label=name, required=False, initial=weight,
                                                          widget=forms.NumberInput(attrs={"style": "width: 6em"}))

    def weight_fields(self):
        return [self[f"w_{n}"] for n in self.plugin_names]

    def clean(self):
        data = super().clean()
        if not data.get("use_draft") or "version" not in data or self.errors:
            return data
        draft = {n: data.get(f"w_{n}") for n in self.plugin_names}
        try:
            self.draft_weights = config_with_draft_weights(_config(data["version"]), self.profile_name, draft)
        except ConfigError as exc:
            for path, message in exc.problems:
                self.add_error(None, f"{path}: {message}" if path else message)
        return data

    def target(self, profile_name: str) -> Target:
        number = self.cleaned_data["version"]
        config = _config(number)
        if not self.cleaned_data["use_draft"]:
            return Target(f"version {number}", config)
        return Target(f"draft weights on version {number}", config, {profile_name: dict(self.draft_weights)})


def _config(number: int) -> SchedulerConfig:
    try:
        return config_for_version(number)
    except SchedulerConfigVersion.DoesNotExist:
        raise Http404(f"no configuration version {number}") from None


def _ran_with_reader():
    """ran_with(version, profile) for one request: each version's configuration read once."""
    configs: dict[int, SchedulerConfig | None] = {}

    def ran_with(version: int, profile_name: str):
        if version not in configs:
            try:
                configs[version] = config_for_version(version)
            except SchedulerConfigVersion.DoesNotExist:
                configs[version] = None
        config = configs[version]
        return config.profile(profile_name) if config else None
    return ran_with


def _draft_plugins(profile_name: str) -> list[tuple[str, int]]:
    profile = active_config()[1].profile(profile_name)
    return list(profile.scores) if profile else []


# ---- /whatif/ ---------------------------------------------------------------------------------

class WindowForm(forms.Form):
    profile = forms.ChoiceField(label="profile (schedulerName)", required=False)
    window = forms.IntegerField(label="last N scheduled attempts", min_value=1, max_value=MAX_WINDOW,
                                initial=DEFAULT_WINDOW, required=False)

    def __init__(self, data, **kwargs):
        super().__init__(data, **kwargs)
        # The active profiles first, then every other profile any saved version (or version 0) had:
        # an attempt's profile is always one of its version's, so this lists every profile with
        # attempts without reading the attempts.
        names = [p.scheduler_name for p in active_config()[1].profiles]
        self.fields["profile"].choices = [(n, n) for n in dict.fromkeys(names + sorted(profile_names()))]

    def clean_profile(self):
        return self.cleaned_data["profile"] or self.fields["profile"].choices[0][0]


@require_GET
def whatif(request):
    data = request.GET if "version" in request.GET else None
    window_form = WindowForm(data, initial={"window": DEFAULT_WINDOW})
    profile_name = request.GET.get("profile") or (window_form.fields["profile"].choices or [("", "")])[0][0]
    target_form = TargetForm(data, plugins=_draft_plugins(profile_name), profile_name=profile_name,
                             initial={"version": active_config()[0]})
    result = None
    if data is not None and window_form.is_valid() and target_form.is_valid():
        n = window_form.cleaned_data["window"] or DEFAULT_WINDOW
        profile_name = window_form.cleaned_data["profile"]
        # Streamed in chunks (a server-side cursor), only the fields re-scoring reads (of the trace,
        # its scores): memory stays bounded whatever SCHEDBOARD_TRACE stored, up to MAX_WINDOW rows.
        rows = (Attempt.objects.filter(result=RESULT_SCHEDULED, profile_name=profile_name)
                .order_by("-started_at", "-id")
                .values_list(*StoredAttempt.VALUES)[:n]
                .iterator(chunk_size=WINDOW_CHUNK))
        result = what_if((StoredAttempt.from_values(v) for v in rows), target_form.target(profile_name),
                         ran_with=_ran_with_reader(), keep_scores=False)
    return render(request, "dashboard/whatif.html", {
        "window_form": window_form, "target_form": target_form, "result": result, "max_window": MAX_WINDOW,
    })


# ---- /attempts/<id>/rescore/ -------------------------------------------------------------------

@require_GET
def attempt_rescore(request, attempt_id: int):
    row = get_object_or_404(Attempt, pk=attempt_id)
    attempt = StoredAttempt.from_row(row)
    ran_with = _ran_with_reader()(row.profile_version, row.profile_name)
    # Draft weights start from the weights the attempt ran with.
    plugins = list(ran_with.scores) if ran_with else _draft_plugins(row.profile_name)
    data = request.GET if "version" in request.GET else None
    form = TargetForm(data, plugins=plugins, profile_name=row.profile_name, initial={"version": active_config()[0]})
    result = target = None
    if data is not None and form.is_valid():
        target = form.target(row.profile_name)
        result = rescore(attempt, target, ran_with=ran_with)
    return render(request, "dashboard/rescore.html", {"attempt": row, "form": form, "result": result,
                                                      "target_label": target.label if target else ""})
