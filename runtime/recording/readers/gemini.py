"""Gemini answers: ``candidates[0].content.parts``, or a stream of such responses (SSE)."""

from __future__ import annotations

from typing import Any

from mockllm.dsl.tree.nodes import FinishReason
from mockllm.runtime.recording.answer import Answer, Call, load_json, number, parse_arguments, sse_events

PROVIDER = "gemini"
_FINISH: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "BLOCKLIST": "content_filter",
    "SPII": "content_filter",
    "RECITATION": "content_filter",
}


def read(body: bytes, stream: bool) -> Answer:
    pieces: list[Any] = [d for _, d in sse_events(body)] if stream else [load_json(body)]
    chunks: list[str] = []
    thinking: list[str] = []
    calls: list[Call] = []
    finish: FinishReason | None = None
    usage = None
    rid = None
    error = None
    events = 0
    for data in pieces:
        if not isinstance(data, dict):
            continue
        if isinstance(data.get("error"), dict):
            error = str(data["error"].get("message", "error"))
            continue
        rid = rid or data.get("responseId")
        u = data.get("usageMetadata")
        if isinstance(u, dict):
            usage = (number(u.get("promptTokenCount")), number(u.get("candidatesTokenCount")))
        for cand in (data.get("candidates") or ())[:1]:
            for part in (cand.get("content") or {}).get("parts") or ():
                if "functionCall" in part:
                    fc = part["functionCall"] or {}
                    calls.append(Call(str(fc.get("name", "")), parse_arguments(fc.get("args"))))
                    events += 1
                elif part.get("thought") and "text" in part:
                    thinking.append(part["text"])
                    events += 1
                elif "text" in part:
                    chunks.append(part["text"])
                    events += 1
            if cand.get("finishReason"):
                finish = _FINISH.get(str(cand["finishReason"]))
    if calls and finish == "stop":
        finish = "tool_calls"  # Gemini says STOP after a call; the script's default reads the same
    return Answer(
        text_chunks=tuple(c for c in chunks if c),
        thinking="".join(thinking),
        calls=tuple(calls),
        finish=finish,
        usage=usage,
        response_id=rid,
        error=error,
        events=events,
    )
