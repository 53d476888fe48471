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
