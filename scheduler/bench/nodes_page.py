"""The nodes page at scale: `manage.py bench --nodes-page [--nodes 50000]` loads SchedulingBasic's nodes (a tenth
as many pods placed) into a scratch database (`<name>_nodespage`, dropped after), serves the dashboard with
daphne, opens /nodes/ in headless Chromium (Playwright, logged in) and reports what a user waits for: the first
node row painted, every row arrived (the page's own count says N nodes), the websocket frames and bytes that
took; then, with the page open, 1 % of the nodes' usage changed in Postgres: how long until the page's frames
carried every change, and in how many bytes. And the server's side: the daphne process's CPU while the page
stays open with nothing changing (its feed reads every node's usage every 0.5 s, shared by all open pages)."""

from __future__ import annotations

import json
import os
import time

from django.core.management import call_command
from django.db import connection

from .e2e import UseDatabase, admin_execute, bench_database_url, load_cluster

ROW_SELECTOR = "#vbody .vrow"
IDLE_SECONDS = 5


def _frames_listener(frames: list):
    def on_socket(ws):
        def on_frame(payload):
            data = payload if isinstance(payload, str) else payload.decode()
            try:
                frame = json.loads(data)
            except ValueError:
                return
            frames.append((time.perf_counter(), len(data), frame))
        ws.on("framereceived", on_frame)
    return on_socket


def _rows_in(frames) -> int:
    return sum(len(f.get("nodes") or ()) for _, _, f in frames)


def _changed_in(frames) -> set[str]:
    return {row[0] for _, _, f in frames for row in [*(f.get("changed") or ()), *(f.get("nodes") or ())]}


def run_nodes_page(*, nodes: int, timeout: float = 600.0, progress=None) -> dict:
    from playwright.sync_api import sync_playwright

    from ..models import Node
    from ..testing.browser import CHROMIUM, CHROMIUM_ARGS, VIEWPORT, server_env, start_asgi_server
    from .e2e import _proc_cpu
    from .viewers import _session_cookie

    say = progress or (lambda msg: None)
    if not os.path.exists(CHROMIUM):
        raise RuntimeError(f"{CHROMIUM} not found: apt-get install chromium (or set SCHEDBOARD_CHROMIUM)")
    url, name = bench_database_url("_nodespage")
    admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin_execute(f'CREATE DATABASE "{name}"')
    server = None
    try:
        with UseDatabase(name):
            call_command("migrate", verbosity=0)
            say(f"loading {nodes} nodes, {nodes // 10} placed pods")
            load_cluster(nodes, nodes // 10, 0, 0)
            cookie = _session_cookie()
            usage_rows = Node.objects.count()
            from django.conf import settings

            # This process's secret key: the session it made must be one the server can read.
            server = start_asgi_server(server_env(DATABASE_URL=url, DJANGO_SECRET_KEY=settings.SECRET_KEY,
                                                  SCHEDBOARD_LIVE_PREFIX=f"bench-nodespage:{os.getpid()}"))
            frames: list = []
            say("opening /nodes/ in Chromium")
            os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # ORM calls between Playwright's steps
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
                context = browser.new_context(viewport=VIEWPORT)
                context.add_cookies([{"name": "sessionid", "value": cookie, "url": server.url}])
                page = context.new_page()
                page.on("websocket", _frames_listener(frames))
                started = time.perf_counter()
                response = page.goto(server.url + "/nodes/")
                html_bytes = len(response.body()) if response is not None else None
                try:
                    page.wait_for_selector(ROW_SELECTOR, timeout=timeout * 1000)
                except Exception as exc:  # noqa: BLE001 - Playwright's TimeoutError: say where the page stood
                    raise RuntimeError(f"no node row on {page.url} after {timeout:g} s ({len(frames)} frames; "
                                       f"{page.inner_text('body')[:300]!r})\n{server.logs()[-2000:]}") from exc
                first_row = time.perf_counter()
                deadline = time.monotonic() + timeout
                while _rows_in(frames) < usage_rows and time.monotonic() < deadline:
                    page.wait_for_timeout(50)
                all_rows = time.perf_counter()
                count_text = page.inner_text("#node-count")
                load_frames = list(frames)
                # 1 % of the nodes' usage moves (as bindings would move it): until the page has had every one.
                names = [f"node-{i}" for i in range(0, nodes, 100)]
                frames.clear()
                changed_at = time.perf_counter()
                Node.objects.filter(name__in=names).update(req_pods=7, req_cpu=700)
                while not set(names) <= _changed_in(frames) and time.monotonic() < deadline:
                    page.wait_for_timeout(20)
                all_changes = time.perf_counter()
                change_frames = list(frames)
                # The server's CPU while the page stays open and nothing changes (its feed reads every node's
                # usage every 0.5 s, shared by all the nodes pages it serves).
                cpu_before, idle_from = _proc_cpu(server.process.pid), time.perf_counter()
                page.wait_for_timeout(IDLE_SECONDS * 1000)
                idle_cpu = (_proc_cpu(server.process.pid) - cpu_before) / (time.perf_counter() - idle_from)
                context.close()
                browser.close()
            connection.close()
        return {
            "workload": "nodes page",
            "nodes": nodes,
            "html_bytes": html_bytes,
            "first_row_ms": round((first_row - started) * 1000, 1),
            "all_rows_ms": round((all_rows - started) * 1000, 1),
            "rows_received": _rows_in(load_frames),
            "node_count_text": count_text,
            "load_frames": len(load_frames),
            "load_bytes": sum(n for _, n, _ in load_frames),
            "load_frame_max_bytes": max((n for _, n, _ in load_frames), default=0),
            "changed_nodes": len(names),
            "changes_shown_ms": round((all_changes - changed_at) * 1000, 1),
            "change_frames": len(change_frames),
            "change_bytes": sum(n for _, n, _ in change_frames),
            "server_cpu_share_page_open": round(idle_cpu, 3),  # CPU seconds per second, nothing changing
        }
    finally:
        if server is not None:
            server.stop()
        admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
