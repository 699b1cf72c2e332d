"""A replay started from the dashboard: its inputs, its progress while the Celery task runs, its report."""

from django.conf import settings
from django.db import models


class ReplayRun(models.Model):
    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    STATUS_CHOICES = [(s, s) for s in (QUEUED, RUNNING, DONE, FAILED)]

    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    trace_name = models.CharField(max_length=255)
    trace = models.TextField(help_text="the trace as given (JSON lines, or a kubectl dump)")
    configs = models.JSONField(help_text='[{"name": ..., "config": SchedulerConfig as stored, or null: recorded}]')
    seed = models.IntegerField(null=True, blank=True)
    status = models.CharField(max_length=8, choices=STATUS_CHOICES, default=QUEUED)
    progress = models.FloatField(default=0.0, help_text="0..1 over all configurations")
    report = models.JSONField(null=True, blank=True, help_text="the `replay --json` report")
    error = models.TextField(blank=True, default="")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"replay {self.pk} of {self.trace_name} ({self.status})"
