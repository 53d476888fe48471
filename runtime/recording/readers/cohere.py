"""Cohere v2 Chat answers: ``message`` (``content`` text, or ``tool_plan`` and ``tool_calls``), or the
stream's typed events (``content-delta``, ``tool-plan-delta``, ``tool-call-start``/``-delta``,
``message-end`` with the finish reason and usage; a ``message-end`` whose finish reason is ``ERROR``
carries a mid-stream error)."""

from __future__ import annotations

from typing import Any

from mockllm.dsl.tree.nodes import FinishReason
from mockllm.runtime.recording.answer import (
    Answer,
    Call,
    StreamedCalls,
    load_json,
    number,
    objects,
    parse_arguments,
    sse_objects,
)

PROVIDER = "cohere"
CALL_IDS = True
_FINISH: dict[str, FinishReason] = {
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "length",
    "TOOL_CALL": "tool_calls",
}


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
    text = "".join(str(c.get("text", "")) for c in content if c.get("type") == "text") or msg.get("tool_plan") or ""
    calls = tuple(
        Call(str(fn.get("name", "")), _arguments(fn.get("arguments")), c.get("id"))
        for c in objects(msg.get("tool_calls") or ())
        for fn in [c.get("function") or {}]
    )
    return Answer(
        text_chunks=(text,) if text else (),
        thinking="".join(str(c.get("thinking", "")) for c in content if c.get("type") == "thinking"),
        calls=calls,
        finish=_FINISH.get(str(data.get("finish_reason"))),
        usage=_usage(data),
        response_id=data.get("id"),
    )


def _stream(body: bytes) -> Answer:
    chunks: list[str] = []
    thinking: list[str] = []
    calls = StreamedCalls()
    finish: FinishReason | None = None
    usage = rid = error = None
    events = 0
    for data in sse_objects(body):
        kind = data.get("type")
        message = (data.get("delta") or {}).get("message") or {}
        index = number(data.get("index"))
        if kind == "message-start":
            rid = data.get("id")
        elif kind == "content-delta":
            piece = message.get("content") or {}
            (thinking if "thinking" in piece else chunks).append(str(piece.get("thinking", piece.get("text", ""))))
            events += 1
        elif kind == "tool-plan-delta":
            chunks.append(str(message.get("tool_plan", "")))
            events += 1
        elif kind == "tool-call-start":
            first = message.get("tool_calls") or {}
            calls.start(index, (first.get("function") or {}).get("name"), first.get("id"))
        elif kind == "tool-call-delta":
            calls.add(index, ((message.get("tool_calls") or {}).get("function") or {}).get("arguments"))
            events += 1
        elif kind == "message-end":
            delta = data.get("delta") or {}
            if delta.get("error"):
                error = str(delta["error"])
            finish = _FINISH.get(str(delta.get("finish_reason")), finish)
            usage = _usage(delta) or usage
    return Answer(
        text_chunks=tuple(c for c in chunks if c),
        thinking="".join(thinking),
        calls=calls.calls(_arguments),
        finish=finish,
        usage=usage,
        response_id=rid,
        error=error,
        events=events,
    )
