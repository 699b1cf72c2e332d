"""Django admin: the cluster's rows, and read-only audit views of attempts, bindings and events."""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.template.response import TemplateResponse
from django.utils.html import format_html

from .engine.config import ConfigError, SchedulerConfig, dump_config
from .models import Attempt, Binding, Event, Node, Pod, SchedulerConfigVersion
from .profile_services import config_version_restore


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


@admin.register(SchedulerConfigVersion)
class SchedulerConfigVersionAdmin(ReadOnly):
    """The saved versions of the scheduler configuration; an old one comes back only as a new version."""

    list_display = ("number", "active", "created_by", "created_at", "reason")
    list_filter = ("active",)
    search_fields = ("reason",)
    fields = ("number", "active", "created_at", "created_by", "reason", "configuration")
    readonly_fields = fields
    actions = ["restore_as_new_version"]

    @admin.display(description="KubeSchedulerConfiguration")
    def configuration(self, obj):
        return format_html("<pre>{}</pre>", dump_config(SchedulerConfig.from_dict(obj.config)))

    def has_restore_permission(self, request):
        return request.user.has_perm("scheduler.add_schedulerconfigversion")

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
            "yaml": dump_config(SchedulerConfig.from_dict(version.config)),
            "form": form,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
        })
