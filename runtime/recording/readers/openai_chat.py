"""OpenAI Chat Completions answers: ``choices[0].message``, or ``chat.completion.chunk`` deltas."""

from __future__ import annotations

from typing import Any

import attrs

from mockllm.runtime.recording.answer import (
    Answer,
    Call,
    Parts,
    StreamedCalls,
    finish_for,
    load_json,
    number,
    parse_arguments,
    sse_objects,
)

PROVIDER = "openai"
CALL_IDS = True  # its tool calls carry ids a script can keep


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
            finish=finish_for(choice.get("finish_reason")),
            usage=_usage(data),
            response_id=data.get("id"),
        )
    got = Parts()
    refusal: list[str] = []
    calls = StreamedCalls()
    for data in sse_objects(body):
        if "error" in data and isinstance(data["error"], dict):
            got.error = str(data["error"].get("message", "error"))
            continue
        got.response_id = got.response_id or data.get("id")
        got.usage = _usage(data) or got.usage
        for choice in data.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                got.text(delta["content"])
            if delta.get("refusal"):
                refusal.append(delta["refusal"])
                got.events += 1
            for c in delta.get("tool_calls") or ():
                fn = c.get("function") or {}
                calls.start(number(c.get("index")), fn.get("name"), c.get("id"))
                calls.add(number(c.get("index")), fn.get("arguments"))
                got.events += 1
            got.finish = finish_for(choice.get("finish_reason"), got.finish)
    return attrs.evolve(got.answer(calls.calls()), refusal="".join(refusal))
