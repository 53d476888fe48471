"""Streams keep their chunking through `mockllm record`: the text pieces and each tool call's argument
fragments, as the SDKs' stream helpers hand them to the application, are the same when the written
script is served as they were from the upstream. One `stream` line splits both text and arguments, so
when no line splits the text like the arguments the text is written as a `chunks:` block."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from recording_clients import KEY
from test_recording import check_clean, recorder, replay

from mockllm.runtime.recording.exchange import Exchange
from mockllm.runtime.recording.translate import conversations, read_exchange, script

UPSTREAM = """
scenario "Chunked together":
    step both:
        when:
            last user message contains "weather"
        reply:
            text "Let me look that up."
            tool call get_weather {"city": "Lima", "unit": "celsius"}
            tool call get_time {"city": "Lima"}
            stream by 4 characters

scenario "Chunked apart":
    step apart:
        when:
            last user message contains "time"
        reply:
            chunks:
                "One "
                "moment, "
                "please."
            tool call get_time {"city": "Cusco", "zone": "America/Lima"}
            stream 3 chunks
"""

WEATHER = "What is the weather in Lima?"
TIME = "And the time in Cusco?"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}
NAMES = ("get_weather", "get_time")
Events = list[tuple[str, Any, str]]


def openai_chat(url: str, question: str) -> Events:
    tools: Any = [{"type": "function", "function": {"name": n, "parameters": SCHEMA}} for n in NAMES]
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as c:
        messages: Any = [{"role": "user", "content": question}]
        with c.chat.completions.stream(model="gpt-4o", messages=messages, tools=tools) as s:
            events: Events = []
            for e in s:
                if e.type == "content.delta":
                    events.append(("text", None, e.delta))
                elif e.type == "tool_calls.function.arguments.delta":
                    events.append(("arguments", (e.index, e.name), e.arguments_delta))
            return events


def openai_responses(url: str, question: str) -> Events:
    tools: Any = [{"type": "function", "name": n, "parameters": SCHEMA} for n in NAMES]
    with openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0) as c:
        with c.responses.stream(model="gpt-4.1", input=question, tools=tools) as s:
            events: Events = []
            for e in s:
                if e.type == "response.output_text.delta":
                    events.append(("text", None, e.delta))
                elif e.type == "response.function_call_arguments.delta":
                    events.append(("arguments", e.output_index, e.delta))
            return events


def anthropic_messages(url: str, question: str) -> Events:
    tools: Any = [{"name": n, "input_schema": SCHEMA} for n in NAMES]
    with anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0) as c:
        messages: Any = [{"role": "user", "content": question}]
        with c.messages.stream(model="claude-x", max_tokens=200, messages=messages, tools=tools) as s:
            events: Events = []
            for e in s:
                if e.type == "text":
                    events.append(("text", None, e.text))
                elif e.type == "input_json":
                    events.append(("arguments", None, e.partial_json))
            return events


CLIENTS: dict[str, Callable[[str, str], Events]] = {
    "openai": openai_chat,
    "responses": openai_responses,
    "anthropic": anthropic_messages,
}


@pytest.mark.parametrize("provider", list(CLIENTS))
def test_streamed_text_and_argument_fragments_replay_as_recorded(
    tmp_path: Path, serve_text: Any, provider: str
) -> None:
    drive = CLIENTS[provider]
    with serve_text(UPSTREAM) as upstream, recorder(upstream, tmp_path) as (url, _):
        recorded = {q: drive(url, q) for q in (WEATHER, TIME)}
    fragments = [piece for kind, _, piece in recorded[WEATHER] if kind == "arguments" and piece]
    assert fragments[:2] == ['{"ci', 'ty":']  # by 4 characters, as the upstream split them
    assert [piece for kind, _, piece in recorded[TIME] if kind == "text" and piece] == ["One ", "moment, ", "please."]
    text = "\n".join(f.read_text(encoding="utf-8") for f in check_clean(tmp_path))
    assert "stream by 4 characters" in text and "stream 3 chunks" in text and "chunks:" in text
    with replay(tmp_path) as server:
        for question, events in recorded.items():
            assert drive(server.url, question) == events


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def _delta(**delta: Any) -> dict[str, Any]:
    return {"id": "c1", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}


def test_fragments_no_stream_line_splits_keep_their_count() -> None:
    pieces = ['{"', "city", '":"', "Li", 'ma"}']  # how a model's tokens split them: no line does that
    calls = [{"index": 0, "id": "call_1", "function": {"name": "get_weather", "arguments": ""}}]
    calls += [{"index": 0, "function": {"arguments": p}} for p in pieces]
    body = _sse(*(_delta(tool_calls=[c]) for c in calls))
    request = {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "weather?"}]}
    ex = Exchange.of("POST", "/v1/chat/completions", [], json.dumps(request).encode(), 200, [], body)
    turn = read_exchange(ex)
    assert turn is not None and turn.answer is not None
    assert turn.answer.calls[0].fragments == tuple(pieces)
    [conv] = conversations([turn])
    from mockllm.dsl.format.formatter import format_file

    out = format_file(script(conv).tree)
    assert 'tool call get_weather {"city": "Lima"} id "call_1"' in out
    assert "stream 5 chunks" in out  # the same number of fragments
