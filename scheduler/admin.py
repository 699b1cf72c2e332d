"""Django admin: the cluster's rows, and read-only audit views of attempts, bindings and events."""

from django.contrib import admin

from .models import Attempt, Binding, Event, Node, Pod


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
