"""One frame per view, not per viewer: every socket on a page shares its View in this process.

A View holds the page's one Coalescer and one feed; its ticker folds the events once, builds one frame and
encodes it once, and hands the same text to every socket on it (each with its own frame number spliced in).
Fifty viewers of the overview cost daphne one tally, one frame and one json.dumps a tick, not fifty.
A page whose frames depend on the viewer (the nodes page: which rows this socket has been sent) says
`shared = False` and gets a View of its own per socket; a page with server-side parameters would key its
views by them (`view_key`).

The Hub is this process's one member of the live group: it receives each event once and gives it to
every View. A socket joining a View makes the View's next frame a snapshot, for everyone on it (a full
frame only replaces what a page shows with the truth), so a newcomer never starts from a delta.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref

from django.conf import settings

from .coalesce import Coalescer
from .publish import EVENT_TYPE, GROUP

log = logging.getLogger(__name__)

GROUP_REFRESH_SECONDS = 3600.0  # the layer forgets a group member after a day (group_expiry): rejoin well before
RETRY_SECONDS = 1.0  # after the layer failed a receive


class View:
    """The frames of one page for all its sockets in this process."""

    def __init__(self, key, feed, registry: Registry):
        self.key = key
        self.feed = feed()
        self.coalescer = Coalescer(settings.SCHEDBOARD_LIVE_FPS)
        self.sockets: dict[object, int] = {}  # consumer -> frames sent to it (the frame's "n")
        self._registry = registry
        self._wake = asyncio.Event()
        self.ticker = asyncio.create_task(self._tick())

    def join(self, consumer) -> None:
        self.sockets[consumer] = 0
        self.coalescer.needs_snapshot = True  # its first frame must be a snapshot: so is everyone's next one
        self._wake.set()

    async def leave(self, consumer) -> None:
        if self.sockets.pop(consumer, None) is None:
            return  # already let go (its view failed)
        if not self.sockets:
            self.ticker.cancel()
            await self._registry.drop(self)

    def add(self, message: dict) -> None:
        self.coalescer.add(message)
        self._wake.set()

    def lost(self) -> None:
        """Events may have been missed (the layer failed): the next frame is a snapshot."""
        self.coalescer.needs_snapshot = True
        self._wake.set()

    async def _tick(self):
        co = self.coalescer
        try:
            while True:
                more = getattr(self.feed, "more", False)  # rows the feed still has to send in chunks
                if not (co.due() or (more and co.wait() <= 0)):
                    self._wake.clear()
                    # Sleep until a frame may go out and there is a reason to send one (or the idle beat): data
                    # that arrives after the interval is over wakes this at once, so its frame waits for nothing.
                    timeout = co.wait() if (co.needs_snapshot or not co.tally.empty or more) else co.idle
                    try:
                        await asyncio.wait_for(self._wake.wait(), timeout=max(timeout, co.wait()))
                    except asyncio.TimeoutError:
                        pass
                    continue
                # The sockets this frame is for, taken with the tally: one joining while it is built waits for
                # the next frame, which its joining made a snapshot.
                recipients = list(self.sockets)
                full, tally, dt = co.take()
                frame = await self.feed.frame(full, tally, dt)
                if frame is not None:
                    await self._send(json.dumps(frame), recipients)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - a broken frame closes this view's sockets; the pages reconnect
            log.exception("live frame failed; closing the view's sockets")
            await self._registry.drop(self)
            sockets = list(self.sockets)
            self.sockets.clear()
            for consumer in sockets:
                await consumer.close(code=1011)

    async def _send(self, text: str, recipients: list) -> None:
        head = text[:-1]  # the encoded frame without its closing brace: each socket's "n" goes last, as before
        for consumer in recipients:
            n = self.sockets.get(consumer)
            if n is None:
                continue  # left while this frame was built
            self.sockets[consumer] = n + 1
            try:
                await consumer.send(text_data=f'{head},"n":{n}}}')
            except Exception:  # noqa: BLE001 - one socket going away must not keep the frame from the others
                log.debug("live frame not sent to a closing socket", exc_info=True)


class Hub:
    """This process's one member of the live group: each event received once, for every View."""

    def __init__(self, layer):
        self.layer = layer
        self.views: set[View] = set()
        self.channel: str | None = None
        self._tasks: list[asyncio.Task] = []

    async def start(self) -> None:
        # Joined before any socket's first snapshot is read, so nothing falls between the two.
        self.channel = await self.layer.new_channel()
        await self.layer.group_add(GROUP, self.channel)
        self._tasks = [asyncio.create_task(self._receive()), asyncio.create_task(self._rejoin())]

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        # Waited for: a receive cancelled but not yet unwound still counts as the layer's receiver on this loop.
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.channel is not None:
            await self.layer.group_discard(GROUP, self.channel)

    async def _receive(self) -> None:
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the layer down is no reason to close the pages: try again
                log.warning("live events: the channel layer failed a receive; retrying in %s s", RETRY_SECONDS,
                            exc_info=True)
                for view in list(self.views):
                    view.lost()
                await asyncio.sleep(RETRY_SECONDS)
                continue
            if message.get("type") == EVENT_TYPE:
                for view in list(self.views):
                    view.add(message)

    async def _rejoin(self) -> None:
        while True:
            await asyncio.sleep(GROUP_REFRESH_SECONDS)
            try:
                await self.layer.group_add(GROUP, self.channel)
            except Exception:  # noqa: BLE001 - tried again next period; until the group expires nothing is lost
                log.warning("live events: could not renew the group membership", exc_info=True)


class Registry:
    """The views and the hub of one event loop (the server's; each test has its own)."""

    def __init__(self):
        self.views: dict[object, View] = {}
        self.hub: Hub | None = None
        self.lock = asyncio.Lock()  # a hub starting or stopping is not seen half done

    async def drop(self, view: View) -> None:
        """Forget a view with no sockets left; the last one gone, the process leaves the group."""
        if self.views.get(view.key) is view:
            del self.views[view.key]
        async with self.lock:
            if self.hub is not None:
                self.hub.views.discard(view)
                if not self.hub.views:
                    hub, self.hub = self.hub, None
                    await hub.stop()


_registries: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def view_key(name: str, feed, consumer) -> object:
    """Sockets with the same key share a View: the page's name, unless its frames depend on the socket."""
    return name if getattr(feed, "shared", True) else (name, id(consumer))


async def join(name: str, feed, consumer, layer) -> View:
    """The View `consumer` gets its frames from from now on (made, and the hub started, if need be)."""
    loop = asyncio.get_running_loop()
    registry = _registries.get(loop)
    if registry is None:
        registry = _registries[loop] = Registry()
    async with registry.lock:
        if registry.hub is None:
            hub = Hub(layer)
            await hub.start()
            registry.hub = hub
        key = view_key(name, feed, consumer)
        view = registry.views.get(key)
        if view is None:
            view = registry.views[key] = View(key, feed, registry)
            registry.hub.views.add(view)
        view.join(consumer)
        return view
