"""Bedrock answers: Converse (``output.message.content``, or ConverseStream's events) and Invoke with
Anthropic bodies (the Messages shape, whole, or InvokeModelWithResponseStream's ``chunk`` events,
each carrying one Messages event in base64). Streams are AWS event-stream frames, decoded by the
provider's own module (:mod:`mockllm.runtime.providers.bedrock.eventstream`); a stream cut mid-frame is read
up to its last whole frame."""

from __future__ import annotations

import base64
import binascii
import json
import struct
from collections.abc import Iterator
from typing import Any

import attrs

from mockllm.runtime.providers.bedrock.eventstream import EventMessage, EventStreamError, decode
from mockllm.runtime.recording.answer import (
    Answer,
    Call,
    finish_for,
    load_json,
    number,
    objects,
    parse_arguments,
)
from mockllm.runtime.recording.readers import anthropic

PROVIDER = "bedrock"
CALL_IDS = True
_REFUSED = "content_filtered"  # how Converse stops on a refusal (its text is the refusal)


def read(body: bytes, stream: bool) -> Answer:
    if not stream:
        data = load_json(body)
        if isinstance(data, dict) and "output" in data:
            return _converse_whole(data)
        return anthropic.read(body, False)
    events: list[tuple[str, Any]] = []
    error = None
    for message in _frames(body):
        payload = load_json(message.payload)
        if message.header(":message-type") == "exception":
            error = str(payload.get("message", "error")) if isinstance(payload, dict) else "error"
        elif isinstance(payload, dict):
            events.append((message.header(":event-type") or "", payload))
    if any(kind == "chunk" for kind, _ in events):
        answer = anthropic.read_events(objects(_chunk(p) for kind, p in events if kind == "chunk"))
    else:
        answer = _converse_stream(events)
    return attrs.evolve(answer, error=error) if error is not None else answer


def _frames(body: bytes) -> Iterator[EventMessage]:
    """The whole frames of ``body``, in order, up to the first one that is cut or broken."""
    at = 0
    while at + 4 <= len(body):
        (total,) = struct.unpack_from(">I", body, at)
        try:
            yield from decode(body[at : at + total])
        except EventStreamError:
            return
        at += total


def _chunk(payload: dict[str, Any]) -> Any:
    try:
        return json.loads(base64.b64decode(str(payload.get("bytes", "")), validate=True))
    except (binascii.Error, ValueError):
        return None


def _answer(text: list[str], thinking: str, calls: list[Call], stop: Any, usage: Any, events: int = 0) -> Answer:
    refused = stop == _REFUSED
    u = usage if isinstance(usage, dict) else {}
    return Answer(
        text_chunks=() if refused else tuple(t for t in text if t),
        thinking=thinking,
        refusal="".join(text) if refused else "",
        calls=tuple(calls),
        finish=finish_for(stop),
        usage=(number(u.get("inputTokens")), number(u.get("outputTokens"))) if u else None,
        events=events,
    )


def _converse_whole(data: dict[str, Any]) -> Answer:
    content = ((data.get("output") or {}).get("message") or {}).get("content") or ()
    text: list[str] = []
    thinking: list[str] = []
    calls: list[Call] = []
    for block in objects(content):
        if "text" in block:
            text.append(str(block["text"]))
        elif isinstance(block.get("toolUse"), dict):
            use = block["toolUse"]
            calls.append(Call(str(use.get("name", "")), parse_arguments(use.get("input")), use.get("toolUseId")))
        elif isinstance(block.get("reasoningContent"), dict):
            thinking.append(str((block["reasoningContent"].get("reasoningText") or {}).get("text", "")))
    return _answer(["".join(text)], "".join(thinking), calls, data.get("stopReason"), data.get("usage"))


def _converse_stream(events: list[tuple[str, Any]]) -> Answer:
    text: list[str] = []
    thinking: list[str] = []
    calls: dict[int, list[Any]] = {}  # block index → name, id, fragments
    stop = usage = None
    count = 0
    for kind, data in events:
        index = number(data.get("contentBlockIndex"))
        if kind == "contentBlockStart":
            use = (data.get("start") or {}).get("toolUse") or {}
            calls[index] = [use.get("name"), use.get("toolUseId"), []]
        elif kind == "contentBlockDelta":
            delta = data.get("delta") or {}
            if "text" in delta:
                text.append(str(delta["text"]))
            elif isinstance(delta.get("toolUse"), dict):
                calls.setdefault(index, [None, None, []])[2].append(str(delta["toolUse"].get("input", "")))
            elif isinstance(delta.get("reasoningContent"), dict) and "text" in delta["reasoningContent"]:
                thinking.append(str(delta["reasoningContent"]["text"]))
            else:
                continue
            count += 1
        elif kind == "messageStop":
            stop = data.get("stopReason")
        elif kind == "metadata":
            usage = data.get("usage")
    found = [
        Call(str(name or ""), parse_arguments("".join(pieces)), call_id, tuple(p for p in pieces if p))
        for name, call_id, pieces in (calls[i] for i in sorted(calls))
    ]
    return _answer(text, "".join(thinking), found, stop, usage, count)
