"""A realtime response as beats: the engine's plan for one response, in the order a protocol sends it,
before any protocol's framing.

The beats of a planned answer (``*``: zero or more; ``?``: at most one)::

    Begin Wait?                                   -- the response exists; the scripted latency
    (MessageStart (TextDelta* | AudioDelta*) MessageEnd)?
                                                  -- text, or audio with its transcript
    per tool call: CallStart CallDelta* CallEnd
    Done                                          -- status and usage

A scripted ``error`` is ``Wait? Failed`` (no response at all: the protocol's error event), a
``status``/``body`` reply ``Wait? Raw``, ``hang`` is ``Begin Hang`` (a response that never goes on).
Mid-response faults stand where the script puts them, counted in content beats (deltas): ``Cut``
(``disconnect``: the socket closes there) or ``StreamError`` followed by a failed ``Done``. The driver
waits :attr:`Response.spacing_s` before every content beat but the first, and sends the frames the
protocol's renderer makes of each beat."""

from __future__ import annotations

from typing import Any, Literal

from mockllm.runtime.media import audio as sound
from mockllm.runtime.realtime.session import Output
from mockllm.runtime.reply.plan import ErrorPlan, HangPlan, MessagePlan, Plan, PlannedToolCall, RawPlan
from mockllm.runtime.values import fast_frozen

Status = Literal["completed", "incomplete", "failed", "cancelled"]
#: audio tokens a second of speech costs (as the transcription usage counts them)
AUDIO_TOKENS_PER_SECOND = 10


@fast_frozen
class Begin:
    """The response begins (OpenAI's ``response.created``)."""


@fast_frozen
class Wait:
    """The scripted latency: nothing is sent for ``seconds``."""

    seconds: float


@fast_frozen
class MessageStart:
    """The assistant's message begins, with a text or an audio part."""

    output: Output


@fast_frozen
class TextDelta:
    """A piece of the text: content."""

    text: str


@fast_frozen
class AudioDelta:
    """A piece of the audio (pcm16, 24 kHz, mono) and the piece of its transcript it says: content."""

    pcm: bytes
    transcript: str


@fast_frozen
class MessageEnd:
    """The message ends: ``text`` is all of its text (or transcript)."""

    output: Output
    text: str


@fast_frozen
class CallStart:
    index: int
    call: PlannedToolCall


@fast_frozen
class CallDelta:
    """A fragment of call ``index``'s arguments JSON: content."""

    index: int
    call: PlannedToolCall
    text: str


@fast_frozen
class CallEnd:
    index: int
    call: PlannedToolCall


@fast_frozen
class Done:
    """The response ends: its status (``reason`` says why when not completed) and usage."""

    status: Status = "completed"
    reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    audio_tokens: int = 0  # of ``output_tokens``, those of audio
    error: str | None = None  # a failed response's error message


@fast_frozen
class Failed:
    """A scripted error (``error 429 "…"``) or no step matching: the protocol's error event, no response."""

    status: int
    message: str
    code: str | None = None


@fast_frozen
class StreamError:
    """A scripted mid-response error: the protocol's error event; a failed ``Done`` follows."""

    message: str


@fast_frozen
class Raw:
    """A ``status``/``body`` reply: ``body`` sent as one frame exactly as written (JSON, or a string as text)."""

    body: Any


@fast_frozen
class Cut:
    """``disconnect``: the socket closes here, with nothing more sent."""


@fast_frozen
class Hang:
    """``hang``: nothing is sent until the client cancels or leaves, or the server's hang limit passes."""


Beat = (
    Begin
    | Wait
    | MessageStart
    | TextDelta
    | AudioDelta
    | MessageEnd
    | CallStart
    | CallDelta
    | CallEnd
    | Done
    | Failed
    | StreamError
    | Raw
    | Cut
    | Hang
)
#: the beats that count as content: what `N chunks` counts and chunk spacing separates
CONTENT = (TextDelta, AudioDelta, CallDelta)


@fast_frozen
class Response:
    """One response, planned: its beats in order, and the spacing between content beats."""

    beats: tuple[Beat, ...]
    spacing_s: float = 0.0


def pieces(chunks: tuple[str, ...], whole: str) -> tuple[str, ...]:
    """The planned chunks, or the whole text as one piece when the plan gave none."""
    return chunks if chunks else ((whole,) if whole else ())


def pcm_of(data: bytes) -> bytes:
    """A scripted audio file as pcm16 samples: a WAV file's samples, other bytes as they are."""
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        at = 12
        while at + 8 <= len(data):
            size = int.from_bytes(data[at + 4 : at + 8], "little")
            if data[at : at + 4] == b"data":
                return data[at + 8 : at + 8 + size]
            at += 8 + size + (size & 1)
    return data


def split_audio(pcm: bytes, parts: int) -> list[bytes]:
    """``pcm`` in ``parts`` slices of whole samples (the last takes the rest); they join to ``pcm``."""
    samples = len(pcm) // 2
    step = max(1, samples // max(1, parts))
    out = [pcm[i * step * 2 : (i + 1) * step * 2] for i in range(max(1, parts) - 1)]
    out.append(pcm[(max(1, parts) - 1) * step * 2 :])
    return out


def plan_response(plan: Plan | None, output: Output, no_match: str = "") -> Response:
    """The beats of the engine's ``plan`` for a response whose output is ``output`` (``plan`` None:
    nothing matched and there is no fallback; ``no_match`` says why)."""
    if plan is None:
        return Response((Failed(404, no_match or "mockllm: no step matched", "no_match"),))
    if isinstance(plan, HangPlan):
        return Response((Begin(), Hang()))
    if isinstance(plan, ErrorPlan):
        lead: tuple[Beat, ...] = (Wait(plan.latency_s),) if plan.latency_s > 0 else ()
        return Response((*lead, Failed(plan.status, plan.message, plan.code)))
    if isinstance(plan, RawPlan):
        lead = (Wait(plan.latency_s),) if plan.latency_s > 0 else ()
        return Response((*lead, Raw(plan.body if plan.has_body else "")))
    return Response(_message_beats(plan, output), plan.chunk_interval_s)


def _message_beats(plan: MessagePlan, output: Output) -> tuple[Beat, ...]:
    body: list[Beat] = []
    text = plan.text if plan.refusal is None else (plan.text + plan.refusal)
    chunks = list(pieces(plan.text_chunks, plan.text)) if plan.refusal is None else [text]
    audio_tokens = 0
    has_audio = plan.audio is not None or plan.audio_seconds is not None
    if text or has_audio or not plan.tool_calls:
        body.append(MessageStart(output))
        if output == "audio":
            if plan.audio is not None:
                pcm = pcm_of(plan.audio)
            else:
                pcm = sound.speak(text, "pcm", seconds=plan.audio_seconds)
            audio_tokens = max(1, round(len(pcm) / 2 / sound.PCM_RATE * AUDIO_TOKENS_PER_SECOND))
            said = [c for c in chunks if c] or [""]
            body += [AudioDelta(p, t) for p, t in zip(split_audio(pcm, len(said)), said, strict=True)]
        else:
            body += [TextDelta(c) for c in chunks if c]
        body.append(MessageEnd(output, text))
    for i, call in enumerate(plan.tool_calls):
        body.append(CallStart(i, call))
        body += [CallDelta(i, call, piece) for piece in pieces(call.argument_chunks, call.arguments_json)]
        body.append(CallEnd(i, call))
    status: Status = "completed"
    reason = None
    if plan.finish == "length":
        status, reason = "incomplete", "max_output_tokens"
    elif plan.finish == "content_filter":
        status, reason = "incomplete", "content_filter"
    done = Done(status, reason, plan.input_tokens, plan.output_tokens + audio_tokens, audio_tokens)
    if plan.disconnect_after is not None:
        body = _insert(body, plan.disconnect_after, Cut())
        body = body[: body.index(Cut()) + 1]  # nothing after the cut
    elif plan.stream_error is not None:
        at = plan.stream_error_after or 0
        body = _insert(body, at, StreamError(plan.stream_error))
        body = body[: body.index(StreamError(plan.stream_error)) + 1]
        done = Done("failed", "error", plan.input_tokens, plan.output_tokens, audio_tokens, plan.stream_error)
    if body and isinstance(body[-1], Cut):
        return (Begin(), *((Wait(plan.latency_s),) if plan.latency_s > 0 else ()), *body)
    lead: tuple[Beat, ...] = (Begin(), Wait(plan.latency_s)) if plan.latency_s > 0 else (Begin(),)
    return (*lead, *body, done)


def _insert(beats: list[Beat], after: int, beat: Beat) -> list[Beat]:
    """``beats`` with ``beat`` placed after ``after`` content beats (at the end if there are fewer)."""
    seen = 0
    for i, b in enumerate(beats):
        if isinstance(b, CONTENT):
            if seen == after:
                return [*beats[:i], beat, *beats[i:]]
            seen += 1
    return [*beats, beat]
