"""Uvicorn's httptools protocol, made cheaper per response: the head and body in one write, the
head written without checking each header with two regular expressions, and one keep-alive timer
per connection instead of one per response.

**Joined writes.** Uvicorn writes a response's status line and headers to the socket as soon as the app sends
``http.response.start``, and the body in a second write: two system calls per response, and on
loopback two wake-ups of the client, where one would do. The transport given to Uvicorn's protocol
here holds a write until the next one or the end of the event loop's turn, whichever comes first:
a head followed at once by its body goes out in one write; a stream's head, or a chunk sent after a
pause, goes out at the end of the turn it was written in, as before; when the client half-closes,
what is held goes out before the loop closes the connection. Nothing else changes: every other call
is the transport's own.

**A lean head.** Uvicorn checks every response header's name and value with a regular-expression
search each (about 0.35 µs apiece here) and lower-cases the name: some 6 µs for a mockllm response
with its nine headers. :class:`LeanHeadCycle` writes the same head with the same checks done once per
response: names already seen valid are remembered (with their lower-case form), and the values are
checked together, in one pass over all of them. Only the response start changes; the body, flow
control and completion are Uvicorn's own.

**One keep-alive timer per connection.** Uvicorn arms a keep-alive timer after every response and
cancels it when the next request arrives: a timer made and dropped per request (about 1-2 µs on
uvloop here). Here the timer is armed once; when it fires it closes the connection if it has been
idle for the whole keep-alive timeout, and otherwise waits for what is left of it.

Both replace Uvicorn methods, so each is used only with a Uvicorn whose methods it replaces are the
ones it was checked against (the digests of their source); any other Uvicorn serves with its own."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import (
    HEADER_RE,
    HEADER_VALUE_RE,
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)


class JoinedWrites:
    """A transport whose writes made in one turn of the event loop go out as one."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is None:
            if not data:
                return
            self._held = bytes(data)
            self._loop.call_soon(self._flush)
            return
        self._held = None
        self._transport.write(held + bytes(data))

    def writelines(self, lines: Any) -> None:
        self.write(b"".join(lines))

    def flush(self) -> None:
        """Write what is held now (before the loop closes the transport under this one)."""
        self._flush()

    def _flush(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if not self._transport.is_closing():
                self._transport.write(held)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def is_closing(self) -> bool:  # (asked after every response: not through __getattr__)
        return self._transport.is_closing()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + len(self._held or b"")

    def __getattr__(self, name: str) -> Any:  # everything else: the transport's
        return getattr(self._transport, name)


#: Digests of the source of the Uvicorn methods this module replaces, as checked line by line (and by
#: tests/test_uvicorn_protocol.py): Uvicorn 0.54.0's. Where a method's source differs -- an older
#: Uvicorn handles ``connection`` differently, a newer one may change anything -- Uvicorn's own serves.
_REVIEWED = {
    "RequestResponseCycle.send": "abdd8601b326a8da",
    "HttpToolsProtocol.on_response_complete": "64e254f28e389e76",
    "HttpToolsProtocol._unset_keepalive_if_required": "00a6a4e47214e68e",
    "HttpToolsProtocol.timeout_keep_alive_handler": "8b53bf5f2e202970",
}


def _digest(method: Any) -> str | None:
    try:
        source = inspect.getsource(method)
    except (OSError, TypeError):  # no source installed
        return None
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def _reviewed(*names: str) -> bool:
    classes = {"RequestResponseCycle": RequestResponseCycle, "HttpToolsProtocol": HttpToolsProtocol}
    for name in names:
        owner, _, attr = name.partition(".")
        if _digest(getattr(classes[owner], attr, None)) != _REVIEWED[name]:
            return False
    return True


LEAN_HEAD = _reviewed("RequestResponseCycle.send")
ONE_IDLE_TIMER = _reviewed(
    "HttpToolsProtocol.on_response_complete",
    "HttpToolsProtocol._unset_keepalive_if_required",
    "HttpToolsProtocol.timeout_keep_alive_handler",
)

_NAMES: dict[bytes, bytes] = {}  # header names found valid, as given -> lower-case
_NAMES_LIMIT = 1024
_SPECIAL = frozenset({b"content-length", b"transfer-encoding", b"connection"})
#: The bytes Uvicorn refuses in a header value, taken from its own pattern: deleting them from the
#: values in one C pass (``bytes.translate``) finds the same values as the pattern, several times faster.
_BAD_VALUE_BYTES = bytes(b for b in range(256) if HEADER_VALUE_RE.search(bytes([b])))


class LeanHeadCycle(RequestResponseCycle):
    """Uvicorn's request/response cycle, writing a response's head with one check of its values
    together and names remembered once valid; everything else is Uvicorn's."""

    async def send(self, message: Any) -> None:
        if (
            self.response_started
            or self.disconnected
            or self.flow.write_paused
            or self.access_log
            or message["type"] != "http.response.start"
        ):
            await super().send(message)  # (and every message after the start, and every unusual case)
            return
        self.response_started = True
        self.waiting_for_100_continue = False
        status_code = message["status"]
        content = [STATUS_LINE[status_code]]
        values: list[bytes] = []
        has_connection_close = False
        for name, value in self.default_headers + list(message.get("headers", ())):  # as Uvicorn: its own first
            low = _NAMES.get(name) if type(name) is bytes else None  # (a bytearray is checked each time)
            if low is None:
                if HEADER_RE.search(name):
                    raise RuntimeError("Invalid HTTP header name.")
                low = bytes(name).lower()
                if len(_NAMES) < _NAMES_LIMIT and type(name) is bytes:
                    _NAMES[name] = low
            if low in _SPECIAL:  # as Uvicorn reads them
                if low == b"content-length":
                    if self.chunked_encoding is None:
                        self.expected_content_length = int(value.decode())
                        self.chunked_encoding = False
                elif low == b"transfer-encoding":
                    if value.lower() == b"chunked":
                        self.expected_content_length = 0
                        self.chunked_encoding = True
                elif b"close" in [token.lower().strip() for token in value.split(b",")]:
                    self.keep_alive = False
                    has_connection_close = True
            values.append(value)
            content += (low, b": ", value, b"\r\n")
        if values:
            joined = b"".join(values)
            if joined.translate(None, _BAD_VALUE_BYTES) != joined:
                raise RuntimeError("Invalid HTTP header value.")
        if not self.keep_alive and not has_connection_close:
            content.append(b"connection: close\r\n")
        if self.chunked_encoding is None and self.scope["method"] != "HEAD" and status_code not in (204, 304):
            self.chunked_encoding = True  # neither content-length nor transfer-encoding given
            content.append(b"transfer-encoding: chunked\r\n")
        content.append(b"\r\n")
        self.transport.write(b"".join(content))


def uvicorn_protocol() -> type[Any]:
    """Uvicorn's httptools protocol class, its transport's writes joined (:class:`JoinedWrites`) and
    its responses' heads written by :class:`LeanHeadCycle` (where this Uvicorn allows)."""

    class MockllmProtocol(HttpToolsProtocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            # (uvloop's transports are not asyncio.Transport subclasses: casts, no isinstance checks)
            joined = JoinedWrites(cast(asyncio.Transport, transport), self.loop)
            self.joined = joined
            super().connection_made(cast(asyncio.Transport, joined))  # a transport in all but name

        def eof_received(self) -> None:
            # The client half-closed: the loop closes the transport under ours when this returns, before
            # the end of the turn -- what is held (a HEAD answer, a stream's last chunk) goes out first.
            self.joined.flush()
            super().eof_received()

        if LEAN_HEAD:

            def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
                if type(cycle) is RequestResponseCycle:  # not started yet: its send is looked up on start
                    cycle.__class__ = LeanHeadCycle
                super()._start_asgi_task(cycle, app)

        if ONE_IDLE_TIMER:
            _idle_since: float | None = None  # when the last response ended; None while a request runs
            _idle_timer: asyncio.TimerHandle | None = None

            def on_response_complete(self) -> None:
                # Uvicorn's, except that the keep-alive timer is armed once per connection, not once
                # per response (and cancelled at every next request): see _idle_check.
                self.server_state.total_requests += 1
                if self.transport.is_closing():
                    return
                self._unset_keepalive_if_required()
                self.flow.resume_reading()
                if self.pipeline:
                    cycle, app = self.pipeline.pop()
                    self._start_asgi_task(cycle, app)
                else:
                    self._idle_since = self.loop.time()
                    if self._idle_timer is None:
                        self._idle_timer = self.loop.call_later(self.timeout_keep_alive, self._idle_check)

            def _unset_keepalive_if_required(self) -> None:  # (on every request's data)
                super()._unset_keepalive_if_required()
                self._idle_since = None

            def _idle_check(self) -> None:
                """The connection's keep-alive timer: closes it when it has been idle for the keep-alive
                timeout, else waits for what is left of it (or, while a request runs, for its end)."""
                self._idle_timer = None
                since = self._idle_since
                if since is None:
                    return  # a request is running: its response arms the timer again
                left = since + self.timeout_keep_alive - self.loop.time()
                if left > 0:
                    self._idle_timer = self.loop.call_later(left, self._idle_check)
                else:
                    self.timeout_keep_alive_handler()

            def connection_lost(self, exc: Exception | None) -> None:
                if self._idle_timer is not None:
                    self._idle_timer.cancel()
                    self._idle_timer = None
                super().connection_lost(exc)

    return MockllmProtocol
