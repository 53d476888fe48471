"""OpenAI Responses answers: the ``output`` items, or the stream's events (its ``response.completed``
carries the whole response; the deltas give the chunking)."""

from __future__ import annotations

from typing import Any

import attrs

from mockllm.dsl.tree.nodes import FinishReason
from mockllm.runtime.recording.answer import Answer, Call, load_json, number, parse_arguments, sse_objects

PROVIDER = "responses"


def _response(data: dict[str, Any]) -> Answer:
    text: list[str] = []
    refusal: list[str] = []
    thinking: list[str] = []
    calls: list[Call] = []
    for item in data.get("output") or ():
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or ():
                if part.get("type") == "output_text":
                    text.append(part.get("text", ""))
                elif part.get("type") == "refusal":
                    refusal.append(part.get("refusal", ""))
        elif kind == "function_call":
            calls.append(Call(str(item.get("name", "")), parse_arguments(item.get("arguments")), item.get("call_id")))
        elif kind == "reasoning":
            thinking.extend(s.get("text", "") for s in item.get("summary") or () if isinstance(s, dict))
    finish: FinishReason | None = "tool_calls" if calls else "stop"
    if data.get("status") == "incomplete":
        reason = (data.get("incomplete_details") or {}).get("reason")
        finish = "content_filter" if reason == "content_filter" else "length"
    u = data.get("usage") or {}
    joined = "".join(text)
    return Answer(
        text_chunks=(joined,) if joined else (),
        thinking="".join(thinking),
        refusal="".join(refusal),
        calls=tuple(calls),
        finish=finish,
        usage=(number(u.get("input_tokens")), number(u.get("output_tokens"))) if u else None,
        response_id=data.get("id"),
    )


def read(body: bytes, stream: bool) -> Answer:
    if not stream:
        data = load_json(body)
        return _response(data if isinstance(data, dict) else {})
    chunks: list[str] = []
    final: dict[str, Any] | None = None
    rid = None
    error = None
    events = 0
    for data in sse_objects(body):
        kind = str(data.get("type", ""))
        if kind == "response.output_text.delta":
            chunks.append(str(data.get("delta", "")))
        if kind.endswith(".delta"):
            events += 1
        if isinstance(data.get("response"), dict):
            rid = data["response"].get("id") or rid
            if kind in ("response.completed", "response.incomplete", "response.failed"):
                final = data["response"]
        if kind == "error":
            error = str(data.get("message") or (data.get("error") or {}).get("message") or "error")
    answer = _response(final) if final is not None else Answer(text_chunks=tuple(chunks), response_id=rid)
    if chunks and "".join(chunks) == answer.text:
        answer = attrs.evolve(answer, text_chunks=tuple(chunks))
    return attrs.evolve(answer, error=error, events=events)
