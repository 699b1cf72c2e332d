from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    # Login, logout (POST) and password change: Django's own views, our templates.
    path("accounts/", include("django.contrib.auth.urls")),
    # /metrics, /healthz, /readyz, /livez: no login, as kube-scheduler serves them to Prometheus and kubelet.
    path("", include("dashboard.urls")),
]
