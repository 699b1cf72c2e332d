"""A pod deletion is stamped when its transaction deletes the row, before it commits: the trace places it
where the live worker's snapshots say it became visible (each attempt records the newest one it saw)."""

from datetime import datetime, timedelta, timezone

import pytest

from scheduler.models import RESULT_SCHEDULED, Attempt
from scheduler.replay.record import _deletions_seen

pytestmark = pytest.mark.django_db

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def at(ms: float) -> datetime:
    return START + timedelta(milliseconds=ms)


def attempt(name: str, snapshot_ms: float, seen: int) -> Attempt:
    return Attempt.objects.create(namespace="default", pod_name=name, number=1, started_at=at(snapshot_ms - 1),
                                  snapshot_at=at(snapshot_ms), snapshot_deleted_pod=seen, result=RESULT_SCHEDULED)


def test_a_deletion_a_later_snapshot_did_not_see_is_moved_to_just_after_it():
    attempt("a", 100, seen=4)  # stamped at 98, deletion 5 was not committed yet when this snapshot was read
    attempt("b", 200, seen=4)  # still not
    attempt("c", 300, seen=5)  # seen from here on
    when = _deletions_seen(START, at(1000))
    assert when(5, at(98)) == at(200) + timedelta(microseconds=1)


def test_a_deletion_the_next_snapshot_saw_keeps_its_stamp_and_one_before_0015_too():
    attempt("a", 100, seen=5)
    when = _deletions_seen(START, at(1000))
    assert when(5, at(98)) == at(98)
    assert when(4, at(50)) == at(50)
    Attempt.objects.update(snapshot_deleted_pod=None, snapshot_at=None)  # recorded before migration 0015
    assert _deletions_seen(START, at(1000))(6, at(98)) == at(98)


def test_a_deletion_an_earlier_stamped_snapshot_saw_is_moved_to_just_before_it():
    """The snapshot's instant is taken as its read begins; a deletion whose transaction stamped it later and
    committed before the read was seen: the replay must apply it before that snapshot's decisions."""
    attempt("a", 100, seen=4)
    attempt("b", 200, seen=5)  # saw deletion 5, stamped at 230 (its transaction held SQLite's lock meanwhile)
    attempt("c", 300, seen=5)
    when = _deletions_seen(START, at(1000))
    assert when(5, at(230)) == at(200) - timedelta(microseconds=1)
    assert when(6, at(250)) == at(300) + timedelta(microseconds=1)  # unseen by c, though stamped before it
