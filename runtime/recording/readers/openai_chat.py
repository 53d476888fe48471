"""OpenAI Chat Completions answers: ``choices[0].message``, or ``chat.completion.chunk`` deltas."""

from __future__ import annotations

from typing import Any

from mockllm.dsl.tree.nodes import FinishReason
from mockllm.runtime.recording.answer import (
    Answer,
    Call,
    StreamedCalls,
    load_json,
    number,
    parse_arguments,
    sse_objects,
)

PROVIDER = "openai"
CALL_IDS = True  # its tool calls carry ids a script can keep
_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


def _usage(data: Any) -> tuple[int, int] | None:
    u = data.get("usage") if isinstance(data, dict) else None
    if isinstance(u, dict):
        return number(u.get("prompt_tokens")), number(u.get("completion_tokens"))
    return None


def read(body: bytes, stream: bool) -> Answer:
    if not stream:
        data = load_json(body) or {}
        choice = (data.get("choices") or [{}])[0]
        msg = choice.get("message") or {}
        whole = tuple(
            Call(str(c["function"].get("name", "")), parse_arguments(c["function"].get("arguments")), c.get("id"))
            for c in msg.get("tool_calls") or ()
            if isinstance(c, dict) and isinstance(c.get("function"), dict)
        )
        text = msg.get("content") or ""
        return Answer(
            text_chunks=(text,) if text else (),
            refusal=msg.get("refusal") or "",
            calls=whole,
            finish=_FINISH.get(str(choice.get("finish_reason"))),
            usage=_usage(data),
            response_id=data.get("id"),
        )
    chunks: list[str] = []
    refusal: list[str] = []
    calls = StreamedCalls()
    finish: FinishReason | None = None
    usage = None
    response_id = None
    error = None
    events = 0
    for data in sse_objects(body):
        if "error" in data and isinstance(data["error"], dict):
            error = str(data["error"].get("message", "error"))
            continue
        response_id = response_id or data.get("id")
        usage = _usage(data) or usage
        for choice in data.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                chunks.append(delta["content"])
                events += 1
            if delta.get("refusal"):
                refusal.append(delta["refusal"])
                events += 1
            for c in delta.get("tool_calls") or ():
                fn = c.get("function") or {}
                calls.start(number(c.get("index")), fn.get("name"), c.get("id"))
                calls.add(number(c.get("index")), fn.get("arguments"))
                events += 1
            if choice.get("finish_reason"):
                finish = _FINISH.get(str(choice["finish_reason"]))
    return Answer(
        text_chunks=tuple(chunks),
        refusal="".join(refusal),
        calls=calls.calls(),
        finish=finish,
        usage=usage,
        response_id=response_id,
        error=error,
        events=events,
    )
