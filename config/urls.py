from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

# The processes that serve no pages install the admin without autodiscovery (config/settings.py): whatever
# serves these URLs registers the ModelAdmins here, before the first request (idempotent when already done).
admin.autodiscover()

urlpatterns = [
    path("admin/", admin.site.urls),
    # Log in, log out (POST) and change one's own password: Django's own views, our templates. Not
    # django.contrib.auth.urls wholesale: its password reset pages are open to anyone and mail a link built
    # from the request's Host; an administrator resets a password in the admin instead.
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    # /metrics, /healthz, /readyz, /livez: no login, as kube-scheduler serves them to Prometheus and kubelet.
    path("", include("dashboard.urls")),
]
