"""One HTTP/1.1 request and its reply, on a connection of the API client's own urllib3 pool: the replica's
per-pod calls (the binding, its event) without urllib3's layers above the socket.

Through urllib3 (its PoolManager, retries, Timeout objects, header validation, two response wrappers) a small
call cost about 1 ms of CPU here (an event POST against the real API server, calls interleaved on a loaded
2-core machine: 994 us); the replica makes two per pod. Here the request is written in one send (its line and
headers are ours to format: nothing to parse) and the reply is read by httptools (llhttp, the parser of
Node.js; urllib3's http.client read each reply's headers with the email package, most of a small call's
CPU). The connection is urllib3's, taken from and given back to its pool: TLS, the
kubeconfig's CA, client certificate and server name, the pool's size and its check for a connection the server
closed are all urllib3's, unchanged. A client with a proxy, or whose REST client is not the generated one (a
test's fake), keeps the urllib3 path (`transport()` gives None).

Errors are what `client.call()` reads: an OSError (socket, TLS, a reply cut short or unreadable) or urllib3's own
(a pool closed, a connection refused) is a transport error, retried as one; a status outside 2xx is the caller's
to turn into ApiException.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httptools


class BadReply(ConnectionError):
    """The server's reply was not HTTP/1.x that httptools can read (or it ended early): a transport error."""


class Reply:
    """What `client.call()` and ApiException read of a reply: status, reason, headers (lower-cased names) and
    the body, read whole."""

    __slots__ = ("status", "reason", "headers", "data")

    def __init__(self, status: int, reason: str, headers: dict, data: bytes):
        self.status, self.reason, self.headers, self.data = status, reason, headers, data

    def read(self) -> bytes:
        return self.data

    def getheaders(self) -> dict:
        return self.headers

    def getheader(self, name: str, default=None):
        return self.headers.get(name.lower(), default)


class _Headers(dict):
    """Response headers by lower-cased name, read with any case (`Retry-After`), as urllib3's."""

    def get(self, name, default=None):
        return super().get(name.lower(), default)


class Transport:
    """Requests to one API server on `pool_manager`'s connections (`base`: its URL, with any path prefix)."""

    def __init__(self, pool_manager, base: str):
        parts = urlsplit(base)
        self.pool_manager = pool_manager
        self.scheme = parts.scheme
        self.hostname = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        default = (self.scheme, self.port) in (("https", 443), ("http", 80))
        self.host_header = parts.netloc if not default else parts.hostname
        if any(c in self.host_header + self.prefix for c in "\r\n"):
            raise ValueError("an API server URL with a line break in it")
        self._pool = None

    def _connection_pool(self):
        pool = self._pool
        if pool is None or pool.pool is None:  # none yet, or closed (ApiClient.close() clears the manager)
            pool = self._pool = self.pool_manager.connection_from_host(self.hostname, self.port, scheme=self.scheme)
        return pool

    def request(self, method: str, path: str, headers: dict, body: bytes | None, timeout) -> Reply:
        """Send one request and read its reply; `timeout` is (connect, read) seconds, as `_request_timeout`."""
        return self.send(method, path, header_block(headers), body, timeout)

    def send(self, method: str, path: str, block: str, body: bytes | None, timeout) -> Reply:
        """`request()` with its headers already formatted (`header_block`): a caller making many requests with
        the same headers formats and checks them once."""
        connect_timeout, read_timeout = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        if "\r" in path or "\n" in path or "\r" in method or "\n" in method:
            raise ValueError("a request line with a line break in it")  # as http.client refuses one
        if body is not None:
            length = f"Content-Length: {len(body)}\r\n"
        else:
            length = "Content-Length: 0\r\n" if method in ("POST", "PUT", "PATCH") else ""
        data = f"{method} {self.prefix}{path} HTTP/1.1\r\nHost: {self.host_header}\r\n{block}{length}\r\n".encode("latin-1")
        if body:
            data += body  # one write: one TLS record, one segment for the server to wake up to
        pool = self._connection_pool()
        conn = pool._get_conn()  # a dropped one is closed by the pool first: then connect() below opens it
        keep = False
        try:
            if conn.sock is None:
                conn.timeout = connect_timeout
                conn.connect()
            sock = conn.sock
            if sock.gettimeout() != read_timeout:  # setting it is two fcntl calls; it rarely changes
                sock.settimeout(read_timeout)
            sock.sendall(data)
            reply, keep = _read_reply(sock, method)
            return reply
        finally:
            if not keep:
                conn.close()
            pool._put_conn(conn)


def header_block(headers: dict) -> str:
    """Header lines as they go out ("Name: value\\r\\n" each); a line break inside one is refused, as
    http.client refuses it (it would end the header early: a header injected)."""
    lines = [f"{name}: {value}" for name, value in headers.items()]
    if any("\r" in line or "\n" in line for line in lines):
        raise ValueError("a request line or header with a line break in it")
    return "".join(f"{line}\r\n" for line in lines)


# One recv() takes a binding's or an event's whole reply (a few hundred bytes to 2 KB).
RECV_SIZE = 65536


class _Replies:
    """httptools' callbacks: each message the connection carries, kept until the reply proper (not 1xx) ends."""

    __slots__ = ("parser", "status", "reason", "headers", "body", "headers_done", "complete", "past_reply", "keep")

    def __init__(self):
        self.parser = None
        self.complete = self.past_reply = self.keep = False
        self.on_message_begin()

    def on_message_begin(self) -> None:
        if self.complete:
            self.past_reply = True  # bytes past the reply: the connection is out of step
            return
        self.status, self.reason, self.headers, self.body, self.headers_done = 0, b"", [], [], False

    def on_status(self, reason: bytes) -> None:
        if not self.complete:
            self.reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.complete:
            self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        if not self.complete:
            self.status, self.headers_done = self.parser.get_status_code(), True

    def on_body(self, body: bytes) -> None:
        if not self.complete:
            self.body.append(body)

    def on_message_complete(self) -> None:
        if not self.complete and (self.status >= 200 or self.status == 101):
            self.complete = True  # an interim 1xx reply (100 Continue) ends here too: the reply proper follows
            self.keep = self.parser.should_keep_alive()  # asked now: the parser forgets it for the next message


def _read_reply(sock, method: str) -> tuple[Reply, bool]:
    """The reply to the request just sent, and whether the connection can carry another.

    Parsed by httptools (llhttp, Node.js's HTTP/1.1 parser): status line, headers, sized or chunked bodies,
    interim 1xx replies skipped, its rules for keeping the connection. The standard library's http.client,
    used before, parses every reply's headers with the email package: two thirds of a small call's CPU here."""
    if method == "HEAD":
        raise ValueError("this transport reads no reply to HEAD (its parser would wait for a body)")
    replies = _Replies()
    parser = replies.parser = httptools.HttpResponseParser(replies)
    try:
        while not replies.complete:
            chunk = sock.recv(RECV_SIZE)
            if not chunk:
                if replies.headers_done and _runs_to_close(replies.headers):
                    break  # a body of no stated length runs to the close
                raise BadReply("the connection closed before the reply ended")
            parser.feed_data(chunk)
    except httptools.HttpParserUpgrade as exc:
        raise BadReply("the server switched protocols") from exc
    except httptools.HttpParserError as exc:
        if not replies.complete:
            raise BadReply(f"unreadable reply: {exc}") from exc
        replies.past_reply = True  # the reply was whole; what came after it was not HTTP
    headers = _Headers()
    for raw_name, raw_value in replies.headers:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    keep = replies.keep and not replies.past_reply
    return Reply(replies.status, replies.reason.decode("latin-1"), headers, b"".join(replies.body)), keep


def _runs_to_close(headers: list) -> bool:
    names = {name.lower() for name, _ in headers}
    return b"content-length" not in names and b"transfer-encoding" not in names


def transport(api) -> Transport | None:
    """`api`'s (a kubernetes ApiClient) Transport, made once; None where the urllib3 path must stay: a proxy,
    or a REST client that is not the generated one."""
    rest = getattr(api.rest_client, "_rest", api.rest_client)  # under client._RateLimitedRest
    cached = getattr(api, "_schedboard_transport", None)
    if cached is not None and cached[0] is rest:
        return cached[1]
    import urllib3
    from kubernetes.client.rest import RESTClientObject

    found = None
    if (isinstance(rest, RESTClientObject) and type(rest.pool_manager) is urllib3.PoolManager
            and urlsplit(api.configuration.host).scheme in ("http", "https")):
        found = Transport(rest.pool_manager, api.configuration.host)
    api._schedboard_transport = (rest, found)  # again if the REST client is replaced (a test's fake)
    return found

