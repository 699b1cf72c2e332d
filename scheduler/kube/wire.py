"""One HTTP/1.1 request and its reply, written and read straight on a connection of the API client's own
urllib3 pool: the replica's per-pod calls (the binding, its event) without the layers above the socket.

Through urllib3 (its PoolManager, retries, Timeout objects, http.client's header validation and email-parser
header parsing, two response wrappers) a small call costs about 0.5 ms of Python here; written and read
directly about 0.2 ms, and the replica makes two per pod (measured on a loaded 2-core machine, calls
interleaved: 994 -> 420 us of CPU an event POST). The connection is urllib3's, taken from and
given back to its pool: TLS, the kubeconfig's CA, client certificate and server name, the pool's size and
its check for a connection the server closed are all urllib3's, unchanged. A client with a proxy, or whose
REST client is not the generated one (a test's fake), keeps the urllib3 path (`transport()` gives None).

Errors are what `client.call()` reads: an OSError (socket, TLS, a reply cut short) or urllib3's own (a pool
closed, a connection refused) is a transport error, retried as one; a status outside 2xx is the caller's
to turn into ApiException.
"""

from __future__ import annotations

from urllib.parse import urlsplit

# A reply's head (status line and headers) bigger than this is refused, as http.client refuses one of
# more than 100 headers or 64 KiB lines.
MAX_HEADERS = 100
MAX_LINE = 65536
NO_BODY_STATUS = frozenset({204, 304})


class BadReply(ConnectionError):
    """The server's reply was not HTTP/1.x we can read (or it ended early): a transport error."""


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
        self._pool = None

    def _connection_pool(self):
        pool = self._pool
        if pool is None or pool.pool is None:  # none yet, or closed (ApiClient.close() clears the manager)
            pool = self._pool = self.pool_manager.connection_from_host(self.hostname, self.port, scheme=self.scheme)
        return pool

    def request(self, method: str, path: str, headers: dict, body: bytes | None, timeout) -> Reply:
        """Send one request and read its reply; `timeout` is (connect, read) seconds, as `_request_timeout`."""
        connect_timeout, read_timeout = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        head = [f"{method} {self.prefix}{path} HTTP/1.1", f"Host: {self.host_header}"]
        head.extend(f"{name}: {value}" for name, value in headers.items())
        if body is not None:
            head.append(f"Content-Length: {len(body)}")
        elif method in ("POST", "PUT", "PATCH"):
            head.append("Content-Length: 0")
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
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
            sock.settimeout(read_timeout)
            sock.sendall(data)
            reply, keep = _read_reply(sock, method)
            return reply
        finally:
            if not keep:
                conn.close()
            pool._put_conn(conn)


def _read_reply(sock, method: str) -> tuple[Reply, bool]:
    """The reply to the request just sent, and whether the connection can carry another."""
    buf = _Buffer(sock)
    while True:
        status, reason, version = _status_line(buf.line())
        headers = _headers(buf)
        if not 100 <= status < 200:
            break  # an interim 1xx reply: the real one follows
    connection = headers.get("connection", "").lower()
    close = connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive")
    if method == "HEAD" or status in NO_BODY_STATUS:
        data = b""
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        data = _chunked(buf)
    elif "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError:
            raise BadReply(f"bad Content-Length {headers['content-length']!r}") from None
        data = buf.take(length)
    else:  # delimited by the connection's end
        data, close = buf.rest(), True
    if buf.pending():
        close = True  # bytes past the reply: not a connection to send another request on
    return Reply(status, reason, headers, data), not close


class _Buffer:
    """The reply's bytes as they arrive: received in large reads (most replies come in one), not through a
    file object per reply (http.client's makefile: a third of reading a small reply)."""

    READ = 65536

    def __init__(self, sock):
        self.sock = sock
        self.data = bytearray()
        self.pos = 0

    def _more(self) -> None:
        chunk = self.sock.recv(self.READ)
        if not chunk:
            raise BadReply("the server closed the connection without a reply" if not self.data else "reply cut short")
        self.data += chunk

    def line(self) -> bytes:
        while (end := self.data.find(b"\r\n", self.pos)) < 0:
            if len(self.data) - self.pos > MAX_LINE:
                raise BadReply("reply line too long")
            self._more()
        line = bytes(self.data[self.pos:end])
        self.pos = end + 2
        return line

    def take(self, n: int) -> bytes:
        while len(self.data) - self.pos < n:
            self._more()
        out = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return out

    def rest(self) -> bytes:
        while True:
            chunk = self.sock.recv(self.READ)
            if not chunk:
                break
            self.data += chunk
        out = bytes(self.data[self.pos:])
        self.pos = len(self.data)
        return out

    def pending(self) -> bool:
        return self.pos < len(self.data)


def _status_line(raw: bytes) -> tuple[int, str, str]:
    line = raw.decode("latin-1")
    version, _, rest = line.partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
        raise BadReply(f"not an HTTP/1.x status line: {line[:80]!r}")
    return int(code), reason, version


def _headers(buf: _Buffer) -> _Headers:
    headers = _Headers()
    for _ in range(MAX_HEADERS + 1):
        line = buf.line()
        if not line:
            return headers
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep:
            raise BadReply(f"bad header line {line[:80]!r}")
        name = name.strip().lower()
        value = value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    raise BadReply(f"more than {MAX_HEADERS} headers")


def _chunked(buf: _Buffer) -> bytes:
    parts = []
    while True:
        size_line = buf.line().split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise BadReply(f"bad chunk size {size_line[:40]!r}") from None
        if size == 0:
            while buf.line():  # trailers, up to the empty line
                pass
            return b"".join(parts)
        parts.append(buf.take(size))
        if buf.take(2) != b"\r\n":
            raise BadReply("chunk not followed by CRLF")


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

