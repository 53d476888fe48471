"""Cohere v2 Chat answers: ``message`` (``content`` text, or ``tool_plan`` and ``tool_calls``), or the
stream's typed events (``content-delta``, ``tool-plan-delta``, ``tool-call-start``/``-delta``,
``message-end`` with the finish reason and usage; a ``message-end`` whose finish reason is ``ERROR``
carries a mid-stream error)."""

from __future__ import annotations

from typing import Any

import attrs

from mockllm.runtime.recording.answer import (
    Answer,
    Parts,
    StreamedCalls,
    finish_for,
    load_json,
    number,
    objects,
    parse_arguments,
    sse_objects,
)

PROVIDER = "cohere"
CALL_IDS = True


def _usage(data: Any) -> tuple[int, int] | None:
    u = data.get("usage") if isinstance(data, dict) else None
    tokens = (u.get("tokens") or u.get("billed_units")) if isinstance(u, dict) else None
    if not isinstance(tokens, dict):
        return None
    return number(tokens.get("input_tokens")), number(tokens.get("output_tokens"))


def _arguments(raw: Any) -> Any:
    value = parse_arguments(raw)
    return {} if value is None else value  # Cohere sends "null" for a call without arguments


def read(body: bytes, stream: bool) -> Answer:
    return _stream(body) if stream else _whole(load_json(body) or {})


def _whole(data: Any) -> Answer:
    msg = data.get("message") or {}
    content = list(objects(msg.get("content") or ()))
    got = Parts(finish=finish_for(data.get("finish_reason")), usage=_usage(data), response_id=data.get("id"))
    got.text("".join(str(c.get("text", "")) for c in content if c.get("type") == "text") or msg.get("tool_plan") or "")
    got.think("".join(str(c.get("thinking", "")) for c in content if c.get("type") == "thinking"))
    for c in objects(msg.get("tool_calls") or ()):
        fn = c.get("function") or {}
        got.call(fn.get("name", ""), _arguments(fn.get("arguments")), c.get("id"))
    return attrs.evolve(got.answer(), events=0)  # a whole answer has no stream events


def _stream(body: bytes) -> Answer:
    got = Parts()
    calls = StreamedCalls()
    for data in sse_objects(body):
        kind = data.get("type")
        message = (data.get("delta") or {}).get("message") or {}
        index = number(data.get("index"))
        if kind == "message-start":
            got.response_id = data.get("id")
        elif kind == "content-delta":
            piece = message.get("content") or {}
            if "thinking" in piece:
                got.think(piece["thinking"])
            else:
                got.text(piece.get("text", ""))
        elif kind == "tool-plan-delta":
            got.text(message.get("tool_plan", ""))
        elif kind == "tool-call-start":
            first = message.get("tool_calls") or {}
            calls.start(index, (first.get("function") or {}).get("name"), first.get("id"))
        elif kind == "tool-call-delta":
            calls.add(index, ((message.get("tool_calls") or {}).get("function") or {}).get("arguments"))
            got.events += 1
        elif kind == "message-end":
            delta = data.get("delta") or {}
            if delta.get("error"):
                got.error = str(delta["error"])
            got.finish = finish_for(delta.get("finish_reason"), got.finish)
            got.usage = _usage(delta) or got.usage
    return got.answer(calls.calls(_arguments))
