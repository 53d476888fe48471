"""Uvicorn's httptools protocol, made cheaper per request: the head and body in one write, a leaner
request cycle (:mod:`mockllm.server.hosts.uvicorn_cycle`), and one keep-alive timer per connection
instead of one per response.

**Joined writes.** Uvicorn writes a response's status line and headers to the socket as soon as the app sends
``http.response.start``, and the body in a second write: two system calls per response, and on
loopback two wake-ups of the client, where one would do. The transport given to Uvicorn's protocol
here holds what is written until the end of the event loop's turn (or until 64 KB are held): a head
followed at once by its body goes out in one write, and so do the frames a WebSocket session sends
in one turn (a realtime response's events, about 30 of them, one write instead of one each); a
stream's head, or a chunk sent after a pause, goes out at the end of the turn it was written in, as
before; when the client half-closes, what is held goes out before the loop closes the connection.
Nothing else changes: every other call is the transport's own.

**A lean request cycle.** :class:`~mockllm.server.hosts.uvicorn_cycle.LeanCycle` replaces Uvicorn's
``RequestResponseCycle`` and the protocol methods that make and feed it
(:class:`~mockllm.server.hosts.uvicorn_cycle.LeanRequests`): the same scope, messages, checks and errors
in fewer Python steps, and each response's head written with its checks done once per response
instead of twice per header.

**One keep-alive timer per connection.** Uvicorn arms a keep-alive timer after every response and
cancels it when the next request arrives: a timer made and dropped per request (about 1-2 µs on
uvloop here). Here the timer is armed once; when it fires it closes the connection if it has been
idle for the whole keep-alive timeout, and otherwise waits for what is left of it.

The lean cycle and the one timer replace Uvicorn methods, so each is used only with a Uvicorn whose
methods it replaces or relies on are the ones it was checked against (the digests of their source);
any other Uvicorn serves with its own."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from mockllm.server.hosts.uvicorn_cycle import LeanRequests

#: what :class:`JoinedWrites` holds at most before it writes at once
HOLD_BYTES = 64 * 1024


class JoinedWrites:
    """A transport whose writes made in one turn of the event loop go out as one (up to
    :data:`HOLD_BYTES`: past that, what is held goes out at once, so the transport's flow control
    sees a large or endless stream as it is written)."""

    __slots__ = ("_held", "_held_bytes", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] | None = None
        self._held_bytes = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        chunk = data if type(data) is bytes else bytes(data)  # (before anything held is let go)
        held = self._held
        if held is None:
            self._held = [chunk]
            self._held_bytes = len(chunk)
            self._loop.call_soon(self._flush)
            return
        held.append(chunk)  # a response's head and body, a WebSocket session's frames of one turn
        self._held_bytes += len(chunk)
        if self._held_bytes > HOLD_BYTES:
            self._flush()

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
                self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def is_closing(self) -> bool:  # (asked after every response: not through __getattr__)
        return self._transport.is_closing()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + (self._held_bytes if self._held is not None else 0)

    def __getattr__(self, name: str) -> Any:  # everything else: the transport's
        return getattr(self._transport, name)


#: Digests of the source of the Uvicorn methods this module replaces or relies on, as checked line by line (and by
#: tests/test_uvicorn_protocol.py): Uvicorn 0.54.0's. Where a method's source differs -- an older
#: Uvicorn handles ``connection`` differently, a newer one may change anything -- Uvicorn's own serves.
_REVIEWED = {
    "RequestResponseCycle.__init__": "4d2f220910c33c12",
    "RequestResponseCycle.run_asgi": "0f33f2449a444bc2",
    "RequestResponseCycle.send_500_response": "37c64da40eedaeaf",
    "RequestResponseCycle.send": "abdd8601b326a8da",
    "RequestResponseCycle.receive": "8124ae006be71184",
    "HttpToolsProtocol.on_message_begin": "96d377fdc7c2baef",
    "HttpToolsProtocol.on_url": "37be44e962b04ca8",
    "HttpToolsProtocol.on_header": "65d62c044f61fdbd",
    "HttpToolsProtocol.on_headers_complete": "1ea8589acfad92d8",
    "HttpToolsProtocol._start_asgi_task": "9c08c2571ae9b038",
    "HttpToolsProtocol.on_body": "dba9c32aeba35b6a",
    "HttpToolsProtocol.on_message_complete": "1fbad42dc31fc01f",
    "HttpToolsProtocol.connection_lost": "c91a4c9bf2e29c55",
    # not replaced, but what the lean cycle relies on (attributes, the upgrade, shutdown, parse errors)
    "HttpToolsProtocol.__init__": "4f08999410347141",
    "HttpToolsProtocol.connection_made": "6efb565ff3d36b91",
    "HttpToolsProtocol.data_received": "010a7ae59a5d3b1a",
    "HttpToolsProtocol._should_upgrade": "8fcad1ab8e096739",
    "HttpToolsProtocol._get_upgrade": "7b1305aac7b87064",
    "HttpToolsProtocol.handle_websocket_upgrade": "179c4f769386ab89",
    "HttpToolsProtocol.shutdown": "d7351fa33f00d430",
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


_IDLE_TIMER = (
    "HttpToolsProtocol.on_response_complete",
    "HttpToolsProtocol._unset_keepalive_if_required",
    "HttpToolsProtocol.timeout_keep_alive_handler",
)
#: The lean request cycle replaces all of Uvicorn's cycle and the protocol methods that make and feed it.
LEAN_CYCLE = _reviewed(*(name for name in _REVIEWED if name not in _IDLE_TIMER))
ONE_IDLE_TIMER = _reviewed(*_IDLE_TIMER)


def uvicorn_protocol() -> type[Any]:
    """Uvicorn's httptools protocol class, its transport's writes joined (:class:`JoinedWrites`) and
    its requests run by :class:`~mockllm.server.hosts.uvicorn_cycle.LeanCycle` (where this Uvicorn allows)."""
    bases: tuple[type[Any], ...] = (LeanRequests, HttpToolsProtocol) if LEAN_CYCLE else (HttpToolsProtocol,)

    class MockllmProtocol(*bases):  # type: ignore[misc]
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
                # Uvicorn's cancels `timeout_keep_alive_task`, which only its on_response_complete
                # arms: replaced above, so there is never one to cancel.
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
