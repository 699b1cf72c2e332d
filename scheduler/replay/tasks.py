"""The replay's Celery task: thin, the work is services.replay_execute."""

from celery import shared_task


@shared_task(name="scheduler.replay", ignore_result=True)
def replay_run(run_id: int) -> None:
    from .services import replay_execute

    replay_execute(run_id=run_id)
