"""Turn an engine :class:`Outcome` and the provider's adapter into what goes on the wire: latency,
scripted errors, raw bodies, hangs, whole bodies and streams with their faults."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Iterable

from mockllm.runtime.engine.journal import REPLY_CHARS, Delivery
from mockllm.runtime.engine.outcome import Outcome
from mockllm.runtime.providers.base import Adapter, RenderContext, Rendered
from mockllm.runtime.providers.common import utf8_json, utf8_text
from mockllm.runtime.reply.plan import ErrorPlan, HangPlan, MessagePlan, RawPlan
from mockllm.runtime.request import ChatRequest
from mockllm.runtime.values import fast_frozen
from mockllm.server.http.streaming import Channel, Faults, coalesce, frames_before_error, write_frames
from mockllm.server.options import ServerOptions
from mockllm.server.shutdown import Shutdown, hold

log = logging.getLogger("mockllm.server")

NO_MATCH_CODE = "mockllm_no_match"
Record = Callable[[Delivery], None]
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")

_NAMES: dict[str, bytes] = {}  # header names already checked, as sent (lower-case ASCII)
_NAMES_LIMIT = 1024


def _name_bytes(name: str) -> bytes | None:
    raw = _NAMES.get(name)
    if raw is not None:
        return raw
    if not _TOKEN.match(name):
        return None
    raw = name.lower().encode("ascii")
    if len(_NAMES) < _NAMES_LIMIT:
        _NAMES[name] = raw
    return raw


def header_bytes(headers: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """ASGI header pairs. Names that are not HTTP tokens are dropped; CR, LF and NUL are removed from
    values, which are sent as UTF-8."""
    out: list[tuple[bytes, bytes]] = []
    for name, value in headers:
        raw = _name_bytes(name)
        if raw is None:
            log.warning("mockllm: dropped response header with an invalid name %r", name)
            continue
        out.append((raw, _value_bytes(value)))
    return out


def _value_bytes(value: object) -> bytes:
    """A header value as sent: CR and LF become spaces, NUL is removed, the ends are stripped, UTF-8."""
    clean = value if type(value) is str else str(value)
    if "\r" in clean or "\n" in clean or "\0" in clean:
        clean = clean.replace("\r", " ").replace("\n", " ").replace("\0", "")
    return utf8_text(clean.strip())


_MEDIA: dict[str, bytes] = {}  # media types seen, as header values


def response_head(
    rendered: Rendered, extra: Iterable[tuple[str, str]], length: int | None
) -> list[tuple[bytes, bytes]]:
    """The ASGI headers of a response: the rendered headers, then ``extra``; ``content-type`` first
    when neither gave one; with ``length``, any ``content-length`` given is replaced by the real one,
    last. Names are checked and values cleaned as :func:`header_bytes` does, in one pass."""
    out: list[tuple[bytes, bytes]] = []
    has_type = False
    names = _NAMES
    for headers in (rendered.headers, extra):
        for name, value in headers:
            raw = names.get(name) or _name_bytes(name)  # (inline: two calls fewer per header)
            if raw is None:
                log.warning("mockllm: dropped response header with an invalid name %r", name)
                continue
            if raw == b"content-type":
                has_type = True
            elif raw == b"content-length" and length is not None:
                continue
            if type(value) is str and value.isascii() and value.isprintable():  # no CR, LF or NUL: as is
                out.append((raw, value.strip().encode("ascii")))
            else:
                out.append((raw, _value_bytes(value)))
    if not has_type:
        media = _MEDIA.get(rendered.media_type)
        if media is None:
            media = header_bytes([("content-type", rendered.media_type)])[0][1]
            if len(_MEDIA) < _NAMES_LIMIT:
                _MEDIA[rendered.media_type] = media
        out.insert(0, (b"content-type", media))
    if length is not None:
        out.append((b"content-length", str(length).encode("ascii")))
    return out


async def send_whole(
    channel: Channel,
    rendered: Rendered,
    extra: Iterable[tuple[str, str]] = (),
    before_end: Callable[[], None] | None = None,
) -> int:
    """Send a non-streamed response in one body message; returns its status. ``before_end`` runs just
    before the body goes out (so the journal is final by the time the client has the answer)."""
    body = rendered.body
    await channel.start(rendered.status, response_head(rendered, extra, len(body)))
    if before_end is not None:
        before_end()
    await channel.end(body)
    return rendered.status


def debug_headers(outcome: Outcome) -> list[tuple[str, str]]:
    out = [("x-mockllm-conversation", outcome.conversation)]
    if outcome.scenario is not None and outcome.step is not None:
        out.append(("x-mockllm-step", f"{outcome.scenario}/{outcome.step}"))
    return out


def raw_rendered(plan: RawPlan) -> Rendered:
    """A `status N` / `body {json}` reply, sent as written (a string body is sent as text)."""
    status = plan.status
    if not plan.has_body:
        return Rendered(status=status, media_type="application/json")
    if isinstance(plan.body, str):
        return Rendered(status=status, media_type="text/plain; charset=utf-8", body=utf8_text(plan.body))
    body = utf8_json(json.dumps(plan.body, ensure_ascii=False))
    return Rendered(status=status, media_type="application/json", body=body)


def _faulted(reply: MessagePlan) -> bool:
    """Whether ``reply`` is cut short or ends in an error (sent through :func:`_faulted_whole` when whole)."""
    return reply.disconnect_after is not None or reply.stream_error is not None


class RenderAhead:
    """The reply rendered while the shared state store commits the turn it decided (its round trip to
    Redis, which one request at a time nothing else overlaps): called with that outcome, it renders a
    message plan's reply, and the head of a reply sent whole; :meth:`take` gives them back for the
    outcome committed when that is the one they were made for (another process may have moved the
    conversation on: the turn is decided again). Once the commit's answer is in, only the writes are
    left."""

    __slots__ = ("_adapter", "_chat", "_context", "_made")

    def __init__(self, adapter: Adapter, chat: ChatRequest, context: Callable[[str | None], RenderContext]) -> None:
        self._adapter = adapter
        self._chat = chat
        self._context = context
        # the last decision rendered, with its reply's head when the reply goes whole
        self._made: tuple[Outcome, RenderContext, Rendered, list[tuple[bytes, bytes]] | None] | None = None

    def __call__(self, outcome: Outcome) -> None:
        """Never raises: what cannot be rendered now is rendered (and fails) when the reply is sent."""
        plan = outcome.plan
        made = self._made
        if not isinstance(plan, MessagePlan) or (made is not None and made[0] is outcome):  # (a commit sent again)
            return
        try:
            ctx = self._context(outcome.response_id or None)
            rendered = self._adapter.render(plan, self._chat, ctx)
            head = None  # (with scripted headers, made when sent: an invalid name is reported once)
            if rendered.frames is None and not plan.headers and not _faulted(plan):
                head = response_head(rendered, debug_headers(outcome), len(rendered.body))
        except Exception:
            return
        self._made = (outcome, ctx, rendered, head)

    def take(self, outcome: Outcome) -> tuple[RenderContext, Rendered, list[tuple[bytes, bytes]] | None] | None:
        """The context, reply and head (None: made when it is sent) made for ``outcome``; None when the
        decision made ahead was not ``outcome``'s."""
        made = self._made
        if made is None:
            return None
        ahead = made[0]
        if ahead.plan is not outcome.plan or ahead.response_id != outcome.response_id:
            return None
        head = made[3]
        if head is not None and (ahead.conversation, ahead.scenario, ahead.step) != (
            outcome.conversation,
            outcome.scenario,
            outcome.step,
        ):
            head = None  # (the head names the conversation and step)
        return made[1], made[2], head


def reply_text(media_type: str, body: bytes) -> str:
    """What the journal keeps of a reply body: its first :data:`REPLY_CHARS` bytes as text, or for a
    binary body (audio, an image) a line saying what it was."""
    binary = _BINARY.get(media_type, "")
    if binary == "":
        binary = _binary_kind(media_type)
        if len(_BINARY) < _NAMES_LIMIT:
            _BINARY[media_type] = binary
    if binary is not None:
        return f"({len(body)} bytes of {binary})"
    return body[:REPLY_CHARS].decode("utf-8", "replace")


def _binary_kind(media_type: str) -> str | None:
    """The bare media type of a binary body (audio, an image, a video, octet-stream), None for text."""
    kind = media_type.split(";", 1)[0].strip().lower()
    if kind.startswith(("audio/", "image/", "video/")) or kind == "application/octet-stream":
        return kind
    return None


_BINARY: dict[str, str | None] = {}  # media types seen -> _binary_kind's answer (a third of reply_text's work)


@fast_frozen
class Answer:
    """One reply on its way: what the engine decided (``outcome``) for ``chat``, the adapter that renders
    it with ``ctx``, and how.

    ``arrived`` is when the request reached the server (``options.clock.monotonic()``): a scripted
    latency counts from then, so the time spent reading, matching and rendering (and waiting for the
    event loop under load) is part of it rather than added to it. ``offload``: render in a worker
    thread (for a large request, whose reply may be as large), so other requests are answered meanwhile.
    ``rendered_ahead``: the message plan's reply, already rendered with ``ctx``, and ``head_ahead`` its head
    when it is sent whole (:class:`RenderAhead`)."""

    outcome: Outcome
    chat: ChatRequest
    adapter: Adapter
    ctx: RenderContext
    arrived: float | None = None
    offload: bool = False
    rendered_ahead: Rendered | None = None
    head_ahead: list[tuple[bytes, bytes]] | None = None


async def deliver(answer: Answer, channel: Channel, options: ServerOptions, shutdown: Shutdown, record: Record) -> None:
    """Send the reply ``answer`` holds; never raises for anything the script asked. ``record`` is
    called once with how it went (:class:`Delivery`, for the journal): just before the response body
    ends, so the journal is final by the time the client has its answer; or, when the answer is cut
    or the client leaves, as soon as that is known, before the connection closes."""
    outcome, chat, adapter, ctx = answer.outcome, answer.chat, answer.adapter, answer.ctx
    rendered_ahead, head_ahead = answer.rendered_ahead, answer.head_ahead
    extra = debug_headers(outcome)
    plan = outcome.plan
    if plan is None:
        report = outcome.no_match
        message = report.message if report is not None else "mockllm: no step matched"
        log.warning("%s", message)
        no_match = adapter.render_error(404, message, ctx, NO_MATCH_CODE)
        delivery = Delivery(404, reply=reply_text(no_match.media_type, no_match.body))
        await send_whole(channel, no_match, extra, lambda: record(delivery))
        return
    if isinstance(plan, HangPlan):
        channel.watch()
        await _hang(channel, options, shutdown.stopping, adapter, ctx, extra, record)
        return

    extra.extend(plan.headers)
    rendered: Rendered
    reply: MessagePlan | None = None  # a stream's timing and faults come from a message only
    if isinstance(plan, ErrorPlan):
        rendered = adapter.render_error(plan.status, plan.message, ctx, plan.code)
    elif isinstance(plan, RawPlan):
        rendered = raw_rendered(plan)
    else:
        reply = plan
        if rendered_ahead is not None:
            rendered = rendered_ahead
        elif answer.offload:
            rendered = await asyncio.to_thread(adapter.render, plan, chat, ctx)
        else:
            rendered = adapter.render(plan, chat, ctx)

    if plan.latency_s > 0:
        channel.watch()
        arrived = answer.arrived
        wait = plan.latency_s if arrived is None else plan.latency_s - (options.clock.monotonic() - arrived)
        if wait > 0:
            await shutdown.sleep(wait)
        if channel.gone:
            record(Delivery(0, client_gone=True, note="client went away during latency"))
            return

    if rendered.frames is None:
        if reply is not None and _faulted(reply):
            await _faulted_whole(reply, rendered, adapter, ctx, channel, extra, record)
            return
        status = rendered.status
        body = rendered.body
        delivery = Delivery(status, reply=reply_text(rendered.media_type, body))
        if head_ahead is None or rendered is not rendered_ahead:
            head_ahead = response_head(rendered, extra, len(body))
        await channel.start(status, head_ahead)
        record(delivery)
        await channel.end(body)
        return

    # Frames come from Adapter.render only: errors and raw bodies are sent whole, above.
    assert reply is not None, "only a message plan is streamed"
    if reply.chunk_interval_s <= 0 and reply.disconnect_after is None and reply.stream_error is None:
        # Nothing spaces the frames or cuts the stream: the same bytes in one body message instead of
        # one per frame (one trip through the server instead of dozens; no watcher task needed).
        status = rendered.status
        await channel.start(status, response_head(rendered, extra, None))
        body = b"".join([frame.data for frame in rendered.frames])
        delivery = Delivery(status, reply=reply_text(rendered.media_type, body))
        record(delivery)
        await channel.end(body)
        return

    channel.watch()
    await channel.start(rendered.status, response_head(rendered, extra, None))
    frames = rendered.frames
    error_after = (reply.stream_error_after or 0) if reply.stream_error is not None else None
    error_frame = b""
    if reply.stream_error is not None and error_after is not None:
        error_frame = adapter.stream_error_frame(reply.stream_error, ctx, frames_before_error(frames, error_after))
    faults = Faults(disconnect_after=reply.disconnect_after, error_after=error_after, error_frame=error_frame)
    if reply.disconnect_after is None and reply.stream_error is None:
        frames = coalesce(frames)  # what goes out at the same instant, in one write
    result = await write_frames(
        frames,
        channel,
        interval_s=reply.chunk_interval_s,
        faults=faults,
        sleep=shutdown.sleep,
        clock=options.clock,
    )
    sent = result.content_sent
    said = reply_text(rendered.media_type, b"".join([frame.data for frame in rendered.frames]))
    if result.ending == "disconnect":
        # Return without ending the body: the server closes the connection mid-message.
        record(Delivery(rendered.status, note=f"disconnect after {sent} chunks", reply=said))
        return
    if result.ending == "client_gone":
        record(Delivery(rendered.status, client_gone=True, note=f"client went away after {sent} chunks", reply=said))
        return
    note = f"stream error after {sent} chunks" if result.ending == "stream_error" else None
    record(Delivery(rendered.status, note=note, reply=said))
    await channel.end()


async def _faulted_whole(
    plan: MessagePlan,
    rendered: Rendered,
    adapter: Adapter,
    ctx: RenderContext,
    channel: Channel,
    extra: list[tuple[str, str]],
    record: Record,
) -> None:
    """Stream faults asked of a client that did not stream: a disconnect sends half the declared
    body and cuts the connection; a stream error becomes an error response with its message."""
    if plan.disconnect_after is not None:
        body = rendered.body
        await channel.start(rendered.status, response_head(rendered, extra, len(body)))
        await channel.write(body[: len(body) // 2])
        record(Delivery(rendered.status, note="disconnect mid-body"))
        return
    error = adapter.render_error(500, plan.stream_error or "stream error", ctx)
    delivery = Delivery(error.status, note="stream error (the client did not stream)")
    await send_whole(channel, error, extra, lambda: record(delivery))


async def _hang(
    channel: Channel,
    options: ServerOptions,
    closing: asyncio.Event,
    adapter: Adapter,
    ctx: RenderContext,
    extra: list[tuple[str, str]],
    record: Record,
) -> None:
    """Send nothing until the client leaves, the server stops, or the hang limit passes.

    An ASGI app cannot close a connection without answering (the server would send a bare 500), so
    past the limit -- or when the server stops -- the client gets an explicit error in its provider's
    shape saying why, marked not to be retried."""
    status, note = await hold(options, closing, channel.wait_gone(options.hang_limit_s + 1.0))
    if channel.gone:
        record(Delivery(0, client_gone=True, note="hang: the client gave up"))
        return
    delivery = Delivery(status, note=note)
    rendered = adapter.render_error(status, f"mockllm: {note}", ctx)
    headers = [*extra, ("x-should-retry", "false"), ("connection", "close")]
    await send_whole(channel, rendered, headers, lambda: record(delivery))
