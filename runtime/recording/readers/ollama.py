"""Ollama answers: one ``message``, or NDJSON lines each holding a piece of it."""

from __future__ import annotations

from typing import Any

from mockllm.dsl.tree.nodes import FinishReason
from mockllm.runtime.recording.answer import Answer, Call, load_json, ndjson, number, objects, parse_arguments

PROVIDER = "ollama"
_FINISH: dict[str, FinishReason] = {"stop": "stop", "length": "length"}


def read(body: bytes, stream: bool) -> Answer:
    lines: list[Any] = ndjson(body) if stream else [load_json(body)]
    chunks: list[str] = []
    thinking: list[str] = []
    calls: list[Call] = []
    finish: FinishReason | None = None
    usage = None
    error = None
    events = 0
    for data in objects(lines):
        if isinstance(data.get("error"), str):
            error = data["error"]
            continue
        msg = data.get("message") or {}
        if msg.get("content"):
            chunks.append(msg["content"])
            events += 1
        if msg.get("thinking"):
            thinking.append(msg["thinking"])
            events += 1
        for c in msg.get("tool_calls") or ():
            fn = c.get("function") or {}
            calls.append(Call(str(fn.get("name", "")), parse_arguments(fn.get("arguments"))))
            events += 1
        if data.get("done"):
            finish = _FINISH.get(str(data.get("done_reason")))
            if "prompt_eval_count" in data or "eval_count" in data:
                usage = (number(data.get("prompt_eval_count")), number(data.get("eval_count")))
    if calls and finish == "stop":
        finish = "tool_calls"
    return Answer(
        text_chunks=tuple(chunks),
        thinking="".join(thinking),
        calls=tuple(calls),
        finish=finish,
        usage=usage,
        error=error,
        events=events,
    )
