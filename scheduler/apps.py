from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _bootstrap(sender, using="default", **kwargs) -> None:
    """After every migrate (and every test flush): the objects an API server always has."""
    from django.db import connections

    if "scheduler_clusterobject" not in connections[using].introspection.table_names():
        return  # migrated back to before the table existed
    from .cluster.objects import system_priority_classes_ensure

    system_priority_classes_ensure()


class SchedulerConfig(AppConfig):
    name = "scheduler"
    verbose_name = "Scheduler"

    def ready(self) -> None:
        post_migrate.connect(_bootstrap, sender=self, dispatch_uid="scheduler-bootstrap-system-priority-classes")
