"""The frame writer: spacing between content frames, scripted faults, and noticing a client that left.

:func:`write_frames` is pure scheduling over two seams -- a :class:`Sink` that writes bytes and knows
whether the client is still there, and a ``sleep`` coroutine -- so its timing logic is tested without
sockets or real sleeping. :class:`Channel` is the real sink over an ASGI connection."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Sequence
from typing import Literal, Protocol

from starlette.types import Receive, Send

from mockllm.runtime.clock import Clock
from mockllm.runtime.providers.base import Frame
from mockllm.runtime.values import fast_frozen
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


@fast_frozen
class Faults:
    """What the script asked to go wrong mid-stream, counted in content frames."""

    disconnect_after: int | None = None
    error_after: int | None = None
    error_frame: bytes = b""


@fast_frozen
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


def frames_before_error(frames: Sequence[Frame], error_after: int) -> int:
    """How many frames :func:`write_frames` sends before the error frame of ``error after N chunks``."""
    content = 0
    last_content = max((i for i, f in enumerate(frames) if f.content), default=-1)
    for i, frame in enumerate(frames):
        if content >= error_after or i > last_content:
            return i
        if frame.content:
            content += 1
    return len(frames)


def coalesce(frames: Sequence[Frame]) -> tuple[Frame, ...]:
    """The frames that :func:`write_frames` sends at the same instant, joined: each content frame with
    the non-content frames that follow it (they go out right after it), the leading non-content frames
    with the first content frame. Same bytes, same timing, one write per instant instead of one per
    frame (for `stream 5 chunks, 20ms apart`: 5 writes instead of 8). Only for streams without
    scripted faults, which count and cut frame by frame."""
    groups: list[list[Frame]] = []
    has_content = False  # whether the last group holds its content frame yet
    for frame in frames:
        if not groups or (frame.content and has_content):
            groups.append([frame])
            has_content = frame.content
        else:
            groups[-1].append(frame)
            has_content = has_content or frame.content
    return tuple(
        g[0] if len(g) == 1 else Frame(b"".join(f.data for f in g), content=any(f.content for f in g)) for g in groups
    )


async def _error(sink: Sink, faults: Faults, content: int, sent: int) -> StreamResult:
    if sink.gone:
        return StreamResult("client_gone", content, sent)
    await sink.write(faults.error_frame)
    return StreamResult("stream_error", content, sent + 1)


DRAIN_CAP = 256 * 1024 * 1024  # an unread request body is dropped up to this, then the connection closes


class Channel:
    """One ASGI HTTP exchange: sends the response, drops whatever of the request body was left unread
    before the response starts, and -- once :meth:`watch` was called -- watches ``receive`` for
    ``http.disconnect`` in the background.

    Watching costs a task per request, so only replies that take time (latency, streams, hangs)
    start it; a reply sent at once has nothing to notice."""

    __slots__ = (
        "_clock",
        "_event",
        "_gone",
        "_receive",
        "_send",
        "_watch",
        "body_done",
        "ended",
        "first_byte",
        "started",
        "status",
    )

    def __init__(self, receive: Receive, send: Send, clock: Clock | None = None) -> None:
        self._receive = receive
        self._send = send
        self._clock = clock  # when given, the response's start is timed: first_byte (monotonic seconds)
        self.first_byte: float | None = None
        self._gone = False
        self._event: asyncio.Event | None = None  # created by watch(), for wait_gone()
        self._watch: asyncio.Task[None] | None = None
        self.body_done = False  # the request body was read to its end (the caller says so)
        self.started = False
        self.status = 0
        self.ended = False

    def watch(self) -> None:
        """Start watching for the client going away (only once the body has been read)."""
        if self._watch is None:
            if self._event is None:
                self._event = asyncio.Event()
                if self._gone:
                    self._event.set()
            self._watch = asyncio.get_running_loop().create_task(self._watch_disconnect())

    def _set_gone(self) -> None:
        self._gone = True
        if self._event is not None:
            self._event.set()

    async def _watch_disconnect(self) -> None:
        with contextlib.suppress(Exception):
            while True:
                message = await self._receive()
                if message.get("type") == "http.disconnect":
                    break
        self._set_gone()

    async def close(self) -> None:
        if self._watch is not None and not self._watch.done():
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watch

    @property
    def gone(self) -> bool:
        return self._gone

    async def wait_gone(self, timeout: float) -> bool:
        """Wait until the client goes away or ``timeout`` passes; True if it went away."""
        self.watch()
        assert self._event is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout)
        return self.gone

    async def _drain(self) -> bool:
        """Read and drop the rest of the request body (Hypercorn closes a keep-alive connection whose
        request was not fully received, and the client's next request on it would fail). False when
        more than :data:`DRAIN_CAP` bytes were left: the response then says ``connection: close``."""
        seen = 0
        while seen <= DRAIN_CAP:
            message = await self._receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                self.body_done = True
                return True
            seen += len(message.get("body", b""))
        return False

    async def start(self, status: int, headers: Iterable[tuple[bytes, bytes]]) -> None:
        head = headers if type(headers) is list else list(headers)  # a list is sent as given, not copied
        if not self.body_done and self._watch is None and not await self._drain():
            head.append((b"connection", b"close"))
        self.started = True
        self.status = status
        if self._clock is not None:
            self.first_byte = self._clock.monotonic()
        await self._send({"type": "http.response.start", "status": status, "headers": head})

    async def write(self, data: bytes) -> None:
        if self._gone:
            return
        try:
            await self._send({"type": "http.response.body", "body": data, "more_body": True})
        except Exception:  # the connection is already gone
            self._set_gone()

    async def end(self, data: bytes = b"") -> None:
        self.ended = True
        if self._gone:
            return
        try:
            await self._send({"type": "http.response.body", "body": data, "more_body": False})
        except Exception:
            self._set_gone()
