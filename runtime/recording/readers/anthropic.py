"""Anthropic Messages answers: ``content`` blocks, or the ``message_start`` … ``message_stop`` events."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from mockllm.runtime.recording.answer import Answer, Call, finish_for, load_json, number, parse_arguments, sse_objects

PROVIDER = "anthropic"
CALL_IDS = True  # its tool calls carry ids a script can keep


def _blocks(blocks: list[Any], stop: Any, usage: tuple[int, int] | None, rid: Any, chunks: tuple[str, ...]) -> Answer:
    thinking = "".join(b.get("thinking", "") for b in blocks if b.get("type") == "thinking")
    calls = tuple(
        Call(str(b.get("name", "")), parse_arguments(b.get("input")), b.get("id"), tuple(b.get("fragments", ())))
        for b in blocks
        if b.get("type") == "tool_use"
    )
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    refusal = ""
    if stop == "refusal":
        refusal, text, chunks = text, "", ()
    return Answer(
        text_chunks=chunks or ((text,) if text else ()),
        thinking=thinking,
        refusal=refusal,
        calls=calls,
        finish=finish_for(stop),
        usage=usage,
        response_id=rid,
    )


def read(body: bytes, stream: bool) -> Answer:
    if not stream:
        data = load_json(body) or {}
        u = data.get("usage") or {}
        usage = (number(u.get("input_tokens")), number(u.get("output_tokens"))) if u else None
        return _blocks(list(data.get("content") or ()), data.get("stop_reason"), usage, data.get("id"), ())
    return read_events(sse_objects(body))


def read_events(stream: Iterable[dict[str, Any]]) -> Answer:
    """The answer of a stream of Messages events (SSE data, or Bedrock's ``chunk`` payloads)."""
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    chunks: list[str] = []
    stop = None
    tokens_in = tokens_out = 0
    seen_usage = False
    rid = None
    error = None
    events = 0
    for data in stream:
        kind = data.get("type")
        if kind == "message_start":
            msg = data.get("message") or {}
            rid = msg.get("id")
            u = msg.get("usage") or {}
            tokens_in, tokens_out = number(u.get("input_tokens")), number(u.get("output_tokens"))
            seen_usage = bool(u)
        elif kind == "content_block_start":
            blocks[int(data.get("index", 0))] = dict(data.get("content_block") or {})
        elif kind == "content_block_delta":
            i = int(data.get("index", 0))
            block = blocks.setdefault(i, {"type": "text"})
            delta = data.get("delta") or {}
            events += 1
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
                chunks.append(delta.get("text", ""))
            elif delta.get("type") == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
            elif delta.get("type") == "input_json_delta":
                if delta.get("partial_json"):
                    partial.setdefault(i, []).append(delta["partial_json"])
        elif kind == "message_delta":
            stop = (data.get("delta") or {}).get("stop_reason") or stop
            u = data.get("usage") or {}
            if u:
                seen_usage = True
                tokens_out = number(u.get("output_tokens")) or tokens_out
                tokens_in = number(u.get("input_tokens")) or tokens_in
        elif kind == "error":
            error = str((data.get("error") or {}).get("message", "error"))
    for i, pieces in partial.items():
        blocks[i]["input"] = parse_arguments("".join(pieces))
        blocks[i]["fragments"] = pieces
    answer = _blocks(
        [blocks[i] for i in sorted(blocks)], stop, (tokens_in, tokens_out) if seen_usage else None, rid, tuple(chunks)
    )
    return attrs.evolve(answer, error=error, events=events)
