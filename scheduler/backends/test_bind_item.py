import json

import pytest

from scheduler.backends.bind_item import BindItem, from_wire, to_wire
from scheduler.engine.queue import QueuedPodInfo


def test_a_bind_item_crosses_the_wire_as_json_and_comes_back_equal():
    item = BindItem(attempt=7, pod=3, node="node-a", info=QueuedPodInfo("default/web", priority=5, attempts=2, cycle=9),
                    cycle_seconds=0.004)
    assert from_wire(json.loads(json.dumps(to_wire([item])))) == [item]
    assert item.key == "default/web"


def test_the_wire_form_holds_every_field_of_the_queue_record_as_asdict_gives_it():
    from dataclasses import asdict

    info = QueuedPodInfo("default/web", priority=-3, timestamp=1.5, attempts=4, initial_attempt_timestamp=0.5, cycle=8,
                         backoff_expiry=9.25, unschedulable_since=2.0, message="0/3 nodes are available", queue="active",
                         popped_at=3.0, unschedulable_count=2, consecutive_errors=1)
    assert to_wire([BindItem(attempt=1, pod=2, node="n", info=info)])[0]["info"] == asdict(info)


def test_a_job_queued_as_the_untyped_dicts_were_still_reads():
    wire = {"attempt": 1, "pod": 2, "node": "n", "info": {"key": "ns/p", "cycle": 4}}  # no "cycle_s" then
    assert BindItem.from_wire(wire) == BindItem(attempt=1, pod=2, node="n", info=QueuedPodInfo("ns/p", cycle=4))


def test_a_bind_item_is_frozen():
    item = BindItem(attempt=1, pod=2, node="n", info=QueuedPodInfo("ns/p"))
    with pytest.raises(AttributeError):
        item.node = "other"
