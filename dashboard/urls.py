from django.urls import path

from . import views, views_profiles
from .pages import attempt, audit, overview, pod

urlpatterns = [
    # Replaced by the live Overview when it lands; a plain page until then.
    path("", overview.overview, name="overview"),
    path("pods/<str:namespace>/<str:name>/", pod.pod_detail, name="pod"),
    path("attempts/<int:attempt_id>/", attempt.attempt_detail, name="attempt"),
    path("bindings/", audit.audit_list, name="audit"),
    path("profiles/", views_profiles.profiles, name="profiles"),
    path("whatif/", views_profiles.whatif, name="whatif"),
    path("attempts/<int:attempt_id>/rescore/", views_profiles.attempt_rescore, name="attempt_rescore"),
    path("metrics", views.metrics, name="metrics"),
    path("healthz", views.healthz, name="healthz"),
    path("healthz/<str:check>", views.healthz),
    path("livez", views.livez, name="livez"),
    path("livez/<str:check>", views.livez),
    path("readyz", views.readyz, name="readyz"),
    path("readyz/<str:check>", views.readyz),
]
