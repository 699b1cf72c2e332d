"""The live websocket: one per open page. Logged-in users only (the origin check is in routing.py).

It joins its page's View (fanout.py): the View folds the live events once for all the page's sockets in this
process and sends each the same frame, at most SCHEDBOARD_LIVE_FPS a second, made by the page's feed; a gap
or a socket joining makes the next one a snapshot.
Every SCHEDBOARD_LIVE_SESSION_CHECK seconds it asks the session store whom its session logs in now, and
closes with 4401 once that is no longer its user (logged out, expired, deactivated, password changed).
"""

from __future__ import annotations

import asyncio
import logging

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from . import fanout
from .feeds import FEEDS
from .publish import register_server_loop
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
        await self.accept()
        # Accepted first: the View may send its next frame (this socket's snapshot) as soon as it has joined.
        self.view = await fanout.join(self.scope["url_route"]["kwargs"]["view"], feed, self, self.channel_layer)
        self.session_watch = asyncio.create_task(self._watch_session(self.scope["session"].session_key, user.pk))

    async def disconnect(self, code):
        view = getattr(self, "view", None)
        if view is not None:
            self.session_watch.cancel()
            await view.leave(self)

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
                await self.view.leave(self)  # not one more frame
                await self.close(code=CLOSE_UNAUTHENTICATED)
                return
