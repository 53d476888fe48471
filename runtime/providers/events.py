"""The provider-neutral stream of a reply: what a streamed answer says, in order, before any API's
framing. Every adapter streams by framing these events (:class:`Framer`), so the order of thinking,
text, refusal and tool calls, the fragments `N chunks` made, `interleave calls` and which frames count
as content are decided here once; latency, chunk spacing, cut connections and mid-stream errors are
the server's (``server/http/responder.py``, ``server/http/streaming.py``), written once for every provider.

The events of one reply, in order (``*``: zero or more; ``?``: at most one)::

    Start
    (ThinkingStart ThinkingDelta* ThinkingEnd)?   -- when the plan has thinking (even empty)
    TextStart TextDelta* TextEnd                  -- always (no deltas when there is no text)
    Refusal?                                      -- the whole refusal, when there is one
    per tool call: ToolCallStart ToolArgsDelta* ToolCallEnd
                   (interleaved: every Start, then the deltas round-robin, then every End)
    Finish Usage End

A framer turns each event into zero or more :class:`~mockllm.runtime.providers.base.Frame`; the frames
of delta events (thinking, text, refusal, argument pieces) carry ``content=True``: they are what
`N chunks` counts and what chunk spacing separates."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from mockllm.runtime.providers.base import Frame
from mockllm.runtime.providers.common import pieces
from mockllm.runtime.reply.plan import FinishReason, MessagePlan, PlannedToolCall
from mockllm.runtime.values import fast_frozen


@fast_frozen
class Start:
    """The answer begins (OpenAI's role chunk, Anthropic's ``message_start``)."""


@fast_frozen
class ThinkingStart:
    """A thinking block begins."""


@fast_frozen
class ThinkingDelta:
    """A piece of thinking: content."""

    text: str


@fast_frozen
class ThinkingEnd:
    """The thinking block ends; ``text`` is all of it."""

    text: str


@fast_frozen
class TextStart:
    """The answer's text begins (sent even when there is no text: framers decide whether to show it)."""


@fast_frozen
class TextDelta:
    """A piece of the answer's text: content."""

    text: str


@fast_frozen
class TextEnd:
    """The text ends; ``text`` is all of it."""

    text: str


@fast_frozen
class Refusal:
    """The whole refusal (framers split it themselves where their API streams it in pieces)."""

    text: str


@fast_frozen
class ToolCallStart:
    """Tool call ``index`` begins (its id and name are known)."""

    index: int
    call: PlannedToolCall


@fast_frozen
class ToolArgsDelta:
    """A fragment of call ``index``'s arguments JSON: content. The fragments join to ``call.arguments_json``."""

    index: int
    call: PlannedToolCall
    text: str


@fast_frozen
class ToolCallEnd:
    """Tool call ``index`` is complete (APIs that send calls whole send it here)."""

    index: int
    call: PlannedToolCall


@fast_frozen
class Finish:
    """Why the answer ended."""

    reason: FinishReason


@fast_frozen
class Usage:
    """The token counts of the exchange."""

    input_tokens: int
    output_tokens: int


@fast_frozen
class End:
    """Nothing follows (OpenAI's ``[DONE]``, Anthropic's ``message_stop``)."""


Event = (
    Start
    | ThinkingStart
    | ThinkingDelta
    | ThinkingEnd
    | TextStart
    | TextDelta
    | TextEnd
    | Refusal
    | ToolCallStart
    | ToolArgsDelta
    | ToolCallEnd
    | Finish
    | Usage
    | End
)


def reply_events(plan: MessagePlan, *, interleave: bool | None = None) -> Iterator[Event]:
    """The events of ``plan``, in order. ``interleave`` (default: the plan's `interleave calls`) sends
    several calls' argument fragments round-robin; APIs whose calls cannot overlap pass False."""
    yield Start()
    if plan.thinking is not None:
        yield ThinkingStart()
        for piece in pieces(plan.thinking_chunks, plan.thinking):
            yield ThinkingDelta(piece)
        yield ThinkingEnd(plan.thinking)
    yield TextStart()
    for piece in pieces(plan.text_chunks, plan.text):
        yield TextDelta(piece)
    yield TextEnd(plan.text)
    if plan.refusal is not None:
        yield Refusal(plan.refusal)
    calls = [(i, c, pieces(c.argument_chunks, c.arguments_json)) for i, c in enumerate(plan.tool_calls)]
    if (plan.interleave_calls if interleave is None else interleave) and len(calls) > 1:
        yield from (ToolCallStart(i, c) for i, c, _ in calls)
        for round_ in range(max(len(parts) for _, _, parts in calls)):
            yield from (ToolArgsDelta(i, c, parts[round_]) for i, c, parts in calls if round_ < len(parts))
        yield from (ToolCallEnd(i, c) for i, c, _ in calls)
    else:
        for i, c, parts in calls:
            yield ToolCallStart(i, c)
            yield from (ToolArgsDelta(i, c, piece) for piece in parts)
            yield ToolCallEnd(i, c)
    yield Finish(plan.finish)
    yield Usage(plan.input_tokens, plan.output_tokens)
    yield End()


class Blocks:
    """The content blocks of a framed answer, for framers whose API numbers them (Anthropic, Bedrock
    Converse, Cohere): ``index`` is the current block's, ``open`` whether it has begun. Subclass it."""

    def __init__(self) -> None:
        self.index = 0
        self.open = False

    def closed(self, frame: Frame) -> Frame:
        """``frame``, which ends the current block; the next block is current from now on."""
        self.index += 1
        self.open = False
        return frame


class Framer(Protocol):
    """One streamed answer's framing in one API's format: made per response (it may keep state, such
    as the index of the open content block), fed every event in order."""

    def frame(self, event: Event) -> list[Frame]:
        """The frames ``event`` becomes (none, for events the API does not send)."""
        ...


def stream_frames(plan: MessagePlan, framer: Framer, *, interleave: bool | None = None) -> tuple[Frame, ...]:
    """Every frame of ``plan``'s stream, as ``framer`` frames its events."""
    return tuple(frame for event in reply_events(plan, interleave=interleave) for frame in framer.frame(event))
