from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"

    def ready(self) -> None:
        # The loop publishes through scheduler/telemetry after each batch commits; the live feed listens.
        from scheduler.telemetry import live

        from .live import publish

        live.subscribe(publish)
