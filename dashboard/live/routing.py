"""The websocket side of the ASGI application: live frames on /ws/live/<view>/.

A websocket must come from one of ALLOWED_HOSTS (its Origin) and carry a logged-in session; the consumer
refuses anonymous users itself. config/asgi.py serves this; the consumers' tests drive it directly.
"""

from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import path

from .consumers import LiveConsumer

websocket_urlpatterns = [
    path("ws/live/<str:view>/", LiveConsumer.as_asgi()),
]


def websocket_application():
    """The websocket side; the origin check reads ALLOWED_HOSTS when this is built."""
    return AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
