"""Django admin: the cluster's rows, read-only audit views of attempts, bindings and events, and the
scheduler configuration's versions with their edit, import, export, diff and restore pages."""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from .engine.config import ConfigError, config_from_dict, dump_config
from .models import Attempt, Binding, Event, Node, Pod, SchedulerConfigVersion
from .versions.forms import ProfilePage
from .versions.profiles import config_for_version
from .versions.services import (config_active, config_export, config_profile_save, config_version_diff,
                               config_version_import, config_version_restore)


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Node)
class NodeAdmin(ReadOnly):
    list_display = ("name", "unschedulable", "req_cpu", "alloc_cpu", "req_memory", "alloc_memory", "req_pods", "alloc_pods")
    search_fields = ("name",)
    list_filter = ("unschedulable",)


@admin.register(Pod)
class PodAdmin(ReadOnly):
    list_display = ("namespace", "name", "phase", "node_name", "assumed_node", "priority", "attempts", "scheduled_reason")
    list_filter = ("phase", "namespace", "scheduled_reason")
    search_fields = ("name", "namespace", "node_name")


@admin.register(Attempt)
class AttemptAdmin(ReadOnly):
    list_display = ("started_at", "namespace", "pod_name", "number", "result", "node_name", "algorithm_ms", "e2e_ms", "message")
    list_filter = ("result", "profile_name", "profile_version")
    search_fields = ("pod_name", "namespace", "node_name")
    date_hierarchy = "started_at"


@admin.register(Binding)
class BindingAdmin(ReadOnly):
    list_display = ("bound_at", "namespace", "pod_name", "node_name", "attempt")
    search_fields = ("pod_name", "namespace", "node_name")
    date_hierarchy = "bound_at"


@admin.register(Event)
class EventAdmin(ReadOnly):
    list_display = ("last_timestamp", "type", "reason", "involved_kind", "involved_namespace", "involved_name", "count", "message")
    list_filter = ("type", "reason")
    search_fields = ("involved_name", "message")


class RestoreForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}), help_text="Why this version comes back.")


class ImportForm(forms.Form):
    file = forms.FileField(help_text="A kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration (YAML or JSON).")
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2, "cols": 80}),
                             help_text="Why the configuration changes; kept with the new version.")


def _yaml_download(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@admin.register(SchedulerConfigVersion)
class SchedulerConfigVersionAdmin(ReadOnly):
    """The saved versions of the scheduler configuration. Versions never change: editing a profile,
    importing a file or restoring an old version each save a new, active version with a reason."""

    list_display = ("number", "active", "created_by", "created_at", "reason", "profiles")
    list_filter = ("active",)
    search_fields = ("reason",)
    # The diff is not a field: the change page shows it below, against a version the user picks.
    fields = ("number", "active", "created_at", "created_by", "reason", "what_if", "configuration")
    readonly_fields = fields
    actions = ["restore_as_new_version", "export_version"]

    # ---- read-only views of a version

    @admin.display(description="KubeSchedulerConfiguration")
    def configuration(self, obj):
        return format_html("<pre>{}</pre>", dump_config(config_from_dict(obj.config)))

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = dict(extra_context or {})
        version = self.get_object(request, object_id)
        if version is not None and self.has_view_permission(request, version):
            extra_context.update(self._diff_context(version, request.GET.get("compare", "")))
        return super().change_view(request, object_id, form_url, extra_context)

    @staticmethod
    def _diff_context(version: SchedulerConfigVersion, compare: str) -> dict:
        """The diff of `version` against the version picked in ?compare= (by default the previous one)."""
        numbers = [0] + list(SchedulerConfigVersion.objects.order_by("number").values_list("number", flat=True))
        choices = [n for n in numbers if n != version.number]
        context = {"diff_choices": choices, "diff_against": version.number - 1, "diff_error": "", "diff_html": ""}
        if compare.strip():
            try:
                context["diff_against"] = int(compare)
            except ValueError:
                context["diff_error"] = f"{compare!r} is not a version number"
                return context
        against = context["diff_against"]
        try:
            diff = config_version_diff(version, against)
        except SchedulerConfigVersion.DoesNotExist:
            context["diff_error"] = f"no version {against}"
            return context
        if not diff:
            context["diff_html"] = format_html("<p>none: version {} has the same configuration as version {}</p>",
                                               version.number, against)
            return context
        lines = format_html_join("", '<span class="{}">{}</span>\n', (
            (_DIFF_CLASS.get(line[:1], "") if not line.startswith(("+++", "---")) else "diff-file", line.rstrip("\n"))
            for line in diff.splitlines(keepends=True)))
        context["diff_html"] = format_html('<pre class="config-diff">{}</pre>', lines)
        return context

    @admin.display(description="What-if")
    def what_if(self, obj):
        return format_html('<a href="/whatif/?version={}">re-score the latest attempts with version {}</a>',
                           obj.number, obj.number)

    @admin.display(description="Profiles")
    def profiles(self, obj):
        return ", ".join(p["scheduler_name"] for p in obj.config.get("profiles", []))

    # ---- permissions: editing = adding a version

    def has_restore_permission(self, request):
        return request.user.has_perm("scheduler.add_schedulerconfigversion")

    has_edit_permission = has_restore_permission

    def has_export_permission(self, request):
        return self.has_view_permission(request)

    # ---- URLs of the edit, import and export pages

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("profiles/", wrap(self.profiles_view), name="scheduler_schedulerconfigversion_profiles"),
            path("profiles/add/", wrap(self.profile_edit_view), name="scheduler_schedulerconfigversion_profile_add"),
            path("profiles/<str:name>/", wrap(self.profile_edit_view), name="scheduler_schedulerconfigversion_profile"),
            path("import/", wrap(self.import_view), name="scheduler_schedulerconfigversion_import"),
            path("export/", wrap(self.export_view), name="scheduler_schedulerconfigversion_export"),
        ] + super().get_urls()

    def _context(self, request, title, **extra):
        return {**self.admin_site.each_context(request), "title": title, "opts": self.model._meta, **extra}

    def profiles_view(self, request):
        if not self.has_view_permission(request):
            raise PermissionDenied
        number, config = config_active()
        rows = [{"name": p.scheduler_name, "filters": p.filters, "scores": p.scores,
                 "strategy": p.args_for("NodeResourcesFit").scoring_strategy.type} for p in config.profiles]
        return TemplateResponse(request, "admin/scheduler/schedulerconfigversion/profiles.html", self._context(
            request, f"Profiles of version {number} (active)", number=number, config=config, rows=rows,
            can_edit=self.has_edit_permission(request)))

    def profile_edit_view(self, request, name=None):
        if not self.has_edit_permission(request):
            raise PermissionDenied
        problems = []
        if request.method == "POST":
            page = ProfilePage(request.POST)
            if page.is_valid():
                try:
                    version = config_profile_save(
                        based_on=page.form.cleaned_data["based_on"], scheduler_name=name, profile=page.profile(),
                        top_level=page.top_level(), reason=page.form.cleaned_data["reason"], user=request.user)
                except ConfigError as exc:
                    index = _profile_index(page.form.cleaned_data["based_on"], name)
                    problems = [{"text": f"{p}: {m}" if p else m, "where": page.locate(p, index)} for p, m in exc.problems]
                else:
                    self.message_user(request, f"Version {version.number} saved and active; workers run it from "
                                               "their next batch.", messages.SUCCESS)
                    return HttpResponseRedirect(reverse("admin:scheduler_schedulerconfigversion_change",
                                                        args=[version.pk]))
        else:
            number, config = config_active()
            profile = None
            if name is not None:
                profile = config.profile(name)
                if profile is None:
                    raise Http404(f"no profile {name!r} in the active version")
            page = ProfilePage(config=config, profile=profile, based_on=number)
        title = f"Profile {name}" if name else "Add a profile"
        return TemplateResponse(request, "admin/scheduler/schedulerconfigversion/profile_edit.html", self._context(
            request, title, page=page, problems=problems, name=name,
            based_on=page.form["based_on"].value()))

    def import_view(self, request):
        if not self.has_edit_permission(request):
            raise PermissionDenied
        problems, warnings = [], []
        form = ImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                text = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                problems = [f"{upload.name}: not UTF-8 text"]
            else:
                try:
                    version, warnings = config_version_import(text=text, filename=upload.name,
                                                              reason=form.cleaned_data["reason"], user=request.user)
                except ConfigError as exc:
                    problems = str(exc).splitlines()
                else:
                    for warning in warnings:
                        self.message_user(request, f"Warning: {upload.name}: {warning}", messages.WARNING)
                    self.message_user(request, f"{upload.name} saved as version {version.number}, now active.",
                                      messages.SUCCESS)
                    return HttpResponseRedirect(reverse("admin:scheduler_schedulerconfigversion_change",
                                                        args=[version.pk]))
        return TemplateResponse(request, "admin/scheduler/schedulerconfigversion/import.html", self._context(
            request, "Import a KubeSchedulerConfiguration", form=form, problems=problems))

    def export_view(self, request):
        if not self.has_view_permission(request):
            raise PermissionDenied
        number, _ = config_active()
        return _yaml_download(config_export(), f"scheduler-config-v{number}.yaml")

    # ---- actions

    @admin.action(description="Export as a KubeSchedulerConfiguration file", permissions=["export"])
    def export_version(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one version to export.", messages.WARNING)
            return None
        version = queryset.get()
        return _yaml_download(dump_config(config_from_dict(version.config)),
                              f"scheduler-config-v{version.number}.yaml")

    @admin.action(description="Restore as a new version", permissions=["restore"])
    def restore_as_new_version(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one version to restore.", messages.WARNING)
            return None
        version = queryset.get()
        form = RestoreForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            try:
                new = config_version_restore(number=version.number, reason=form.cleaned_data["reason"], user=request.user)
            except ConfigError as e:
                self.message_user(request, str(e), messages.ERROR)
                return None
            self.message_user(request, f"Version {version.number} restored as version {new.number}, now active.")
            return None
        return TemplateResponse(request, "admin/scheduler/schedulerconfigversion/restore.html", {
            **self.admin_site.each_context(request),
            "title": f"Restore version {version.number}",
            "opts": self.model._meta,
            "version": version,
            "yaml": dump_config(config_from_dict(version.config)),
            "form": form,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
        })


_DIFF_CLASS = {"+": "diff-add", "-": "diff-del", "@": "diff-hunk"}


def _profile_index(based_on: int, name: str | None) -> int:
    """Where the edited profile sits in the saved file (a new one goes last), to read problem paths."""
    try:
        names = [p.scheduler_name for p in config_for_version(based_on).profiles]
    except SchedulerConfigVersion.DoesNotExist:
        return -1
    return names.index(name) if name in names else len(names)
