"""ASGI entry point (daphne, `runserver`): pages over HTTP, live frames over websockets.

A websocket must come from one of ALLOWED_HOSTS (its Origin) and carry a logged-in session;
the consumer refuses anonymous users itself.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()  # before importing consumers: it sets Django up

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from dashboard.live.routing import websocket_urlpatterns  # noqa: E402


def websocket_application():
    """The websocket side; the origin check reads ALLOWED_HOSTS when this is built."""
    return AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))


application = ProtocolTypeRouter({
    "http": django_asgi_app,
    "websocket": websocket_application(),
})
