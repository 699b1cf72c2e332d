"""The Redis list through which worker processes hand jobs (bindings, reports) to the leader's committer."""

from django.conf import settings


def jobs_key() -> str:
    return f"{settings.SCHEDBOARD_QUEUE_PREFIX}:kube:jobs"
