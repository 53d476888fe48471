"""Turning a step's reply block into the plan for one request.

Templates are rendered, several ``text`` lines joined with a newline, text, thinking and tool
arguments split for streaming by the stream policy (the pieces always join exactly to the whole),
usage given or estimated, tool calls keyed deterministically per conversation and turn."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import attrs

from mockllm.dsl.tree import nodes
from mockllm.dsl.tree.templates import parse, render_json
from mockllm.runtime.reply.ids import call_key
from mockllm.runtime.reply.plan import ErrorPlan, FinishReason, HangPlan, MessagePlan, Plan, PlannedToolCall, RawPlan
from mockllm.runtime.reply.tokens import estimate
from mockllm.runtime.request import ChatRequest
from mockllm.runtime.values import fast_frozen

_WORD = re.compile(r"\s*\S+")

# ---------------------------------------------------------------------------------------------------------
# Splitting


def split_words(text: str) -> tuple[str, ...]:
    """Word pieces, each keeping the whitespace before it ("Hello world" → "Hello", " world"); trailing
    whitespace stays with the last piece."""
    if not text:
        return ()
    pieces = _WORD.findall(text)
    if not pieces:
        return (text,)
    rest = len(text) - sum(map(len, pieces))
    if rest:
        pieces[-1] += text[len(text) - rest :]
    return tuple(pieces)


def split_count(text: str, n: int) -> tuple[str, ...]:
    """``n`` near-equal pieces (fewer when the text is shorter than ``n`` characters)."""
    if not text:
        return ()
    n = max(1, min(n, len(text)))
    size, extra = divmod(len(text), n)
    out: list[str] = []
    start = 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(text[start:end])
        start = end
    return tuple(out)


def split_chars(text: str, n: int) -> tuple[str, ...]:
    """Pieces of ``n`` characters (the last may be shorter)."""
    if not text:
        return ()
    n = max(1, n)
    return tuple(text[i : i + n] for i in range(0, len(text), n))


def split_json_keys(text: str) -> tuple[str, ...]:
    """Compact JSON split before each ``"`` that opens an object key (how argument fragments look when
    a model streams them field by field)."""
    if not text:
        return ()
    cuts: list[int] = []
    stack: list[str] = []
    in_string = False
    escaped = False
    prev = ""  # the last significant character outside strings
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                prev = '"'
            continue
        if ch == '"':
            if stack and stack[-1] == "{" and prev in ("{", ",") and i > 0:
                cuts.append(i)
            in_string = True
            continue
        if ch in "{[":
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
        if not ch.isspace():
            prev = ch
    bounds = [0, *cuts, len(text)]
    return tuple(text[a:b] for a, b in itertools.pairwise(bounds) if b > a)


def split_text(text: str, stream: nodes.Stream | None) -> tuple[str, ...]:
    if stream is None or stream.mode == "word":
        return split_words(text)
    if stream.mode == "chunks":
        return split_count(text, stream.count or 1)
    return split_chars(text, stream.count or 1)


def split_arguments(arguments_json: str, stream: nodes.Stream | None) -> tuple[str, ...]:
    if stream is None or stream.mode == "word":
        return split_json_keys(arguments_json)
    return split_text(arguments_json, stream)


# ---------------------------------------------------------------------------------------------------------
# Planning


def arguments_text(arguments: Any) -> str:
    return json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)


def input_text(chat: ChatRequest) -> str:
    """Everything the prompt-token estimate counts: the system prompt and all message text."""
    parts = [chat.system]
    for m in chat.messages:
        parts.append(m.text)
        if m.tool_result is not None:
            parts.append(m.tool_result.content)
    return "".join(parts)


def _render(text: str, env: Mapping[str, str]) -> str:
    return parse(text).render(env) if "{{" in text else text


def retry_headers(seconds: float) -> tuple[tuple[str, str], ...]:
    whole = max(0, math.ceil(seconds))
    ms = max(0, math.ceil(seconds * 1000))
    return (("retry-after", str(whole)), ("retry-after-ms", str(ms)))


@fast_frozen
class _Call:
    """A tool call of the reply, resolved but not yet keyed (its key depends on the history)."""

    name: str
    arguments: Any
    arguments_json: str
    argument_chunks: tuple[str, ...]
    prefix: str
    explicit_id: str | None


@fast_frozen
class _Resolved:
    """A reply block resolved for one request, short of what depends on the request alone: the model,
    the prompt-token estimate (``input_tokens`` None: estimate it) and the tool-call keys. A block that
    is not a message (hang, error, raw) is resolved to its plan with the model left empty."""

    fields: Mapping[str, Any]  # every other MessagePlan field
    calls: tuple[_Call, ...]
    input_tokens: int | None
    other: HangPlan | ErrorPlan | RawPlan | None = None


def _has_template(value: Any) -> bool:
    """Whether a JSON value holds a string with ``{{`` (rendered values only: keys are never rendered)."""
    if isinstance(value, str):
        return "{{" in value
    if isinstance(value, dict):
        return any(_has_template(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_template(v) for v in value)
    return False


def _is_static(block: nodes.ReplyBlock) -> bool:
    """Whether the block's reply is the same for every request (no template, no echo): then it is
    resolved once and reused, and the engine need not build the template environment."""
    for el in block.elements:
        if isinstance(el, (nodes.Echo, nodes.EchoHeader)):
            return False
        if isinstance(el, (nodes.Text, nodes.Thinking, nodes.Refusal)):
            text = el.text
        elif isinstance(el, nodes.Chunks):
            text = "".join(el.chunks)
        elif isinstance(el, nodes.Error):
            text = el.message
        elif isinstance(el, nodes.Header):
            text = el.value
        elif isinstance(el, nodes.StreamError):
            text = el.message
        elif isinstance(el, nodes.ToolCall):
            if _has_template(el.arguments):
                return False
            continue
        elif isinstance(el, nodes.Body):
            if _has_template(el.body):
                return False
            continue
        elif isinstance(el, nodes.Result):
            if _has_template(el.value):
                return False
            continue
        else:
            continue
        if "{{" in text:
            return False
    return True


_STATIC_LIMIT = 4096
_static: dict[int, tuple[nodes.ReplyBlock, _Resolved | None]] = {}  # by id(block); the block keeps the id alive
_last: dict[int, tuple[tuple[str, int, int, str], Plan]] = {}  # by id(resolved): the last plan built from it
_NO_ENV: Mapping[str, str] = {}


def _static_part(block: nodes.ReplyBlock) -> _Resolved | None:
    """The resolved reply of a static block (computed once per block), None for any other block."""
    hit = _static.get(id(block))
    if hit is not None and hit[0] is block:
        return hit[1]
    resolved = _resolve(block, None, _NO_ENV) if _is_static(block) else None
    if len(_static) >= _STATIC_LIMIT:
        _static.clear()
        _last.clear()
    _static[id(block)] = (block, resolved)
    return resolved


def needs_call_offset(block: nodes.ReplyBlock) -> bool:
    """Whether :func:`plan_reply` reads ``call_offset`` for this block (it may answer tool calls)."""
    resolved = _static_part(block)
    return resolved is None or bool(resolved.calls)


def needs_env(block: nodes.ReplyBlock) -> bool:
    """Whether :func:`plan_reply` reads ``env`` for this block (it holds a template)."""
    return _static_part(block) is None


def plan_reply(
    block: nodes.ReplyBlock, chat: ChatRequest, env: Mapping[str, str], *, call_offset: int, conversation: str = ""
) -> Plan:
    """The plan for answering ``chat`` with ``block``. ``call_offset`` is the number of tool calls already
    in the conversation's history: this reply's calls are the conversation's calls number
    ``call_offset + 1``, ``…+2`` …, keyed by :func:`mockllm.runtime.reply.ids.call_key` from ``conversation``
    and that number (the same conversation and turn always get the same ids; another conversation
    gets others).

    A block without templates or echo is resolved once (rendering, splitting for streaming, the output
    token estimate) and only the request-dependent fields are filled in per request."""
    resolved = _static_part(block)
    if resolved is None:
        return _complete(_resolve(block, chat, env), chat, call_offset, conversation)
    # A static block answers the same plan to requests with the same model, prompt size and call
    # offset (plans are immutable): reuse the last one instead of building an equal copy.
    input_tokens = resolved.input_tokens
    if input_tokens is None:
        input_tokens = estimate(input_text(chat))
    key = (chat.model, input_tokens, call_offset if resolved.calls else 0, conversation if resolved.calls else "")
    last = _last.get(id(resolved))
    if last is not None and last[0] == key:
        return last[1]
    plan = _complete(resolved, chat, call_offset, conversation, input_tokens)
    _last[id(resolved)] = (key, plan)
    return plan


def _complete(
    resolved: _Resolved, chat: ChatRequest, call_offset: int, conversation: str, input_tokens: int | None = None
) -> Plan:
    """The plan: ``resolved`` with the model, the prompt-token estimate and the keyed tool calls."""
    if resolved.other is not None:
        return attrs.evolve(resolved.other, model=chat.model)
    if resolved.calls:
        first = call_offset + 1
        calls = tuple(
            PlannedToolCall(
                c.name,
                c.arguments,
                c.arguments_json,
                c.argument_chunks,
                call_key(conversation, c.prefix, n),
                c.explicit_id,
            )
            for n, c in enumerate(resolved.calls, start=first)
        )
    else:
        calls = ()
    if input_tokens is None:
        input_tokens = resolved.input_tokens
    if input_tokens is None:
        input_tokens = estimate(input_text(chat))
    return MessagePlan(model=chat.model, tool_calls=calls, input_tokens=input_tokens, **resolved.fields)


def _resolve(block: nodes.ReplyBlock, chat: ChatRequest | None, env: Mapping[str, str]) -> _Resolved:
    """Everything of the plan but the model, the prompt-token estimate and the tool-call keys. ``chat``
    is None only for static blocks (which hold no echo and no echoed header)."""
    texts: list[str] = []
    chunks: tuple[str, ...] | None = None
    thinking: list[str] = []
    refusal: list[str] = []
    pending_calls: list[tuple[str, Any, str, str | None]] = []  # name, arguments, key prefix, explicit id
    finish: FinishReason | None = None
    usage: nodes.Usage | None = None
    stream: nodes.Stream | None = None
    fields: dict[str, Any] = {}  # MessagePlan fields
    shaping = _Shaping()  # what decides the other shapes
    headers: list[tuple[str, str]] = []

    for el in block.elements:
        if isinstance(el, nodes.Text):
            texts.append(_render(el.text, env))
        elif isinstance(el, nodes.Chunks):
            chunks = tuple(_render(c, env) for c in el.chunks)
        elif isinstance(el, nodes.ToolCall):
            pending_calls.append((el.name, render_json(el.arguments, env), "mock", el.id))
        elif isinstance(el, nodes.Thinking):
            thinking.append(_render(el.text, env))
        elif isinstance(el, nodes.Refusal):
            refusal.append(_render(el.text, env))
        elif isinstance(el, nodes.Finish):
            finish = el.reason
        elif isinstance(el, nodes.Usage):
            usage = el
        elif isinstance(el, nodes.Stream):
            stream = el
        elif isinstance(el, nodes.Latency):
            fields["latency_s"] = el.duration.seconds
        elif isinstance(el, nodes.Error):
            shaping.error = (el.status, _render(el.message, env))
        elif isinstance(el, nodes.RetryAfter):
            shaping.retry_after_s = el.duration.seconds
            headers.extend(retry_headers(el.duration.seconds))
        elif isinstance(el, nodes.Header):
            headers.append((el.name, _render(el.value, env)))
        elif isinstance(el, nodes.EchoHeader):
            value = chat.header(el.name) if chat is not None else None
            if value is not None:
                headers.append((el.name, value))
        elif isinstance(el, nodes.Status):
            shaping.status = el.status
        elif isinstance(el, nodes.Body):
            shaping.body, shaping.has_body = render_json(el.body, env), True
        elif isinstance(el, nodes.Disconnect):
            fields["disconnect_after"] = el.after_chunks
        elif isinstance(el, nodes.StreamError):
            fields["stream_error"] = _render(el.message, env)
            fields["stream_error_after"] = el.after_chunks
        elif isinstance(el, nodes.Hang):
            shaping.hang = True
        elif isinstance(el, nodes.InterleaveCalls):
            fields["interleave_calls"] = True
        elif isinstance(el, nodes.Audio):  # speech, and Gemini's audio answers
            fields["audio"] = el.data
            fields["audio_seconds"] = el.length.seconds if el.length is not None else None
        elif isinstance(el, nodes.Image) and el.data is not None:  # images, and Gemini's pictures
            fields["images"] = (*fields.get("images", ()), el.data)
        elif isinstance(el, nodes.Result):
            fields["results"] = (*fields.get("results", ()), (render_json(el.value, env), el.is_error))
        elif isinstance(el, nodes.Echo) and chat is not None:
            from mockllm.runtime.echo.answer import echo_answer

            answer = echo_answer(chat)
            texts.append(answer.text)
            for name, arguments in answer.tool_calls:
                pending_calls.append((name, arguments, "echo", None))

    other = shape(shaping, fields.get("latency_s", 0.0), tuple(headers))
    if other is not None:
        return _Resolved({}, (), None, other)

    calls: list[_Call] = []
    for name, arguments, prefix, explicit_id in pending_calls:
        text_json = arguments_text(arguments)
        calls.append(_Call(name, arguments, text_json, split_arguments(text_json, stream), prefix, explicit_id))

    text = "".join(chunks) if chunks is not None else "\n".join(texts)
    text_chunks = chunks if chunks is not None else split_text(text, stream)
    thinking_text = "\n".join(thinking) if thinking else None
    refusal_text = "\n".join(refusal) if refusal else None

    input_tokens: int | None = None
    if usage is not None:
        input_tokens, output_tokens = usage.input_tokens, usage.output_tokens
    else:
        out = [text, thinking_text or "", refusal_text or "", *(c.arguments_json for c in calls)]
        output_tokens = estimate("".join(out))

    if stream is not None and stream.apart is not None:
        fields["chunk_interval_s"] = stream.apart.seconds

    fields.update(
        text=text,
        text_chunks=text_chunks,
        thinking=thinking_text,
        thinking_chunks=split_text(thinking_text, stream) if thinking_text else (),
        refusal=refusal_text,
        finish=finish if finish is not None else ("tool_calls" if calls else "stop"),
        output_tokens=output_tokens,
        headers=tuple(headers),
    )
    return _Resolved(fields, tuple(calls), input_tokens)


@attrs.define
class _Shaping:
    """The elements of a reply block that make it something other than a message."""

    hang: bool = False
    error: tuple[int, str] | None = None  # status, message
    retry_after_s: float | None = None
    status: int | None = None
    body: Any = None
    has_body: bool = False


def shape(
    shaping: _Shaping, latency_s: float, headers: tuple[tuple[str, str], ...]
) -> HangPlan | ErrorPlan | RawPlan | None:
    """The plan of a reply that is not a message (its model left empty), None for a message. The one
    place that decides the precedence of the shapes: ``hang`` wins, then ``error``, then
    ``status``/``body`` (raw)."""
    if shaping.hang:
        return HangPlan(model="")
    if shaping.error is not None:
        status, message = shaping.error
        return ErrorPlan("", status, message, shaping.retry_after_s, latency_s, headers)
    if shaping.status is not None or shaping.has_body:
        status = shaping.status if shaping.status is not None else 200
        return RawPlan("", status, shaping.body, shaping.has_body, latency_s, headers)
    return None
