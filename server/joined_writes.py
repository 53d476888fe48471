"""Uvicorn's httptools protocol with each response's head and body in one write.

Uvicorn writes a response's status line and headers to the socket as soon as the app sends
``http.response.start``, and the body in a second write: two system calls per response, and on
loopback two wake-ups of the client, where one would do. The transport given to Uvicorn's protocol
here holds a write until the next one or the end of the event loop's turn, whichever comes first:
a head followed at once by its body goes out in one write; a stream's head, or a chunk sent after a
pause, goes out at the end of the turn it was written in, as before; when the client half-closes,
what is held goes out before the loop closes the connection. Nothing else changes: every other call
is the transport's own."""

from __future__ import annotations

import asyncio
from typing import Any, cast


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

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + len(self._held or b"")

    def __getattr__(self, name: str) -> Any:  # everything else: the transport's
        return getattr(self._transport, name)


def joined_writes_protocol() -> type[Any]:
    """Uvicorn's httptools protocol class, its transport's writes joined (:class:`JoinedWrites`)."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class JoinedWritesProtocol(HttpToolsProtocol):
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

    return JoinedWritesProtocol
