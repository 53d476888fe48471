"""One realtime session on its WebSocket, whatever the protocol: read client frames, carry out the
protocol's actions, run each response through the state store (so it is matched, journalled, verified
and shown like a chat request), and send what the protocol's renderer frames, with the scripted latency,
spacing and faults.

Three tasks per session: the reader (this coroutine), the sender (the only one that writes to the
socket, from a bounded outbox, so a client that never reads holds at most :data:`OUTBOX` frames and
then stalls only its own session) and, while one runs, the response. A client that leaves ends all
three; a response it leaves mid-way is journalled as ``client_gone``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mockllm.errors import MockllmError, StateUnavailable
from mockllm.runtime.engine.journal import Delivery
from mockllm.runtime.realtime import beats as b
from mockllm.runtime.realtime.protocol import Cancel, Close, Out, RealtimeProtocol, Respond, Send
from mockllm.runtime.realtime.session import Ask, Session
from mockllm.server.shutdown import hold

if TYPE_CHECKING:
    from starlette.types import Receive
    from starlette.types import Send as AsgiSend

    from mockllm.server.http.server_state import ServerState

log = logging.getLogger("mockllm.server")
#: frames waiting for a slow client, per session; past this its response (and reader) wait
OUTBOX = 256
#: how much of a response's frames the journal keeps as its reply
REPLY_KEEP = 4096
_CLOSE = object()  # the outbox's last item


class Gone(MockllmError):
    """The client left (or the socket failed): the session ends."""


class Driver:
    def __init__(self, state: ServerState, protocol: RealtimeProtocol, session: Session, send: AsgiSend) -> None:
        self.state = state
        self.protocol = protocol
        self.session = session
        self._send = send
        self.outbox: asyncio.Queue[Any] = asyncio.Queue(OUTBOX)
        self.gone = False
        self.closed = False
        self.active: str | None = None  # the running response's id (the protocol's)
        self.response: asyncio.Task[None] | None = None
        self.cancelling = False
        self.cancel_reason = "client_cancelled"

    # ---- sending ----------------------------------------------------------------------------------

    async def put(self, frames: Sequence[Out]) -> None:
        for frame in frames:
            if self.gone or self.closed:
                raise Gone
            if type(frame) is Close:  # the protocol ends the session here (Gemini Live's errors)
                await self.close(frame.code, frame.reason)
                return
            await self.outbox.put(frame)

    async def close(self, code: int, reason: str = "") -> None:
        if not self.closed and not self.gone:
            self.closed = True
            await self.outbox.put((_CLOSE, code, reason))

    async def sender(self) -> None:
        send = self._send
        try:
            while True:
                item = await self.outbox.get()
                if type(item) is str:
                    await send({"type": "websocket.send", "text": item})
                elif type(item) is bytes:
                    await send({"type": "websocket.send", "bytes": item})
                else:
                    _, code, reason = item
                    await send({"type": "websocket.close", "code": code, "reason": reason})
                    return
        except Exception:  # the socket is gone under us (hosts raise their own errors): end quietly
            self.gone = True
            while not self.outbox.empty():  # free whoever waits to put
                self.outbox.get_nowait()

    # ---- the session ----------------------------------------------------------------------------------

    async def run(self, receive: Receive, query: Mapping[str, str]) -> None:
        sender = asyncio.ensure_future(self.sender())
        stopping = asyncio.ensure_future(self._stop_watch())
        try:
            await self.put(self.protocol.open(self.session, query))
            while not self.closed:
                message = await receive()
                kind = message["type"]
                if kind == "websocket.disconnect":
                    self.gone = True
                    break
                if kind != "websocket.receive":
                    continue
                frame = message.get("text")
                if frame is None:
                    frame = message.get("bytes") or b""
                for action in self.protocol.read(frame, self.session, self.active):
                    await self._act(action)
        except Gone:
            pass
        except Exception:
            log.exception("mockllm: internal error in realtime session %s", self.session.id)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.close(1011, "mockllm: internal error"), 1.0)
        finally:
            stopping.cancel()
            if self.response is not None and not self.response.done():
                self.response.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self.response
            if not self.gone and not self.closed:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.close(1000), 1.0)
            if self.gone or not self.closed:
                sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(sender, 5.0)

    async def _stop_watch(self) -> None:
        await self.state.shutdown.stopping.wait()
        await self.state.shutdown.finishing.wait()  # responses under way get the grace period
        if self.response is not None and not self.response.done():
            self.response.cancel()
        with contextlib.suppress(Gone):
            await self.close(1001, "mockllm: the server is stopping")

    async def _act(self, action: Any) -> None:
        if type(action) is Send:
            await self.put(action.frames)
        elif type(action) is Respond:
            self.active = "pending"
            self.cancelling = False
            self.response = asyncio.ensure_future(self._respond(action.ask))
        elif type(action) is Cancel:
            if self.response is not None and not self.response.done():
                self.cancelling = True
                self.cancel_reason = action.reason
                self.response.cancel()
                await asyncio.wait({self.response})  # ended (as cancelled) before the next action starts one
        elif type(action) is Close:
            await self.close(action.code, action.reason)

    # ---- one response ------------------------------------------------------------------------------

    async def _respond(self, ask: Ask) -> None:
        state, session = self.state, self.session
        session.responses += 1
        chat = session.request(ask)
        state.note_model(chat.model)
        store = state.store
        try:
            if store.shared:
                outcome = await asyncio.shield(store.handle(chat))  # decided and journalled even if cancelled
            else:  # in memory: the engine is called directly, as for chat requests (nothing to cancel)
                outcome = state.engine.handle(chat)
        except StateUnavailable as exc:
            self.active = None
            await self.put(self.protocol.failed(session, 503, str(exc), "service_unavailable"))
            return
        except asyncio.CancelledError:
            self.active = None
            if self.cancelling and not self.gone:
                self.cancelling = False
                return
            raise
        output = ask.output or session.settings.output
        no_match = outcome.no_match.message if outcome.no_match is not None else ""
        response = b.plan_response(outcome.plan, output, no_match)
        renderer = self.protocol.renderer(session, ask, outcome.response_id)
        self.active = getattr(renderer, "id", outcome.response_id)
        await self._play(renderer, response, outcome.entry_id)

    async def _play(self, renderer: Any, response: b.Response, entry: int) -> None:
        state, session = self.state, self.session
        kept: list[str] = []
        size = 0
        sent = 0
        status = 200
        note: str | None = None
        done = b.Done("cancelled", "client_cancelled")
        try:
            for beat in response.beats:
                t = type(beat)
                if t is b.Wait:
                    assert isinstance(beat, b.Wait)
                    await state.shutdown.sleep(beat.seconds)
                    continue
                if t is b.Cut:
                    note = f"disconnect after {sent} chunks"
                    self._settle(entry, Delivery(200, note=note, reply="".join(kept) or None))
                    entry = 0
                    await self.close(1011, "mockllm: disconnect (scripted)")
                    return
                if t is b.Hang:
                    status, note = await self._hang()
                    await self.put(self.protocol.failed(session, status, f"mockllm: {note}"))
                    if not self.closed:  # (a protocol whose errors close the session has ended it)
                        await self.put(renderer.cancelled(b.Done("failed", "error", error=f"mockllm: {note}")))
                    break
                if isinstance(beat, b.CONTENT):
                    if sent and response.spacing_s > 0:
                        await state.options.sleep(response.spacing_s)
                    sent += 1
                elif t is b.Failed:
                    assert isinstance(beat, b.Failed)
                    status = beat.status
                elif t is b.Done:
                    assert isinstance(beat, b.Done)
                    done = beat
                frames = renderer.frame(beat)
                if size < REPLY_KEEP:
                    for f in frames:
                        if type(f) is str and size < REPLY_KEEP:
                            kept.append(f + "\n")
                            size += len(f) + 1
                await self.put(frames)
                if self.closed:  # the protocol closed the session (an error, as Gemini Live reports one)
                    break
        except asyncio.CancelledError:
            if self.cancelling and not self.gone:  # the client's response.cancel: end it as cancelled
                self.cancelling = False
                reason = self.cancel_reason
                with contextlib.suppress(Gone):
                    await self.put(renderer.cancelled(b.Done("cancelled", reason, done.input_tokens)))
                note = "cancelled by the client" if reason == "client_cancelled" else f"cancelled: {reason}"
            else:
                self._settle(entry, Delivery(0, client_gone=True, note="the client left mid-response"))
                entry = 0
                raise
        except Gone:
            self._settle(entry, Delivery(0, client_gone=True, note="the client left mid-response"))
            entry = 0
        finally:
            self.active = None
            if entry:
                self._settle(entry, Delivery(status, note=note, reply="".join(kept)[:REPLY_KEEP] or None))

    async def _hang(self) -> tuple[int, str]:
        """A ``hang`` step: nothing until the client cancels or leaves, the server stops or its hang limit
        passes (then the protocol's error saying which)."""
        return await hold(self.state.options, self.state.shutdown.stopping)

    def _settle(self, entry: int, delivery: Delivery) -> None:
        if not entry:
            return
        try:
            self.state.store.settle(entry, delivery)
        except Exception:
            log.exception("mockllm: could not record the end of journal entry %s", entry)
