from django.apps import AppConfig


class ComposeConfig(AppConfig):
    """The composition root's wiring, once every app is loaded: the Celery tasks are registered under the
    names the loop and the backends send them by (scheduler/dispatch.py), so no module below imports them."""

    name = "config"
    label = "schedboard_config"

    def ready(self) -> None:
        import scheduler.tasks  # noqa: F401 - registers scheduler.schedule, scheduler.bind, ...
