"""list + watch with resource versions, as client-go's Reflector.

List (in pages) and hand the whole set to the store; then watch from the list's resourceVersion.
Every event moves our resourceVersion on, so a dropped connection resumes exactly where it stopped
(nothing lost, nothing twice); a `410 Gone` (the server no longer has that version) lists again.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
from typing import Protocol

from .client import ApiError, Backoff, call
from .jsoncodec import BLANK, loads_line

log = logging.getLogger(__name__)

LIST_PAGE = 500
MAX_BATCH = 500  # watch events applied in one transaction at most
# As the reflector: a watch lasts a random 5-10 minutes, then starts again from where it was.
MIN_WATCH_TIMEOUT = 300


class Store(Protocol):
    def replace(self, items: list[dict]) -> None: ...
    def apply(self, event_type: str, obj: dict) -> None: ...


class Expired(Exception):
    """410 Gone: the resourceVersion is older than what the server keeps."""


class Reflector:
    def __init__(self, name: str, list_fn, store: Store, *, field_selector: str = "", kind: str = "",
                 stop: threading.Event | None = None, watch_timeout: int | None = None,
                 store_after: threading.Event | None = None):
        self.name = name
        self.list_fn = list_fn
        self.store = store
        self.field_selector = field_selector
        self.kind = kind
        self.stop = stop or threading.Event()
        self.watch_timeout = watch_timeout
        # Set when the list may go into the store: the list is fetched meanwhile (the pods' list, while the
        # nodes they count against are still being mirrored).
        self.store_after = store_after
        self.resource_version = ""
        self.lists = 0  # how many times a full list was made (1 + re-lists after 410)
        self.resumes = 0  # watches restarted from a resourceVersion after a dropped connection
        self.synced = threading.Event()
        self._response = None
        # The open watch's line batches read off the connection and applied to the store (current_through).
        self._counts: list[int] | None = None
        self._lock = threading.Lock()
        # Cleared, it holds the next (re)connection back: tests use it to change the cluster in between.
        self.gate = threading.Event()
        self.gate.set()

    # ---- the loop -------------------------------------------------------------------------
    def run(self) -> None:
        backoff = Backoff(initial=0.2, cap=10.0)
        failures = 0
        while not self.stop.is_set():
            try:
                self.list()
                failures = 0
                self.watch_until_expired()
            except Exception as exc:  # noqa: BLE001 - the loop must survive anything and list again
                if self.stop.is_set():
                    break
                log.warning("%s: list failed: %s", self.name, exc)
                self.stop.wait(backoff.delay(min(failures, 6)))
                failures += 1

    def list(self) -> None:
        items: list[dict] = []
        token = ""
        while True:
            kwargs = {"limit": LIST_PAGE}
            if self.field_selector:
                kwargs["field_selector"] = self.field_selector
            if token:
                kwargs["_continue"] = token
            page = call(self.list_fn, **kwargs)
            for item in page.get("items") or ():
                if self.kind:  # list items carry no kind
                    item.setdefault("kind", self.kind)
                    item.setdefault("apiVersion", "v1")
                items.append(item)
            meta = page.get("metadata") or {}
            token = meta.get("continue") or ""
            if not token:
                self.resource_version = meta.get("resourceVersion") or ""
                break
        if self.store_after is not None and not self.store_after.is_set():
            prepare = getattr(self.store, "prepare", None)
            if prepare is not None:
                prepare(items)  # its own work while it waits (the pods' parse, while the nodes are stored)
        while self.store_after is not None and not self.store_after.wait(0.1):
            if self.stop.is_set():
                return
        self.store.replace(items)
        self.lists += 1
        self.synced.set()

    def watch_until_expired(self) -> None:
        """Watch from our resourceVersion, resuming after every dropped or timed-out connection, until 410."""
        failures = 0
        first = True
        while not self.stop.is_set():
            if not first:
                self.resumes += 1
            first = False
            try:
                self._watch_once()
                failures = 0
            except Expired:
                log.info("%s: resourceVersion %s is gone (410): listing again", self.name, self.resource_version)
                return
            except ApiError as exc:
                if exc.status == 410:
                    return
                failures += 1
                log.warning("%s: watch failed: %s", self.name, exc)
                self.stop.wait(Backoff(cap=10.0).delay(min(failures, 6)))
            except Exception as exc:  # noqa: BLE001 - a dropped connection: resume from resourceVersion
                if self.stop.is_set():
                    return
                failures += 1
                log.info("%s: watch connection ended (%s); resuming from %s", self.name, type(exc).__name__,
                         self.resource_version)
                self.stop.wait(min(1.0, 0.05 * failures))

    def _watch_once(self) -> None:
        while not self.gate.wait(0.1):
            if self.stop.is_set():
                return
        timeout = self.watch_timeout or int(MIN_WATCH_TIMEOUT * (1.0 + random.random()))
        kwargs = {"watch": True, "allow_watch_bookmarks": True, "resource_version": self.resource_version,
                  "timeout_seconds": timeout, "_preload_content": False, "_request_timeout": (5, timeout + 30)}
        if self.field_selector:
            kwargs["field_selector"] = self.field_selector
        try:
            response = self.list_fn(**kwargs)
        except Exception as exc:
            from kubernetes.client.exceptions import ApiException

            if isinstance(exc, ApiException) and exc.status == 410:
                raise Expired() from exc
            raise
        # A reader thread takes lines off the connection while the store applies what came before:
        # when the store falls behind, everything waiting is applied as one batch.
        arrived: queue.Queue = queue.Queue()
        done = object()
        counts = [0, 0]  # [read by the reader thread, applied by this one]: each written by one thread only
        with self._lock:
            self._response, self._counts = response, counts

        def read():
            try:
                for lines in _line_batches(response):
                    counts[0] += 1
                    arrived.put(lines)
                arrived.put(done)
            except BaseException as exc:  # noqa: BLE001 - handed to the applying thread
                arrived.put(exc)

        threading.Thread(target=read, name=f"{self.name}-read", daemon=True).start()
        try:
            while True:
                item = arrived.get()
                lines, end, taken = [], None, 0
                while True:
                    if item is done or isinstance(item, BaseException):
                        end = item
                        break
                    lines.extend(item)
                    taken += 1
                    if len(lines) >= MAX_BATCH:
                        break
                    try:
                        item = arrived.get_nowait()
                    except queue.Empty:
                        break
                if self.stop.is_set():
                    return
                if lines:
                    self._handle_many(decode_events(lines))
                counts[1] += taken
                if end is done:
                    return
                if end is not None:
                    raise end
        finally:
            with self._lock:
                self._response, self._counts = None, None
            response.release_conn()

    def current_through(self, now: float, *, delivery_margin: float = 1.0) -> float | None:
        """A wall time up to which the store holds everything the API server accepted, or None when that
        cannot be claimed (listing, between watches, or events read but not yet applied).

        A watch connected and idle has applied all it was sent; what the server accepted up to a moment
        ago (`delivery_margin` for the event to travel) is in the store. The reconciler frees a binding
        mark only behind this time (loop/reconcile.py): a binding the API accepted then is seen first.
        """
        with self._lock:
            counts = self._counts
        if counts is None or counts[0] != counts[1] or not self.synced.is_set():
            return None
        return now - delivery_margin

    def _handle_many(self, events: list[dict]) -> None:
        """Events that arrived together are applied together (one transaction in the pod store)."""
        batch, version = [], None
        for event in events:
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                break
            if kind != "BOOKMARK":
                if self.kind:
                    obj.setdefault("kind", self.kind)
                    obj.setdefault("apiVersion", "v1")
                batch.append((kind, obj))
            version = (obj.get("metadata") or {}).get("resourceVersion") or version
        if batch:
            if hasattr(self.store, "apply_many"):
                self.store.apply_many(batch)
            else:
                for kind, obj in batch:
                    self.store.apply(kind, obj)
        if version:
            self.resource_version = version  # only once applied: a failure resumes before these events
        for event in events:
            if event.get("type") == "ERROR":
                obj = event.get("object") or {}
                if obj.get("code") == 410:
                    raise Expired()
                raise ApiError(int(obj.get("code") or 0), obj.get("reason") or "", obj.get("message") or "", obj)

    # ---- for tests and shutdown ---------------------------------------------------------------
    def interrupt(self) -> bool:
        """Drop the current watch connection (as a network failure would); the loop resumes."""
        with self._lock:
            response = self._response
        if response is None:
            return False
        try:
            response.shutdown() if hasattr(response, "shutdown") else response.close()
        except Exception:  # noqa: BLE001
            response.close()
        return True

    def close(self) -> None:
        self.stop.set()
        self.interrupt()


def _line_batches(response):
    """The complete lines of each chunk read from a watch response (bytes, blank ones left out), as one list
    per chunk."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk if isinstance(chunk, bytes) else chunk.encode()
        if b"\n" not in buffer:
            continue
        *complete, buffer = buffer.split(b"\n")
        lines = [line for line in complete if line.strip()]
        if lines:
            yield lines


def decode_events(lines: list[bytes]) -> list[dict]:
    """Watch lines as events: each decoded as UTF-8 (invalid bytes replaced) and read as JSON, a line of only
    whitespace left out (kube/jsoncodec.py: orjson where it gives json's result)."""
    events = []
    for line in lines:
        event = loads_line(line)
        if event is not BLANK:
            events.append(event)
    return events
