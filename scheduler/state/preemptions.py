"""Preemptions under way (models.Preemption): recorded with the nomination that made them, asked about before a
nominated pod is attempted, ended by the preempt task, sent again when their task was lost.

As upstream's asynchronous preemption, a preemptor is held back from the scheduling cycle while its victims are
being evicted (DefaultPreemption's PreEnqueue on Evaluator.preempting), and is done waiting once the last
victim's deletion has started (IsPodRunningPreemption); after that, a victim still terminating on the nominated
node makes it "not eligible" to preempt again (the engine's PodEligibleToPreemptOthers). The hold lasts as long
as one of the victims is there, however long the task takes, and no lost task or Redis restart ends it early:
the row is in Postgres, and the reconciler sends a task that has not finished again (it is idempotent).
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ..models import Pod, Preemption

# A task not finished after this long is sent again (its worker died with it: Redis redelivers an acked-late
# task only after its visibility timeout, an hour). Sent twice, it does its work once.
PREEMPTION_RESEND_SECONDS = 30.0


def preemptions_record(jobs: list[dict], *, now=None) -> None:
    """The batch's preemptions (state/nominations.preemption_job), in the caller's transaction: a preemptor's
    earlier one, if any, is replaced (it can be there only if that one is over: its victims are gone)."""
    if not jobs:
        return
    now = now or timezone.now()
    Preemption.objects.bulk_create(
        [Preemption(preemptor_uid=j["preemptor"]["uid"], node=j["node"], attempt=j.get("attempt"), job=j,
                    created_at=now, sent_at=now) for j in jobs],
        update_conflicts=True, unique_fields=["preemptor_uid"], update_fields=["node", "attempt", "job", "created_at",
                                                                               "sent_at"])


def preemptions_under_way(nominated: dict[str, str]) -> set[str]:
    """Of these pods (uid -> the node each is nominated to), those whose preemption there is still under way:
    recorded, and one of its victims is still there and not yet being deleted. Two reads, for a whole batch."""
    if not nominated:
        return set()
    jobs = [(uid, job) for uid, node, job in Preemption.objects.filter(preemptor_uid__in=list(nominated))
            .values_list("preemptor_uid", "node", "job") if nominated.get(uid) == node]
    victims = {v["uid"] for _, job in jobs for v in job["victims"]}
    if not victims:
        return set()
    present = set(Pod.objects.filter(uid__in=victims, deleting=False).values_list("uid", flat=True))
    return {uid for uid, job in jobs if any(v["uid"] in present for v in job["victims"])}


def preemption_done(job: dict) -> None:
    """This preemption is over (its victims evicted, or nothing left to do): the preemptor may be attempted. Only
    that one: a later preemption of the same pod (another attempt) stands."""
    attempt = job.get("attempt")
    Preemption.objects.filter(Q(attempt=attempt) if attempt is not None else Q(attempt__isnull=True),
                              preemptor_uid=job["preemptor"]["uid"]).delete()


def preemptions_due(*, now=None, after: float = PREEMPTION_RESEND_SECONDS) -> list[dict]:
    """The jobs of preemptions whose task was sent longer than `after` seconds ago and has not ended them, marked
    sent now (so the next reconcile does not send them again at once)."""
    now = now or timezone.now()
    with transaction.atomic():
        # Rows a task is ending now are skipped: it is not lost.
        due = list(Preemption.objects.select_for_update(skip_locked=True)
                   .filter(sent_at__lt=now - timedelta(seconds=after)).values_list("pk", "job"))
        if due:
            Preemption.objects.filter(pk__in=[pk for pk, _ in due]).update(sent_at=now)
    return [job for _, job in due]
