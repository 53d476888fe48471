"""Ollama answers: one ``message``, or NDJSON lines each holding a piece of it."""

from __future__ import annotations

from typing import Any

from mockllm.runtime.recording.answer import Answer, Parts, finish_for, load_json, ndjson, number, objects

PROVIDER = "ollama"


def read(body: bytes, stream: bool) -> Answer:
    lines: list[Any] = ndjson(body) if stream else [load_json(body)]
    got = Parts()
    for data in objects(lines):
        if isinstance(data.get("error"), str):
            got.error = data["error"]
            continue
        msg = data.get("message") or {}
        if msg.get("content"):
            got.text(msg["content"])
        if msg.get("thinking"):
            got.think(msg["thinking"])
        for c in msg.get("tool_calls") or ():
            fn = c.get("function") or {}
            got.call(fn.get("name", ""), fn.get("arguments"))
        if data.get("done"):
            got.finish = finish_for(data.get("done_reason"))
            if "prompt_eval_count" in data or "eval_count" in data:
                got.usage = (number(data.get("prompt_eval_count")), number(data.get("eval_count")))
    return got.answer(stop_calls=True)
