"""The HTTP connection the service runs: uvicorn's httptools protocol with limits on a
request's head (its request line and headers) and answers in the service's JSON.

uvicorn bounds neither the time a request's head may take nor its size: a client that
sends a header line every few seconds, or one header of 50 MB, holds a connection (and its
memory) as long as it likes, before any key is checked. :func:`guarded_protocol` gives the
protocol both limits (``[server] header_timeout_seconds`` and ``max_header_bytes``): a
connection that delivers no complete head within the timeout is closed (408 when a request
had begun), and a head above the size is answered 431; both are closed. A request that is not
HTTP is answered 400 in the service's JSON (``{"error": ...}``), not uvicorn's plain text.
The body's limits are the application's (``body_timeout_seconds``, ``max_body_bytes``)."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from iglearn.data import safejson

DRAIN_QUIET = 1.0
"""Seconds without a byte after which a refused connection that is being drained (its
client still sending the rest of its request) is closed: the client has sent it all and
waits for the close (at most the head's timeout in all)."""
REASONS = {400: b"Bad Request", 408: b"Request Timeout", 431: b"Request Header Fields Too Large"}
"""The statuses the protocol answers itself, with their reason phrases."""


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol whose request heads are bounded in time and size (the
    class attributes, set by :func:`guarded_protocol`)."""

    head_timeout: float = 10.0
    """Seconds a connection may take to deliver a request's complete head: from its
    connection for its first request, from the request's first byte for a later one (an
    idle keep-alive connection is closed by uvicorn's own ``timeout_keep_alive``)."""
    max_head_bytes: int = 65536
    """Most bytes a request's head may take."""

    _head_timer: asyncio.TimerHandle | None = None
    _head_open = False
    _head_bytes = 0
    _head_parsed = 0
    _draining = False
    _drain_until = 0.0
    _drain_heard = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._draining:  # answered: what comes is dropped, and keeps the drain open
            self._drain_heard = self.loop.time()
            return
        if self.transport.is_closing():
            return
        super().data_received(data)
        if self._head_open and not self.transport.is_closing():
            self._head_bytes += len(data)
            if self._head_bytes > self.max_head_bytes:
                self.refuse_head_size()

    def refuse_head_size(self) -> None:
        """Answer 431: the request's head exceeds ``max_head_bytes``."""
        self.refuse(431, f"the request's head (its request line and headers) exceeds "
                         f"{self.max_head_bytes} bytes ([server] max_header_bytes)", drain=True)

    def on_message_begin(self) -> None:
        if self._draining:
            return
        super().on_message_begin()
        self._head_open, self._head_bytes, self._head_parsed = True, 0, 0
        if self._head_timer is None:  # a request pipelined after a response: timed anew
            self._start_head_timer()

    def on_url(self, url: bytes) -> None:
        self._head_parsed += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_parsed += len(name) + len(value) + 4  # "name: value\r\n"
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        """Refuse a head above the limit (the bytes that arrived before its last read were
        counted as they came; its size now is read from the parsed request line and
        headers, since the read that completed it may hold a body too), else start the
        request."""
        self._head_open = False
        if self._draining:
            return
        method = self.parser.get_method()
        size = len(method) + len(b" ") + self._head_parsed + len(b" HTTP/1.1\r\n\r\n")
        if max(size, self._head_bytes) > self.max_head_bytes:
            self.refuse_head_size()
            return
        self._stop_head_timer()
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._draining:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._draining:
            super().on_message_complete()

    def send_400_response(self, msg: str) -> None:
        self.refuse(400, f"not an HTTP request this service reads ({msg.rstrip('.')})")

    def refuse(self, status: int, message: str, drain: bool = False) -> None:
        """Answer ``status`` with the service's JSON error ``message`` and close; with
        ``drain``, what the client still sends is read and dropped for at most the head's
        timeout first (closed at once, a connection with unread data is reset, and the
        client, still sending, would lose the answer), and closed once the client has sent
        nothing for :data:`DRAIN_QUIET` seconds."""
        self._stop_head_timer()
        body = safejson.dumps({"error": message}).encode()
        head = (b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                b"connection: close\r\n\r\n" % (status, REASONS[status], len(body)))
        self.transport.write(head + body)
        if drain:
            self._draining = True
            self._drain_heard = self.loop.time()
            self._drain_until = self._drain_heard + self.head_timeout
            self._drain_later()
        else:
            self.transport.close()

    def _drain_later(self) -> None:
        """Close a drained connection when it has been quiet for :data:`DRAIN_QUIET` seconds
        or its time is up, checking again until then."""
        now = self.loop.time()
        quiet_at = self._drain_heard + DRAIN_QUIET
        if now >= min(quiet_at, self._drain_until):
            self._head_timer = None
            self.transport.close()
            return
        self._head_timer = self.loop.call_later(min(quiet_at, self._drain_until) - now,
                                                self._drain_later)

    def _start_head_timer(self) -> None:
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self._head_open:
            self.refuse(408, f"the request's head did not all arrive within "
                             f"{self.head_timeout:g} s ([server] header_timeout_seconds)")
        elif self.cycle is None:  # connected, and never sent a byte: nothing to answer
            self.transport.close()


def guarded_protocol(head_timeout: float, max_head_bytes: int) -> type[Any]:
    """The protocol class for ``uvicorn.Config(http=...)``, its head bounded by these."""
    return type("GuardedProtocol", (GuardedProtocol,),
                {"head_timeout": head_timeout, "max_head_bytes": max_head_bytes})
