"""The bench's viewers (`manage.py bench --dashboard`): a daphne server on the bench's database and
Redis, and N headless websocket clients holding the overview socket with a logged-in session.

Each client counts its frames and bytes, and for every binding a frame reports (its batch's commit
time rides in the frame's "commits"), the time from that commit to the frame's arrival.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from .e2e import _proc_cpu

BASE_DIR = Path(__file__).resolve().parent.parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _session_cookie() -> str:
    """A logged-in session in the current database (the bench's own), as the login page would make."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(username="bench-viewer")
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


class _Client:
    def __init__(self):
        self.frames = 0
        self.bytes = 0
        self.latencies: list[tuple[float, int]] = []  # (ms from commit to this frame, bindings it reported)
        self.seen = 0
        self.first = threading.Event()


class Viewers:
    def __init__(self, n: int, env: dict, log_dir: str | None = None):
        self.n = n
        self.env = env
        self.log_dir = Path(log_dir or tempfile.mkdtemp(prefix="schedboard-viewers-"))
        self.clients = [_Client() for _ in range(n)]
        self.web: subprocess.Popen | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = self._stopped = 0.0
        self._cpu0 = self._cpu1 = self._clients_cpu0 = self._clients_cpu1 = None

    def start(self, timeout: float = 60.0) -> Viewers:
        port = _free_port()
        log = open(self.log_dir / "daphne.log", "ab")
        self.web = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                     "config.asgi:application"], cwd=BASE_DIR, env=self.env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.web.poll() is not None:
                    raise RuntimeError("daphne did not start:\n" + (self.log_dir / "daphne.log").read_text()[-3000:])
                time.sleep(0.1)
        cookie = _session_cookie()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_until_complete,
                                        args=(self._run(port, cookie),), name="bench-viewers", daemon=True)
        self._thread.start()
        for c in self.clients:  # every client holds its socket and has had its snapshot
            if not c.first.wait(max(0.1, deadline - time.monotonic())):
                raise RuntimeError("a viewer got no first frame:\n" + (self.log_dir / "daphne.log").read_text()[-3000:])
        return self

    def measure(self, settle: int = 0) -> None:
        """Start counting from now (the measured pods are about to be queued), once every client has
        been shown the `settle` bindings made before (the warm-up), so none of them is counted."""
        self.wait_seen(settle)
        for c in self.clients:
            c.frames = c.bytes = c.seen = 0
            c.latencies = []
        self._started = time.time()
        self._cpu0 = _proc_cpu(self.web.pid)
        self._clients_cpu0 = self._clients_cpu()

    async def _run(self, port: int, cookie: str) -> None:
        import aiohttp

        headers = {"Origin": f"http://127.0.0.1:{port}", "Cookie": f"sessionid={cookie}"}
        self._stop = asyncio.Event()
        async with aiohttp.ClientSession() as session:
            tasks = [asyncio.create_task(self._hold(session, f"ws://127.0.0.1:{port}/ws/live/overview/", headers, c))
                     for c in self.clients]
            await self._stop.wait()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _hold(self, session, url: str, headers: dict, c: _Client) -> None:
        async with session.ws_connect(url, headers=headers, max_msg_size=0) as ws:
            async for msg in ws:
                received = time.time()
                c.frames += 1
                c.bytes += len(msg.data)
                frame = json.loads(msg.data)
                for t, n in frame.get("commits", ()):
                    c.latencies.append(((received - t) * 1000.0, int(n)))
                    c.seen += int(n)
                c.first.set()

    def wait_seen(self, bindings: int, timeout: float = 30.0) -> None:
        """Until every client has had a frame showing each of `bindings` bindings (or the timeout)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and min(c.seen for c in self.clients) < bindings:
            time.sleep(0.02)
        self._stopped = time.time()
        self._cpu1 = _proc_cpu(self.web.pid)
        self._clients_cpu1 = self._clients_cpu()

    def _clients_cpu(self) -> float | None:
        """CPU seconds so far of the clients' thread (it shares the machine with daphne: its cost shows here)."""
        if self._loop is None or not self._loop.is_running():
            return None

        async def now():
            return time.thread_time()
        try:
            return asyncio.run_coroutine_threadsafe(now(), self._loop).result(5)
        except Exception:  # noqa: BLE001 - a figure, never a failure
            return None

    def stop(self) -> None:
        self._stopped = self._stopped or time.time()
        self._cpu1 = self._cpu1 if self._cpu1 is not None else _proc_cpu(self.web.pid) if self.web else None
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout=10)
        if self.web is not None and self.web.poll() is None:
            self.web.terminate()
            try:
                self.web.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.web.kill()

    def report(self) -> dict:
        self._stopped = self._stopped or time.time()
        seconds = max(1e-6, self._stopped - self._started)
        cpu = self._cpu0 is not None and self._cpu1 is not None
        pairs = [p for c in self.clients for p in c.latencies]
        lat = np.repeat(np.array([ms for ms, _ in pairs], dtype=float), [n for _, n in pairs]) if pairs else np.array([])
        pct = (lambda q: round(float(np.percentile(lat, q)), 1)) if len(lat) else (lambda q: None)
        return {
            "viewers": self.n,
            "frame_p50_ms": pct(50),
            "frame_p99_ms": pct(99),
            "frame_max_ms": round(float(lat.max()), 1) if len(lat) else None,
            "frame_bindings_seen": int(len(lat)),  # bindings x viewers: each viewer reports each binding once
            "frames_per_s_per_client": round(sum(c.frames for c in self.clients) / self.n / seconds, 2),
            "bytes_per_s_per_client": round(sum(c.bytes for c in self.clients) / self.n / seconds, 1),
            # daphne's CPU time over the measured span, as a share of one core: what the viewers cost the server.
            "daphne_cpu_s": round(self._cpu1 - self._cpu0, 2) if cpu else None,
            "daphne_cpu_cores": round((self._cpu1 - self._cpu0) / seconds, 3) if cpu else None,
            "viewer_clients_cpu_s": (round(self._clients_cpu1 - self._clients_cpu0, 2)
                                     if None not in (self._clients_cpu0, self._clients_cpu1) else None),
        }
