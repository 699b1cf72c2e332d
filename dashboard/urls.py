from django.urls import path

from . import views, views_profiles
from .live import views as live
from .pages import attempt, audit, domain, pending, pod, replays

urlpatterns = [
    # The live pages (a websocket each, see dashboard/live/).
    path("", live.overview, name="overview"),
    path("queue/", live.queue, name="queue"),
    path("nodes/", live.nodes, name="nodes"),
    path("nodes/domain/", domain.domain_detail, name="domain"),
    path("pods/<str:namespace>/<str:name>/", pod.pod_detail, name="pod"),
    path("attempts/<int:attempt_id>/", attempt.attempt_detail, name="attempt"),
    path("bindings/", audit.audit_list, name="audit"),
    path("pending/", pending.pending, name="pending"),
    path("profiles/", views_profiles.profiles, name="profiles"),
    path("whatif/", views_profiles.whatif, name="whatif"),
    path("attempts/<int:attempt_id>/rescore/", views_profiles.attempt_rescore, name="attempt_rescore"),
    path("replays/", replays.replays, name="replays"),
    path("replays/<int:run_id>/", replays.replay_detail, name="replay"),
    path("replays/<int:run_id>/progress", replays.replay_progress, name="replay_progress"),
    path("replays/<int:run_id>/pods/<str:namespace>/<str:name>/", replays.replay_pod, name="replay_pod"),
    path("metrics", views.metrics, name="metrics"),
    path("healthz", views.healthz, name="healthz"),
    path("healthz/<str:check>", views.healthz),
    path("livez", views.livez, name="livez"),
    path("livez/<str:check>", views.livez),
    path("readyz", views.readyz, name="readyz"),
    path("readyz/<str:check>", views.readyz),
]
