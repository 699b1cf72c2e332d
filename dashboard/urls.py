from django.urls import path

from . import views
from .pages import overview

urlpatterns = [
    # Replaced by the live Overview when it lands; a plain page until then.
    path("", overview.overview, name="overview"),
    path("metrics", views.metrics, name="metrics"),
    path("healthz", views.healthz, name="healthz"),
    path("healthz/<str:check>", views.healthz),
    path("livez", views.livez, name="livez"),
    path("livez/<str:check>", views.livez),
    path("readyz", views.readyz, name="readyz"),
    path("readyz/<str:check>", views.readyz),
]
