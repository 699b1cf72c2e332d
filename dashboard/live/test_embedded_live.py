"""`manage.py run` (embedded: SQLite, in-memory queue and channel layer, no Redis) serves the live
socket too: a logged-in client sees the demo's bindings arrive in frames."""

import json
import signal
import socket
import subprocess
import sys
import time

import pytest
import requests
import websocket

from scheduler.testing.embedded import BASE_DIR, embedded_env, manage

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_embedded_service_streams_bindings_to_a_logged_in_socket(tmp_path):
    env = embedded_env(tmp_path)
    env["PROMETHEUS_MULTIPROC_DIR"] = str(tmp_path / "metrics")
    assert manage(env, "migrate", "--verbosity", "0").returncode == 0
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "manage.py", "run", "--addr", f"127.0.0.1:{port}", "--rate", "5"],
                            cwd=BASE_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        session = requests.Session()
        for _ in range(600):
            try:
                session.get(f"{base}/accounts/login/", timeout=2)
                break
            except requests.ConnectionError:
                time.sleep(0.1)
        login = session.post(f"{base}/accounts/login/", allow_redirects=False, headers={"Referer": f"{base}/accounts/login/"},
                             data={"username": "admin", "password": "admin", "csrfmiddlewaretoken": session.cookies["csrftoken"]})
        assert login.status_code == 302
        ws = websocket.create_connection(f"ws://127.0.0.1:{port}/ws/live/overview/", timeout=60, origin=base,
                                         cookie=f"sessionid={session.cookies['sessionid']}")
        first = json.loads(ws.recv())
        assert first["full"] is True
        bound = []
        for _ in range(200):  # the demo binds a few pods a second; frames carry them as they commit
            frame = json.loads(ws.recv())
            bound += [b for b in frame["bindings"]]
            if len(bound) >= 3:
                break
        ws.close()
        assert len(bound) >= 3 and all(ns and name and node for ns, name, node, *_ in bound)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
