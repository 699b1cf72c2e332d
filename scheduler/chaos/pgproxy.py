"""A loopback TCP proxy in front of Postgres that can play an outage: on SIGUSR1 it drops every
connection and refuses new ones (the port is closed) for a few seconds, then accepts again. That is
what the clients of a restarting Postgres see, without restarting a server other people share.

    python -m scheduler.chaos.pgproxy --upstream 127.0.0.1:5432 [--port 0] [--outage-seconds 5]

It prints `listening PORT` first, then one JSON line per outage edge:
`{"event": "down", "t": <unix time>, "dropped": N}` and `{"event": "up", "t": ...}`.
Standard library only: it must not share a process (or a GIL) with what it serves.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

CHUNK = 65536


class OutageProxy:
    def __init__(self, *, upstream: tuple[str, int], host: str = "127.0.0.1", port: int = 0,
                 outage_seconds: float = 5.0, out=sys.stdout):
        self.upstream = upstream
        self.host = host
        self.port = port
        self.outage_seconds = outage_seconds
        self.out = out
        self.server: asyncio.base_events.Server | None = None
        self.connections: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self.down = False

    def _say(self, **fields) -> None:
        self.out.write(json.dumps(fields) + "\n")
        self.out.flush()

    async def listen(self) -> int:
        self.server = await asyncio.start_server(self._serve, self.host, self.port, reuse_address=True)
        self.port = self.server.sockets[0].getsockname()[1]
        return self.port

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        if self.down:  # accepted just before the listener closed
            client_writer.transport.abort()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.transport.abort()
            return
        pair = (client_writer, upstream_writer)
        self.connections.add(pair)
        try:
            await asyncio.gather(self._pipe(client_reader, upstream_writer), self._pipe(upstream_reader, client_writer))
        finally:
            self.connections.discard(pair)
            for writer in pair:
                writer.transport.abort()

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                data = await reader.read(CHUNK)
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            # Either side gone: the other goes too (the Postgres protocol has no half-close).
            writer.transport.abort()

    async def outage(self, seconds: float | None = None) -> None:
        if self.down:
            return
        self.down = True
        if self.server is not None:
            self.server.close()  # new connections are refused from now on
        dropped = len(self.connections)
        for client_writer, upstream_writer in list(self.connections):
            client_writer.transport.abort()
            upstream_writer.transport.abort()
        self._say(event="down", t=time.time(), dropped=dropped)
        await asyncio.sleep(self.outage_seconds if seconds is None else seconds)
        while True:
            try:
                await self.listen()
                break
            except OSError:  # the port is still held by a closing socket: try again shortly
                await asyncio.sleep(0.05)
        self.down = False
        self._say(event="up", t=time.time())


class ProxyProcess:
    """The proxy as a child process: `port` to point clients at, `outage()` to start one, `events` seen."""

    def __init__(self, *, upstream: str, outage_seconds: float = 5.0):
        self.upstream = upstream
        self.outage_seconds = outage_seconds
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.events: list[dict] = []

    def start(self) -> ProxyProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "scheduler.chaos.pgproxy", "--upstream", self.upstream,
             "--outage-seconds", str(self.outage_seconds)],
            cwd=Path(__file__).resolve().parents[2], stdout=subprocess.PIPE, text=True, start_new_session=True)
        first = self.proc.stdout.readline().split()
        if len(first) != 2 or first[0] != "listening":
            self.stop()
            raise RuntimeError(f"the Postgres proxy did not start (said {first!r})")
        self.port = int(first[1])
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                pass

    def outage(self) -> None:
        os.kill(self.proc.pid, signal.SIGUSR1)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


async def _main(args) -> None:
    host, _, port = args.upstream.rpartition(":")
    proxy = OutageProxy(upstream=(host or "127.0.0.1", int(port)), port=args.port, outage_seconds=args.outage_seconds)
    listening = await proxy.listen()
    print(f"listening {listening}", flush=True)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    tasks: set[asyncio.Task] = set()

    def outage():
        task = loop.create_task(proxy.outage())
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    loop.add_signal_handler(signal.SIGUSR1, outage)
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="HOST:PORT of Postgres")
    parser.add_argument("--port", type=int, default=0, help="port to listen on, on 127.0.0.1 (0: any free one)")
    parser.add_argument("--outage-seconds", type=float, default=5.0)
    asyncio.run(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
