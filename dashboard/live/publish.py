"""Workers publish what each loop batch did, after it committed, without ever waiting for it.

`publish()` puts one small message on a bounded in-process buffer and returns; a daemon thread
merges whatever is buffered into one message and sends it to the channel layer group. When the
layer is slow, down, or nobody listens, the buffer fills and further messages are dropped and
counted: the loop never waits. Every message carries its source and sequence numbers, so a viewer
that missed one (a drop here, a full channel in the layer) sees the gap and asks for a snapshot.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import queue
import socket
import threading
import time

from . import hist
from .tally import Tally

log = logging.getLogger(__name__)

GROUP = "schedboard.live"
EVENT_TYPE = "live.events"  # the consumers' live_events handler
BUFFER = 256  # messages waiting for the sender thread; beyond this they are dropped
MERGE = 64  # messages merged into one send
SEND_TIMEOUT = 2.0
# At most one send this often: what comes meanwhile goes with the next, merged. A worker fed live makes a
# schedule and a bind message for every batch of a few pods, each its own group_send (~0.5 ms of CPU, as much
# as scheduling a pod); viewers see 4 frames a second (SCHEDBOARD_LIVE_FPS) whatever the rate of messages. A
# message after a quiet spell goes at once; under a steady stream one waits at most this long.
SEND_INTERVAL = 0.05

# Embedded mode's in-memory layer lives in the web server's event loop: a send from another loop
# waits for that loop's next tick (about a second), so it is handed to that loop instead.
_server_loop: asyncio.AbstractEventLoop | None = None


def register_server_loop(loop: asyncio.AbstractEventLoop) -> None:
    global _server_loop
    _server_loop = loop


class Publisher:
    def __init__(self, deliver=None, buffer: int = BUFFER, interval: float = SEND_INTERVAL):
        self._deliver = deliver  # deliver(message) for tests; default: the channel layer group
        self._buffer_size = buffer
        self._interval = interval
        self._lock = threading.Lock()
        self._pid: int | None = None
        self.dropped = 0
        self.sent = 0

    def _start(self) -> None:
        # Per process: a Celery prefork child must not inherit its parent's thread or buffer.
        self._pid = os.getpid()
        self.source = f"{socket.gethostname()}-{self._pid}-{os.urandom(3).hex()}"
        self._seq = itertools.count(1)
        self._queue: queue.Queue = queue.Queue(self._buffer_size)
        threading.Thread(target=self._run, name="live-publisher", daemon=True).start()

    def publish(self, message: dict) -> None:
        """Never blocks: buffer the message, or drop and count it."""
        with self._lock:
            if self._pid != os.getpid():
                self._start()
            seq = next(self._seq)
        message["seq0"] = message["seq1"] = seq
        try:
            self._queue.put_nowait(message)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        last_error = 0.0
        sent_at = -self._interval
        while True:
            batch = [self._queue.get()]
            hold = sent_at + self._interval - time.monotonic()
            if hold > 0:
                time.sleep(hold)  # the messages buffered meanwhile go with this one
            while len(batch) < MERGE:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            message = merged(batch, self.source)
            try:
                (self._deliver or (lambda m: _to_group(loop, m)))(message)
                self.sent += 1
            except Exception as exc:  # noqa: BLE001 - the loop must never notice the dashboard
                self.dropped += len(batch)
                if time.monotonic() - last_error > 60:
                    last_error = time.monotonic()
                    log.warning("live events not delivered (%d dropped so far): %r", self.dropped, exc)
            sent_at = time.monotonic()


def merged(batch: list[dict], source: str) -> dict:
    tally = Tally()
    for m in batch:
        tally.add(m)
    seqs = [m["seq0"] for m in batch]
    return {"type": EVENT_TYPE, "src": source, "seq0": seqs[0], "seq1": seqs[-1],
            # A hole in the middle (a message dropped from a full buffer) is a gap the viewer must see.
            "lost": seqs != list(range(seqs[0], seqs[0] + len(seqs))), **tally.wire()}


_layer = None


def _to_group(loop: asyncio.AbstractEventLoop, message: dict) -> None:
    from channels.layers import DEFAULT_CHANNEL_LAYER, InMemoryChannelLayer, channel_layers, get_channel_layer

    global _layer
    shared = get_channel_layer()
    if shared is None:
        return  # no layer configured: nobody can watch
    if isinstance(shared, InMemoryChannelLayer):
        target = _server_loop
        if target is None or target.is_closed():
            return  # no web server in this process has had a viewer yet
        asyncio.run_coroutine_threadsafe(shared.group_send(GROUP, message), target).result(SEND_TIMEOUT)
        return
    if _layer is None:
        _layer = channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)  # this thread's own, on this thread's loop
    loop.run_until_complete(asyncio.wait_for(_layer.group_send(GROUP, message), SEND_TIMEOUT))


_publisher = Publisher()


def get_publisher() -> Publisher:
    return _publisher


# ---- what the loop calls, once per batch, after commit ------------------------------------

def _summary(message: str) -> str:
    return message if len(message) <= 300 else message[:297] + "..."


def schedule_batch_done(attempts: list, popped: int) -> None:
    """A scheduling batch committed: its attempts (Attempt rows) out of `popped` pods."""
    if attempts or popped:
        _publisher.publish(schedule_message(attempts, popped))


def bind_batch_done(bound: list, refused: list, now) -> None:
    """A binding batch committed: bound = [(node, pod, seconds)], refused = [(node, pod, message, seconds)]."""
    if bound or refused:
        _publisher.publish(bind_message(bound, refused, now))


def pods_disrupted(pods: list[dict]) -> None:
    """Pods a controller took away (evicted, garbage-collected), after its commit: the overview marks them."""
    if pods:
        _publisher.publish(disrupted_message(pods))


def disrupted_message(pods: list[dict]) -> dict:
    t = time.time()
    return {"disrupted": len(pods),
            "disruptions": [[p["namespace"], p["name"], p.get("node") or "", p.get("reason") or "", t]
                            for p in pods[-15:]]}


def preemptions_done(attempts: int, victims: int) -> None:
    """A batch's preemption attempts (PostFilter runs) and the victims they chose, after its commit."""
    if attempts:
        _publisher.publish({"preemption_attempts": attempts, "preemption_victims": victims})


def nodes_changed(nodes: list[dict]) -> None:
    """Nodes gone NotReady, Unreachable, Ready again or deleted, after the commit: the overview marks them."""
    if nodes:
        t = time.time()
        _publisher.publish({"node_events": [[n["name"], n["state"], t] for n in nodes[-15:]]})


def schedule_message(attempts: list, popped: int) -> dict:
    now = time.time()
    failed = [a for a in attempts if a.result != "scheduled"]
    unschedulable = sum(a.result == "unschedulable" for a in failed)
    return {
        "attempts": len(attempts), "assumed": len(attempts) - len(failed), "failures": len(failed), "popped": popped,
        # Where failures go back, as the queue decides in the common case (the queue page reads the truth).
        "moves": {"unschedulable": unschedulable, "backoff": len(failed) - unschedulable},
        "lat": {"algorithm": hist.pairs(hist.observe({}, (a.algorithm_ms for a in attempts)))},
        "failed": [[a.namespace, a.pod_name, a.result, _summary(a.message), now] for a in failed[-15:]],
    }


def bind_message(bound: list, refused: list, now) -> dict:
    t = time.time()  # just after the commit: the bench measures bind -> frame from here
    e2e = []
    rows = []
    for node, pod, _seconds in bound:
        first = pod.queued_at or pod.created_at
        ms = round(max(0.0, (now - first).total_seconds()) * 1000.0, 3) if first else None
        e2e.append(ms)
        rows.append([pod.namespace, pod.name, node, ms, t])
    return {
        "bound": len(bound), "bind_failed": len(refused), "failures": len(refused),
        "moves": {"backoff": len(refused)},
        "lat": {"binding": hist.pairs(hist.observe({}, (s * 1000.0 for *_, s in bound))),
                "e2e": hist.pairs(hist.observe({}, e2e))},
        "bindings": rows[-15:],
        "failed": [[pod.namespace, pod.name, "bind_failed", _summary(error), t] for _item, pod, error, _s in refused[-15:]],
        "commits": [[t, len(bound)]] if bound else [],
    }
