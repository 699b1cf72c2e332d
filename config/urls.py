from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    # /metrics, /healthz, /readyz, /livez: no login, as kube-scheduler serves them to Prometheus and kubelet.
    path("", include("dashboard.urls")),
]
