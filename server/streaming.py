"""The frame writer: spacing between content frames, scripted faults, and noticing a client that left.

:func:`write_frames` is pure scheduling over two seams -- a :class:`Sink` that writes bytes and knows
whether the client is still there, and a ``sleep`` coroutine -- so its timing logic is tested without
sockets or real sleeping. :class:`Channel` is the real sink over an ASGI connection."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Sequence
from typing import Literal, Protocol

import attrs
from starlette.types import Receive, Send

from mockllm.runtime.clock import Clock
from mockllm.runtime.providers.base import Frame
from mockllm.server.options import Sleep

Ending = Literal["complete", "disconnect", "stream_error", "client_gone"]


class Sink(Protocol):
    @property
    def gone(self) -> bool:
        """True once the client has gone away."""
        ...

    async def write(self, data: bytes) -> None:
        """Send one frame's bytes and flush them."""
        ...


@attrs.frozen
class Faults:
    """What the script asked to go wrong mid-stream, counted in content frames."""

    disconnect_after: int | None = None
    error_after: int | None = None
    error_frame: bytes = b""


@attrs.frozen
class StreamResult:
    ending: Ending
    content_sent: int  # content frames the client was sent
    frames_sent: int


async def write_frames(
    frames: Sequence[Frame],
    sink: Sink,
    *,
    interval_s: float,
    faults: Faults,
    sleep: Sleep,
    clock: Clock,
) -> StreamResult:
    """Write ``frames`` in order. Content frames after the first are spaced ``interval_s`` apart
    (measured from the first content frame, so delays do not accumulate); other frames go out at once.

    Once ``disconnect_after`` content frames were sent the writer stops before the next frame (the
    caller then cuts the connection, no terminal event); once ``error_after`` were sent it writes
    ``error_frame`` instead of the next frame and stops. Either also fires when the stream has fewer
    content frames than N: before the frames that would end it."""
    content = 0
    sent = 0
    first_at: float | None = None
    last_content = max((i for i, f in enumerate(frames) if f.content), default=-1)
    for i, frame in enumerate(frames):
        ending = i > last_content  # the frames that finish the stream
        if faults.disconnect_after is not None and (content >= faults.disconnect_after or ending):
            return StreamResult("disconnect", content, sent)
        if faults.error_after is not None and (content >= faults.error_after or ending):
            return await _error(sink, faults, content, sent)
        if frame.content:
            if first_at is None:
                first_at = clock.monotonic()
            elif interval_s > 0:
                delay = first_at + content * interval_s - clock.monotonic()
                if delay > 0:
                    await sleep(delay)
        if sink.gone:
            return StreamResult("client_gone", content, sent)
        await sink.write(frame.data)
        sent += 1
        if frame.content:
            content += 1
        if sink.gone:
            return StreamResult("client_gone", content, sent)
    if faults.disconnect_after is not None:
        return StreamResult("disconnect", content, sent)
    if faults.error_after is not None:
        return await _error(sink, faults, content, sent)
    return StreamResult("complete", content, sent)


async def _error(sink: Sink, faults: Faults, content: int, sent: int) -> StreamResult:
    if sink.gone:
        return StreamResult("client_gone", content, sent)
    await sink.write(faults.error_frame)
    return StreamResult("stream_error", content, sent + 1)


class Channel:
    """One ASGI HTTP exchange after the request body was read: sends the response and watches
    ``receive`` for ``http.disconnect`` in the background."""

    def __init__(self, receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send
        self._gone = asyncio.Event()
        self._watch: asyncio.Task[None] | None = None
        self.started = False
        self.status = 0
        self.ended = False

    def watch(self) -> None:
        """Start watching for the client going away (call once the body has been read)."""
        if self._watch is None:
            self._watch = asyncio.get_running_loop().create_task(self._watch_disconnect())

    async def _watch_disconnect(self) -> None:
        with contextlib.suppress(Exception):
            while True:
                message = await self._receive()
                if message.get("type") == "http.disconnect":
                    break
        self._gone.set()

    async def close(self) -> None:
        if self._watch is not None and not self._watch.done():
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watch

    @property
    def gone(self) -> bool:
        return self._gone.is_set()

    async def wait_gone(self, timeout: float) -> bool:
        """Wait until the client goes away or ``timeout`` passes; True if it went away."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._gone.wait(), timeout)
        return self.gone

    async def start(self, status: int, headers: Iterable[tuple[bytes, bytes]]) -> None:
        self.started = True
        self.status = status
        await self._send({"type": "http.response.start", "status": status, "headers": list(headers)})

    async def write(self, data: bytes) -> None:
        if self.gone:
            return
        try:
            await self._send({"type": "http.response.body", "body": data, "more_body": True})
        except Exception:  # the connection is already gone
            self._gone.set()

    async def end(self, data: bytes = b"") -> None:
        self.ended = True
        if self.gone:
            return
        try:
            await self._send({"type": "http.response.body", "body": data, "more_body": False})
        except Exception:
            self._gone.set()
