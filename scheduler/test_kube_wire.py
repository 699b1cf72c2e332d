"""kube/wire.py: the replica's requests written and read on the client's own pooled connections, against a
scripted HTTP/1.1 server on loopback (fast; test_kube_client.py's hot-call test runs them on the real API
server)."""

import json
import socket
import threading

import pytest
from kubernetes import client

from scheduler.kube.client import ApiError, Backoff, HotCalls, TokenBucket, call, rate_limit, request_json
from scheduler.kube.wire import transport

NO_WAIT = Backoff(initial=0.0, cap=0.0, attempts=3)


def reply(status=200, obj=None, *, headers=(), chunked=False, close=False, raw=None):
    body = json.dumps(obj if obj is not None else {"kind": "Status", "code": status}).encode()
    head = [f"HTTP/1.1 {status} {'OK' if status < 300 else 'Refused'}", "Content-Type: application/json", *headers]
    if close:
        head.append("Connection: close")
    if chunked:
        head.append("Transfer-Encoding: chunked")
        half = len(body) // 2
        body = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:half], body[half:])) + b"0\r\n\r\n"
    else:
        head.append(f"Content-Length: {len(body)}")
    return (raw if raw is not None else ("\r\n".join(head) + "\r\n\r\n").encode() + body), close


class Server:
    """Answers each request with the next scripted reply; records the requests and the connections."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests: list[tuple[int, bytes, bytes]] = []  # (connection number, head, body)
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn, self.connections), daemon=True).start()

    def _serve(self, conn, number):
        fp = conn.makefile("rb")
        with conn:
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = fp.readline()
                    if not line:
                        return
                    head += line
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                self.requests.append((number, head, fp.read(length)))
                data, close = self.replies.pop(0)
                conn.sendall(data)
                if close:
                    return

    def api(self, **config):
        configuration = client.Configuration()
        configuration.host = f"http://127.0.0.1:{self.port}"
        configuration.api_key = {"BearerToken": "t0ken"}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
        for key, value in config.items():
            setattr(configuration, key, value)
        return client.ApiClient(configuration)


EVENT = {"metadata": {"name": "p.1", "namespace": "default"}, "note": "Successfully assigned default/p to n1"}


def test_a_call_goes_out_in_one_write_on_the_pools_connection_with_its_credentials_and_reads_the_reply():
    server = Server(reply(201, EVENT), reply(201, EVENT))
    api = server.api()
    assert transport(api) is not None
    hot = HotCalls(api)
    assert call(hot.create_namespaced_event, "default", EVENT) == EVENT
    assert call(hot.create_namespaced_event, "default", EVENT) == EVENT
    assert server.connections == 1  # kept alive, as urllib3 keeps it
    _, head, body = server.requests[0]
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /apis/events.k8s.io/v1/namespaces/default/events HTTP/1.1"
    assert f"Host: 127.0.0.1:{server.port}" in lines and "authorization: bearer t0ken" in head.decode().lower()
    assert "Content-Type: application/json" in lines and f"Content-Length: {len(body)}" in lines
    assert json.loads(body) == EVENT


def test_a_chunked_reply_is_read_whole():
    pods = {"kind": "PodList", "items": [{"metadata": {"name": f"p{i}"}} for i in range(50)]}
    server = Server(reply(200, pods, chunked=True), reply(200, EVENT))
    api = server.api()
    assert call(lambda **kw: request_json(api, "GET", "/api/v1/pods", **kw)) == pods
    assert call(HotCalls(api).create_namespaced_event, "default", EVENT) == EVENT  # the same connection, in step
    assert server.connections == 1


def test_a_refusal_is_the_api_error_the_generated_client_gives_and_a_throttle_is_retried_after_its_delay():
    conflict = {"kind": "Status", "code": 409, "message": 'pod p is already assigned to node "n1"'}
    server = Server(reply(409, conflict), reply(429, headers=["Retry-After: 0"]), reply(201, {"status": "Success"}))
    hot = HotCalls(server.api())
    with pytest.raises(ApiError) as exc:
        call(hot.create_namespaced_pod_binding, "p", "default", {}, backoff=NO_WAIT)
    assert exc.value.status == 409 and "already assigned" in str(exc.value)
    slept = []
    assert call(hot.create_namespaced_pod_binding, "p", "default", {}, sleep=slept.append) == {"status": "Success"}
    assert slept == [0.0]  # Retry-After read from the reply's headers, as from urllib3's


def test_a_connection_the_server_closes_is_not_used_again():
    server = Server(reply(201, EVENT, close=True), reply(201, EVENT))
    hot = HotCalls(server.api())
    call(hot.create_namespaced_event, "default", EVENT)
    call(hot.create_namespaced_event, "default", EVENT)
    assert [number for number, _, _ in server.requests] == [1, 2]


def test_a_header_with_a_line_break_is_refused_before_anything_is_sent():
    server = Server()
    lean = transport(server.api())
    with pytest.raises(ValueError):
        lean.request("GET", "/api/v1/pods", {"Authorization": "Bearer x\r\nX-Injected: 1"}, None, (1, 1))
    assert server.requests == []


def test_a_reply_cut_short_is_a_transport_error_retried_on_a_new_connection():
    truncated = b"HTTP/1.1 201 Created\r\nContent-Length: 500\r\n\r\n{\"kind\""
    server = Server(reply(raw=truncated, close=True), reply(201, EVENT))
    assert call(HotCalls(server.api()).create_namespaced_event, "default", EVENT, backoff=NO_WAIT) == EVENT
    assert server.connections == 2


def test_every_request_takes_a_token_from_the_clients_rate_limiter_first():
    server = Server(reply(201, EVENT), reply(201, EVENT))
    api = rate_limit(server.api(), TokenBucket(0.001, 10))
    for _ in range(2):
        call(HotCalls(api).create_namespaced_event, "default", EVENT)
    assert api.rest_client.bucket._tokens == pytest.approx(8, abs=0.1)


def test_a_client_through_a_proxy_or_with_a_fake_rest_client_keeps_the_urllib3_path():
    server = Server()
    assert transport(server.api(proxy=f"http://127.0.0.1:{server.port}")) is None
    api = server.api()
    api.rest_client = object()
    assert transport(api) is None


def test_an_interim_100_continue_is_skipped_even_in_the_same_segment_as_the_reply_and_the_connection_kept():
    continued = b"HTTP/1.1 100 Continue\r\n\r\n" + reply(201, EVENT)[0]
    server = Server(reply(raw=continued), reply(201, EVENT))
    hot = HotCalls(server.api())
    assert call(hot.create_namespaced_event, "default", EVENT) == EVENT
    assert call(hot.create_namespaced_event, "default", EVENT) == EVENT
    assert server.connections == 1


def test_bytes_past_the_reply_leave_its_connection_unused_and_repeated_headers_are_joined():
    data, _ = reply(201, EVENT, headers=["Warning: 299 - \"a\"", "Warning: 299 - \"b\""])
    server = Server(reply(raw=data + b"HTTP/1.1 200 OK\r\n"), reply(201, EVENT))
    lean = transport(server.api())
    answer = lean.request("POST", "/api/v1/namespaces/default/events", {}, json.dumps(EVENT).encode(), (1, 1))
    assert (answer.status, json.loads(answer.data)) == (201, EVENT)
    assert answer.getheader("warning") == '299 - "a", 299 - "b"'
    lean.request("POST", "/api/v1/namespaces/default/events", {}, json.dumps(EVENT).encode(), (1, 1))
    assert server.connections == 2  # out of step after the stray bytes: a new connection


def test_an_http_1_0_reply_without_keep_alive_closes_and_one_without_a_length_is_read_to_the_close():
    server = Server((b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + json.dumps(EVENT).encode(), True),
                    reply(201, EVENT))
    hot = HotCalls(server.api())
    assert call(hot.create_namespaced_event, "default", EVENT) == EVENT
    assert call(hot.create_namespaced_event, "default", EVENT) == EVENT
    assert server.connections == 2


def test_a_reply_that_is_not_http_is_a_transport_error():
    server = Server((b"SSH-2.0-OpenSSH\r\n\r\n", True), reply(201, EVENT))
    assert call(HotCalls(server.api()).create_namespaced_event, "default", EVENT, backoff=NO_WAIT) == EVENT
    assert server.connections == 2


def test_a_reply_nobody_reads_is_not_parsed_and_requests_with_preformatted_headers_go_out_the_same():
    server = Server(reply(201, EVENT), reply(201, EVENT))
    hot = HotCalls(server.api())
    assert call(hot.create_namespaced_event, "default", EVENT, decode=False) == {}
    assert call(hot.create_namespaced_event, "default", EVENT) == EVENT
    assert server.requests[0][1] == server.requests[1][1]  # the same head, its headers formatted once
