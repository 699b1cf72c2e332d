"""One HTTP/1.1 request and its reply, on a connection of the API client's own urllib3 pool: the replica's
per-pod calls (the binding, its event) without urllib3's layers above the socket.

Through urllib3 (its PoolManager, retries, Timeout objects, header validation, two response wrappers) a small
call cost about 1 ms of CPU here (an event POST against the real API server, calls interleaved on a loaded
2-core machine: 994 us); the replica makes two per pod. Here the request is written in one send (its line and
headers are ours to format: nothing to parse) and the reply is read by http.client's rules but not by its
code (it parses every reply's headers with the email package: most of what was left of a call's CPU). The
connection is urllib3's, taken from and given back to its pool: TLS, the kubeconfig's CA, client certificate
and server name, the pool's size and its check for a connection the server closed are all urllib3's, unchanged. A client with a proxy, or whose REST client is not the generated one (a
test's fake), keeps the urllib3 path (`transport()` gives None).

Errors are what `client.call()` reads: an OSError (socket, TLS, a reply cut short or unreadable) or urllib3's own
(a pool closed, a connection refused) is a transport error, retried as one; a status outside 2xx is the caller's
to turn into ApiException.
"""

from __future__ import annotations

from urllib.parse import urlsplit


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


# How much one recv() asks for: a binding's or an event's whole reply (a few hundred bytes to 2 KB) comes in one.
RECV_SIZE = 65536
MAX_HEAD = 65536  # as http.client's _MAXLINE * _MAXHEADERS order of magnitude: a reply head longer is not HTTP
CONTINUE = 100


def _read_reply(sock, method: str) -> tuple[Reply, bool]:
    """The reply to the request just sent, and whether the connection can carry another.

    Read as http.client reads it (status line, headers, a sized, chunked or read-to-close body, a "100
    Continue" skipped, no body for HEAD, 1xx, 204 and 304; its rules for keeping the connection), but
    without its per-reply machinery: http.client parses the headers with the email package, about two
    thirds of a small call's CPU here (one reply: 34 us of http.client, against a few for this)."""
    reader = _Reader(sock)
    while True:
        version, status, reason, headers = _read_head(reader)
        if status != CONTINUE:
            break
    chunked = (headers.get("transfer-encoding") or "").lower() == "chunked"
    will_close = _will_close(version, headers)
    if status in (204, 304) or 100 <= status < 200 or method == "HEAD":
        data = b""
    elif chunked:
        data = _read_chunked(reader)
    else:
        length = _content_length(headers)
        if length is None:
            data, will_close = reader.read_to_close(), True
        else:
            data = reader.read_exactly(length)
    if reader.buffer:
        will_close = True  # bytes past the reply: the connection is out of step, never used again
    return Reply(status, reason, headers, data), not will_close


class _Reader:
    """Bytes from the socket, buffered: lines and sized reads (a reply cut short is BadReply)."""

    __slots__ = ("sock", "buffer")

    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""

    def _more(self, what: str) -> None:
        chunk = self.sock.recv(RECV_SIZE)
        if not chunk:
            raise BadReply(f"the connection closed in the reply's {what}")
        self.buffer += chunk

    def until(self, marker: bytes, what: str, limit: int = MAX_HEAD) -> bytes:
        """The bytes before `marker` (taken, with it)."""
        end = self.buffer.find(marker)
        while end < 0:
            if len(self.buffer) > limit:
                raise BadReply(f"the reply's {what} is too long")
            self._more(what)
            end = self.buffer.find(marker)
        found, self.buffer = self.buffer[:end], self.buffer[end + len(marker):]
        return found

    def read_exactly(self, length: int) -> bytes:
        have = len(self.buffer)
        if have < length:  # the parts joined once: a list's megabytes are not copied again at every recv
            parts = [self.buffer]
            while have < length:
                chunk = self.sock.recv(RECV_SIZE)
                if not chunk:
                    raise BadReply(f"the connection closed in the reply's body ({have} of {length} bytes)")
                parts.append(chunk)
                have += len(chunk)
            self.buffer = b"".join(parts)
        data, self.buffer = self.buffer[:length], self.buffer[length:]
        return data

    def read_to_close(self) -> bytes:
        parts = [self.buffer]
        while chunk := self.sock.recv(RECV_SIZE):
            parts.append(chunk)
        self.buffer = b""
        return b"".join(parts)


def _read_head(reader: _Reader) -> tuple[int, int, str, dict]:
    lines = reader.until(b"\r\n\r\n", "headers").decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code, _, reason = rest.partition(" ")
    if version not in ("HTTP/1.1", "HTTP/1.0") or len(code) != 3 or not code.isdigit() or int(code) < 100:
        raise BadReply(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    headers = _Headers()
    name = None
    for line in lines[1:]:
        if line[:1] in (" ", "\t") and name is not None:  # an obsolete folded line continues the last header
            headers[name] = f"{headers[name]} {line.strip()}"
            continue
        name, colon, value = line.partition(":")
        if not colon:
            raise BadReply(f"not a header line: {line[:80]!r}")
        name, value = name.strip().lower(), value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return (11 if version == "HTTP/1.1" else 10), int(code), reason.strip(), headers


def _content_length(headers: dict) -> int | None:
    """As http.client: an unreadable or negative Content-Length is none (the body runs to the close)."""
    value = headers.get("content-length")
    if value is None:
        return None
    try:
        length = int(value)
    except ValueError:
        return None
    return length if length >= 0 else None


def _read_chunked(reader: _Reader) -> bytes:
    parts = []
    while True:
        size_line = reader.until(b"\r\n", "chunk size", 1024)
        try:
            size = int(size_line.split(b";", 1)[0], 16)
        except ValueError:
            raise BadReply(f"not a chunk size: {size_line[:40]!r}") from None
        if size == 0:
            while reader.until(b"\r\n", "trailer"):  # trailers, up to the empty line
                pass
            return b"".join(parts)
        parts.append(reader.read_exactly(size))
        if reader.read_exactly(2) != b"\r\n":
            raise BadReply("a chunk not ended by CRLF")


def _will_close(version: int, headers: dict) -> bool:
    """As http.client's _check_close: HTTP/1.1 keeps the connection unless told "close"; HTTP/1.0 only if
    told "keep-alive"."""
    connection = (headers.get("connection") or "").lower()
    if version == 11:
        return "close" in connection
    if headers.get("keep-alive") or "keep-alive" in connection:
        return False
    return "keep-alive" not in (headers.get("proxy-connection") or "").lower()


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

