from django.urls import path

from .consumers import LiveConsumer

websocket_urlpatterns = [
    path("ws/live/<str:view>/", LiveConsumer.as_asgi()),
]
