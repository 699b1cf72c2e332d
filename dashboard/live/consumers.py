"""The live websocket: one per open page. Logged-in users only (the origin check is in routing.py).

It joins the live group, folds every message into its Coalescer, and a ticker sends at most
SCHEDBOARD_LIVE_FPS frames a second, each made by the page's feed; a gap makes the next one a snapshot.
Every SCHEDBOARD_LIVE_SESSION_CHECK seconds it asks the session store whom its session logs in now, and
closes with 4401 once that is no longer its user (logged out, expired, deactivated, password changed).
"""

from __future__ import annotations

import asyncio
import logging

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from .coalesce import Coalescer
from .feeds import FEEDS
from .publish import GROUP, register_server_loop
from .sessions import session_user_pk

log = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_UNKNOWN_VIEW = 4404


class LiveConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            # Accepted only to be closed with 4401 at once: a browser sees the code only on an accepted socket
            # (a refused handshake is a bare 1006), and the page sends the user to log in on it. Nothing is sent.
            await self.accept()
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        feed = FEEDS.get(self.scope["url_route"]["kwargs"].get("view"))
        if feed is None:
            await self.close(code=CLOSE_UNKNOWN_VIEW)
            return
        register_server_loop(asyncio.get_running_loop())
        self.feed = feed()
        self.coalescer = Coalescer(settings.SCHEDBOARD_LIVE_FPS)
        self.frames = 0
        self._wake = asyncio.Event()
        # Join before the first snapshot is read, so nothing falls between the two.
        await self.channel_layer.group_add(GROUP, self.channel_name)
        await self.accept()
        self.ticker = asyncio.create_task(self._tick())
        self.session_watch = asyncio.create_task(self._watch_session(self.scope["session"].session_key, user.pk))

    async def disconnect(self, code):
        ticker = getattr(self, "ticker", None)
        if ticker is not None:
            ticker.cancel()
            self.session_watch.cancel()
            await self.channel_layer.group_discard(GROUP, self.channel_name)

    async def _watch_session(self, session_key, user_pk):
        period = settings.SCHEDBOARD_LIVE_SESSION_CHECK
        while True:
            await asyncio.sleep(period)
            try:
                now = await database_sync_to_async(session_user_pk)(session_key)
            except Exception:  # noqa: BLE001 - the store unreachable is no logout: ask again next period
                log.warning("live socket: could not re-check its session; trying again in %s s", period, exc_info=True)
                continue
            if now != user_pk:
                self.ticker.cancel()  # not one more frame
                await self.close(code=CLOSE_UNAUTHENTICATED)
                return

    async def live_events(self, message):
        self.coalescer.add(message)
        self._wake.set()

    async def _tick(self):
        co = self.coalescer
        try:
            while True:
                more = getattr(self.feed, "more", False)  # rows the feed still has to send in chunks
                if not (co.due() or (more and co.wait() <= 0)):
                    self._wake.clear()
                    # Sleep until a frame may go out and there is a reason to send one (or the idle beat).
                    timeout = co.wait() if (co.needs_snapshot or not co.tally.empty or more) else co.idle
                    try:
                        await asyncio.wait_for(self._wake.wait(), timeout=max(timeout, co.wait()))
                    except asyncio.TimeoutError:
                        pass
                    continue
                full, tally, dt = co.take()
                frame = await self.feed.frame(full, tally, dt)
                if frame is not None:
                    frame["n"] = self.frames
                    self.frames += 1
                    await self.send_json(frame)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - a broken frame closes this socket; the page reconnects
            log.exception("live frame failed; closing the socket")
            await self.close(code=1011)
