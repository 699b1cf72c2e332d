"""Events as rows: one statement per batch, and a repeat counted as the event correlator counts it."""

import pytest
from django.utils import timezone

from scheduler.models import Event
from scheduler.state.events import EventSpec, events_record

pytestmark = pytest.mark.django_db(transaction=True)


def _event(name: str, message: str = "0/3 nodes are available") -> EventSpec:
    return EventSpec("Warning", "FailedScheduling", message, "Pod", "default", name, uid=f"uid-{name}",
                     action="Scheduling")


def test_a_repeat_in_the_same_batch_or_a_later_one_bumps_the_count_of_one_row():
    first = timezone.now()
    events_record([_event("a"), _event("b"), _event("a"), _event("a", "another message")], now=first)
    rows = {(e.involved_name, e.message): e for e in Event.objects.all()}
    assert {k: e.count for k, e in rows.items()} == {("a", "0/3 nodes are available"): 2, ("b", "0/3 nodes are available"): 1,
                                                      ("a", "another message"): 1}
    # In the order they came (the same timestamp: the ids order them).
    assert [(e.involved_name, e.message[:3]) for e in Event.objects.order_by("id")] == [("a", "0/3"), ("b", "0/3"),
                                                                                        ("a", "ano")]
    later = timezone.now()
    events_record([_event("a")], now=later)
    again = Event.objects.get(involved_name="a", message="0/3 nodes are available")
    assert (again.count, again.first_timestamp, again.last_timestamp) == (3, first, later)
