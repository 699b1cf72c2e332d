"""The publisher: never blocks the loop, bounded, drops counted, gaps visible; delivers over channels-redis."""

import asyncio
import json
import threading
import time
from datetime import timedelta

import pytest
from channels.layers import DEFAULT_CHANNEL_LAYER, channel_layers
from django.utils import timezone

from scheduler.models import Attempt, Pod

from . import publish


def _wait_for(predicate):
    for _ in range(2000):
        if predicate():
            return
        threading.Event().wait(0.005)
    raise AssertionError("condition never held")


def test_publish_returns_while_the_layer_is_stuck_and_counts_what_it_drops():
    entered, release, delivered = threading.Event(), threading.Event(), []

    def stuck(message):
        entered.set()
        release.wait()
        delivered.append(message)

    p = publish.Publisher(deliver=stuck, buffer=10)
    p.publish({"bound": 1})
    entered.wait(10)  # the sender holds message 1 and is stuck in the layer
    for _ in range(100):
        p.publish({"bound": 1})  # returns at once: buffered (10) or dropped (90)
    assert p.dropped == 90
    release.set()
    _wait_for(lambda: len(delivered) == 2)
    first, second = delivered
    assert (first["seq0"], first["seq1"]) == (1, 1)
    # The ten buffered messages go as one, contiguous; the next one shows the gap to a viewer.
    assert (second["seq0"], second["seq1"], second["lost"], second["bound"]) == (2, 11, False, 10)
    p.publish({"bound": 1})
    _wait_for(lambda: len(delivered) == 3)
    assert delivered[2]["seq0"] == 102


def test_messages_that_come_soon_after_a_send_go_as_one_and_one_after_a_quiet_spell_goes_at_once():
    """A worker fed live publishes a schedule and a bind message per small batch: one send per interval."""
    delivered = []
    p = publish.Publisher(deliver=delivered.append, interval=2.0)
    started = time.monotonic()
    p.publish({"bound": 1})
    _wait_for(lambda: len(delivered) == 1)
    assert time.monotonic() - started < 1.0  # no send before it: not held
    for _ in range(5):
        p.publish({"bound": 1})
    _wait_for(lambda: len(delivered) == 2)
    assert time.monotonic() - started >= 2.0
    assert (delivered[1]["seq0"], delivered[1]["seq1"], delivered[1]["bound"], delivered[1]["lost"]) == (2, 6, 5, False)


def test_a_merged_message_with_a_hole_says_it_lost_something():
    batch = [{"seq0": 4, "seq1": 4, "bound": 1}, {"seq0": 6, "seq1": 6, "bound": 2}]
    merged = publish.merged(batch, "src")
    assert merged["lost"] is True and merged["bound"] == 3 and (merged["seq0"], merged["seq1"]) == (4, 6)


def test_a_failed_delivery_is_counted_and_the_sender_keeps_going():
    calls = []

    def flaky(message):
        calls.append(message)
        if len(calls) == 1:
            raise ConnectionError("redis down")

    p = publish.Publisher(deliver=flaky)
    p.publish({"bound": 1})
    _wait_for(lambda: len(calls) == 1)
    p.publish({"bound": 1})
    _wait_for(lambda: p.sent == 1)
    assert p.dropped == 1 and calls[1]["seq0"] == 2


def test_messages_are_bounded_whatever_the_batch():
    now = timezone.now()
    pods = [Pod(namespace="ns", name=f"p{i}", queued_at=now - timedelta(seconds=1)) for i in range(5000)]
    bound = [(f"n{i % 700}", pod, 0.002) for i, pod in enumerate(pods)]
    message = publish.bind_message(bound, [], now)
    assert message["bound"] == 5000 and len(message["bindings"]) == 15
    assert message["bindings"][-1][:3] == ["ns", "p4999", "n99"]
    assert len(json.dumps(message)) < 4096
    assert sum(n for _, n in message["lat"]["e2e"]) == 5000 and len(message["lat"]["e2e"]) <= 150


def test_a_schedule_batch_reports_failures_by_name_with_their_reason():
    attempts = [Attempt(namespace="ns", pod_name="big", result="unschedulable", algorithm_ms=0.3,
                        message="0/3 nodes are available: 3 Insufficient cpu."),
                Attempt(namespace="ns", pod_name="ok", result="scheduled", node_name="n1", algorithm_ms=0.2)]
    m = publish.schedule_message(attempts, 2)
    assert (m["attempts"], m["assumed"], m["failures"], m["popped"]) == (2, 1, 1, 2)
    assert m["failed"][0][:4] == ["ns", "big", "unschedulable", "0/3 nodes are available: 3 Insufficient cpu."]
    assert m["moves"] == {"unschedulable": 1, "backoff": 0}


@pytest.mark.asyncio
async def test_the_loop_s_messages_reach_the_live_group_over_channels_redis():
    layer = channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)
    channel = await layer.new_channel()
    await layer.group_add(publish.GROUP, channel)
    try:
        attempts = [Attempt(namespace="ns", pod_name="a", result="unschedulable", message="no")]
        await asyncio.to_thread(publish.schedule_batch_done, attempts, 1)
        message = await asyncio.wait_for(layer.receive(channel), 30)
    finally:
        await layer.group_discard(publish.GROUP, channel)
    assert message["type"] == publish.EVENT_TYPE and message["failures"] == 1
    assert message["failed"][0][:3] == ["ns", "a", "unschedulable"]
    assert message["src"] == publish.get_publisher().source
