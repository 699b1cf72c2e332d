"""The Celery app: `celery -A config worker` runs the scheduling loop, `celery -A config beat` reconciliation."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("schedboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
