"""Ollama through the official `ollama` Python client on a real server: text and usage, a tool loop
streamed end to end, parallel calls, 429 and 5xx errors (the client has no retry of its own: it raises
`ResponseError` with the status, and the caller's retry gets the answer), faults mid-stream and the
echo double. The tool round trip it shares with the other first providers is in
test_e2e_five_providers.py."""

from __future__ import annotations

from typing import Any

import httpx
import ollama
import pytest
from conftest import ServeText
from provider_cases import FAULTS, TWO_AT_ONCE, ask, limited_then, one_reply, tool_loop
from sdk_clients import conversation, opened

MODEL = "llama3.2"
WEATHER: Any = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    },
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
]

SCRIPT = tool_loop("ollama") + TWO_AT_ONCE


def client(url: str) -> ollama.Client:
    return opened(ollama.Client(host=url, headers=conversation()))


def test_text_and_usage(serve_text: ServeText) -> None:
    script = one_reply('text "Hello from Ollama."', "usage 12 in, 4 out")
    with serve_text(script) as url, client(url) as c:
        out = c.chat(model=MODEL, messages=ask("hello"))
    assert out.message.content == "Hello from Ollama."
    assert (out.prompt_eval_count, out.eval_count, out.done_reason) == (12, 4, "stop")


def test_tool_loop_streamed_end_to_end(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url, client(url) as c:
        messages = ask("What is the weather in Lima?")
        parts = list(c.chat(model=MODEL, messages=messages, tools=WEATHER, stream=True))
        calls = [call for part in parts for call in part.message.tool_calls or []]
        assert [(call.function.name, dict(call.function.arguments)) for call in calls] == [
            ("get_weather", {"city": "Lima"})
        ]
        messages += [{"role": "assistant", "content": "", "tool_calls": calls}]
        messages += [{"role": "tool", "tool_name": "get_weather", "content": "sunny"}]
        answer = list(c.chat(model=MODEL, messages=messages, tools=WEATHER, stream=True))
    assert "".join(part.message.content or "" for part in answer) == "It is sunny in Lima."
    assert len(answer) > 2 and answer[-1].done
    assert (answer[-1].prompt_eval_count, answer[-1].eval_count) == (50, 6)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_parallel_tool_calls(serve_text: ServeText, stream: bool) -> None:
    with serve_text(SCRIPT) as url, client(url) as c:
        if stream:
            parts = c.chat(model=MODEL, messages=ask("both please"), tools=WEATHER, stream=True)
            calls = [call for part in parts for call in part.message.tool_calls or []]
        else:
            calls = c.chat(model=MODEL, messages=ask("both please"), tools=WEATHER).message.tool_calls or []
    assert [(call.function.name, dict(call.function.arguments)) for call in calls] == [
        ("get_weather", {"city": "Oslo"}),
        ("get_time", {}),
    ]


def test_429_then_the_callers_retry_gets_the_answer(serve_text: ServeText) -> None:
    script = limited_then("too many requests", "finally", after="10ms")
    with serve_text(script) as url, client(url) as c:
        for _ in range(2):  # the client has no retry of its own
            with pytest.raises(ollama.ResponseError) as info:
                c.chat(model=MODEL, messages=ask("x"))
            assert (info.value.status_code, info.value.error) == (429, "too many requests")
        assert c.chat(model=MODEL, messages=ask("x")).message.content == "finally"


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors(serve_text: ServeText, status: int) -> None:
    script = one_reply(f'error {status} "boom {status}"')
    with serve_text(script) as url, client(url) as c:
        with pytest.raises(ollama.ResponseError) as info:
            c.chat(model=MODEL, messages=ask("x"))
    assert (info.value.status_code, info.value.error) == (status, f"boom {status}")


def test_faults_mid_stream(serve_text: ServeText) -> None:
    script = FAULTS
    with serve_text(script) as url, client(url) as c:
        got: list[str] = []
        with pytest.raises(ollama.ResponseError, match="exploded mid-stream"):
            for part in c.chat(model=MODEL, messages=ask("break it"), stream=True):
                got.append(part.message.content or "")
        assert "".join(got) == "one two"
        with pytest.raises(httpx.RemoteProtocolError):  # the transport's error: the stream ended mid-message
            list(c.chat(model=MODEL, messages=ask("cut it"), stream=True))


def test_echo_double(serve_text: ServeText) -> None:
    with serve_text("") as url, client(url) as c:
        said = c.chat(model=MODEL, messages=ask("say this back"))
        called = c.chat(model=MODEL, messages=ask("please get_weather"), tools=WEATHER)
    assert said.message.content == "say this back"
    calls = called.message.tool_calls or []
    assert [call.function.name for call in calls] == ["get_weather"]
    assert isinstance(dict(calls[0].function.arguments).get("city"), str)


# ---------------------------------------------------------------- /api/generate (issue 34)

GENERATE = """
scenario "Completion":
    step capital:
        when:
            system prompt contains "brief"
            last user message contains "capital"
        reply:
            thinking "The user wants a city."
            text "Paris is the capital."
            usage 9 in, 5 out
    step population:
        after capital
        when:
            system prompt contains "brief"
            last user message contains "population"
        reply:
            text "About two million."

scenario "Picture":
    step picture:
        when:
            model is "llava"
            field "raw" is true
        reply:
            text "A red pixel."
"""
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="


def test_generate_is_matched_as_a_chat_turn_and_context_continues_it(serve_text: ServeText) -> None:
    with serve_text(GENERATE) as url, client(url) as c:
        first = c.generate(model=MODEL, prompt="What is the capital of France?", system="Be brief.", think=True)
        assert (first.response, first.thinking, first.done, first.done_reason) == (
            "Paris is the capital.",
            "The user wants a city.",
            True,
            "stop",
        )
        assert (first.prompt_eval_count, first.eval_count) == (9, 5)
        assert first.context and all(isinstance(t, int) for t in first.context)
        # the next prompt carries the context back: the same chat, its next turn (and the system with it)
        second = c.generate(model=MODEL, prompt="And its population?", context=first.context)
        assert second.response == "About two million."


def test_generate_streams_ndjson_with_the_context_on_the_done_line(serve_text: ServeText) -> None:
    with serve_text(GENERATE) as url:
        with client(url) as c:
            parts = list(c.generate(model=MODEL, prompt="capital?", system="brief", stream=True))
        assert "".join(p.response for p in parts) == "Paris is the capital."
        assert [p.done for p in parts] == [False] * (len(parts) - 1) + [True]
        assert parts[-1].context and parts[-1].eval_count == 5
        with httpx.stream(
            "POST", url + "/api/generate", json={"model": MODEL, "prompt": "capital", "system": "brief"}
        ) as raw:
            assert raw.headers["content-type"] == "application/x-ndjson"
            lines = [line for line in raw.iter_lines() if line]
    assert all(line.startswith("{") and line.endswith("}") for line in lines)


def test_generate_images_and_raw(serve_text: ServeText) -> None:
    with serve_text(GENERATE) as url, client(url) as c:
        out = c.generate(model="llava", prompt="What is in this picture?", images=[PNG], raw=True)
    assert out.response == "A red pixel."


def test_generate_rejects_what_ollama_rejects(serve_text: ServeText) -> None:
    with serve_text(GENERATE) as url:
        missing = httpx.post(url + "/api/generate", json={"prompt": "hi"})
        bad_images = httpx.post(url + "/api/generate", json={"model": MODEL, "prompt": "hi", "images": ["%%%"]})
    assert missing.status_code == 400 and missing.json() == {"error": "model is required"}
    assert bad_images.status_code == 400 and "images[0]" in bad_images.json()["error"]
