"""OpenAI Responses answers: the ``output`` items, or the stream's events (its ``response.completed``
carries the whole response; the deltas give the chunking)."""

from __future__ import annotations

from typing import Any

import attrs

from mockllm.dsl.tree.nodes import FinishReason
from mockllm.runtime.recording.answer import Answer, Call, load_json, number, parse_arguments, sse_objects

PROVIDER = "responses"
CALL_IDS = True  # its tool calls carry ids a script can keep


def _response(data: dict[str, Any], fragments: dict[int, list[str]] | None = None) -> Answer:
    """The answer of a whole response; ``fragments`` are a stream's argument deltas by output index."""
    text: list[str] = []
    refusal: list[str] = []
    thinking: list[str] = []
    calls: list[Call] = []
    for index, item in enumerate(data.get("output") or ()):
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or ():
                if part.get("type") == "output_text":
                    text.append(part.get("text", ""))
                elif part.get("type") == "refusal":
                    refusal.append(part.get("refusal", ""))
        elif kind == "function_call":
            pieces = tuple((fragments or {}).get(index, ()))
            calls.append(
                Call(str(item.get("name", "")), parse_arguments(item.get("arguments")), item.get("call_id"), pieces)
            )
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
    fragments: dict[int, list[str]] = {}
    final: dict[str, Any] | None = None
    rid = None
    error = None
    events = 0
    for data in sse_objects(body):
        kind = str(data.get("type", ""))
        if kind == "response.output_text.delta":
            chunks.append(str(data.get("delta", "")))
        elif kind == "response.function_call_arguments.delta" and data.get("delta"):
            fragments.setdefault(number(data.get("output_index")), []).append(str(data["delta"]))
        if kind.endswith(".delta"):
            events += 1
        if isinstance(data.get("response"), dict):
            rid = data["response"].get("id") or rid
            if kind in ("response.completed", "response.incomplete", "response.failed"):
                final = data["response"]
        if kind == "error":
            error = str(data.get("message") or (data.get("error") or {}).get("message") or "error")
    answer = _response(final, fragments) if final is not None else Answer(text_chunks=tuple(chunks), response_id=rid)
    if chunks and "".join(chunks) == answer.text:
        answer = attrs.evolve(answer, text_chunks=tuple(chunks))
    return attrs.evolve(answer, error=error, events=events)
