"""ASGI entry point (daphne, `runserver`): pages over HTTP, live frames over websockets
(dashboard/live/routing.py: the origin check and the session)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()  # before importing consumers: it sets Django up

from channels.routing import ProtocolTypeRouter  # noqa: E402

from dashboard.live.routing import websocket_application  # noqa: E402

application = ProtocolTypeRouter({
    "http": django_asgi_app,
    "websocket": websocket_application(),
})
