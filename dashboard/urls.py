from django.urls import path

from . import views
from .live import views as live

urlpatterns = [
    # The live pages (a websocket each, see dashboard/live/).
    path("", live.overview, name="overview"),
    path("queue/", live.queue, name="queue"),
    path("nodes/", live.nodes, name="nodes"),
    path("metrics", views.metrics, name="metrics"),
    path("healthz", views.healthz, name="healthz"),
    path("healthz/<str:check>", views.healthz),
    path("livez", views.livez, name="livez"),
    path("livez/<str:check>", views.livez),
    path("readyz", views.readyz, name="readyz"),
    path("readyz/<str:check>", views.readyz),
]
