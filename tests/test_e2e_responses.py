"""The OpenAI Responses API through the official `openai` SDK (`client.responses`) on a real server:
text and usage, a tool loop streamed end to end, parallel calls, a 429 and a 5xx the SDK retries
itself, faults mid-stream and the echo double. The tool round trip it shares with the other first
providers is in test_e2e_five_providers.py; interleaved calls in test_e2e_interleave.py."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from conftest import ServeText
from provider_cases import FAULTS, TWO_AT_ONCE, limited_then, one_reply, tool_loop
from sdk_clients import conversation, opened

MODEL = "gpt-4.1"
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS: Any = [
    {"type": "function", "name": "get_weather", "parameters": CITY},
    {"type": "function", "name": "get_time", "parameters": {"type": "object"}},
]

SCRIPT = tool_loop("responses") + TWO_AT_ONCE


def client(url: str, **options: Any) -> openai.OpenAI:
    return opened(openai.OpenAI(base_url=url + "/v1", api_key="k", default_headers=conversation(), **options))


def statuses(url: str) -> list[int]:
    """The status of every request the server answered, from its journal."""
    return [entry["status"] for entry in httpx.get(url + "/_mockllm/requests").json()]


def test_text_and_usage(serve_text: ServeText) -> None:
    script = one_reply('text "Hello from Responses."', "usage 12 in, 4 out")
    with serve_text(script) as url:
        out = client(url).responses.create(model=MODEL, input="hello")
    assert out.output_text == "Hello from Responses."
    assert out.status == "completed"
    assert out.usage is not None
    assert (out.usage.input_tokens, out.usage.output_tokens, out.usage.total_tokens) == (12, 4, 16)


def test_tool_loop_streamed_end_to_end(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        c = client(url)
        with c.responses.stream(model=MODEL, input="What is the weather in Lima?", tools=TOOLS) as s:
            argument_deltas = [e for e in s if e.type == "response.function_call_arguments.delta"]
            first = s.get_final_response()
        call = next(item for item in first.output if item.type == "function_call")
        assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Lima"})  # type: ignore[union-attr]
        assert argument_deltas
        output: Any = [{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]  # type: ignore[union-attr]
        with c.responses.stream(model=MODEL, input=output, tools=TOOLS, previous_response_id=first.id) as s:
            text_deltas = [e.delta for e in s if e.type == "response.output_text.delta"]
            final = s.get_final_response()
    assert "".join(text_deltas) == final.output_text == "It is sunny in Lima."
    assert len(text_deltas) > 1  # streamed by word
    assert final.usage is not None and (final.usage.input_tokens, final.usage.output_tokens) == (50, 6)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_parallel_tool_calls(serve_text: ServeText, stream: bool) -> None:
    with serve_text(SCRIPT) as url:
        c = client(url)
        if stream:
            with c.responses.stream(model=MODEL, input="both please", tools=TOOLS) as s:
                out = s.get_final_response()
        else:
            out = c.responses.create(model=MODEL, input="both please", tools=TOOLS)
    calls = [(item.name, json.loads(item.arguments)) for item in out.output if item.type == "function_call"]
    assert calls == [("get_weather", {"city": "Oslo"}), ("get_time", {})]
    ids = [item.call_id for item in out.output if item.type == "function_call"]
    assert len(set(ids)) == 2


@pytest.mark.parametrize(("status", "message"), [(429, "Rate limit reached"), (503, "unavailable")])
def test_the_sdk_retries_a_429_and_a_5xx_itself(serve_text: ServeText, status: int, message: str) -> None:
    script = limited_then(message, "finally", status, after="10ms")
    with serve_text(script) as url:
        out = client(url).responses.create(model=MODEL, input="x")
        seen = statuses(url)
    assert out.output_text == "finally"
    assert seen == [status, status, 200]  # two refused, then the answer


@pytest.mark.parametrize(
    ("status", "exc"),
    [(429, openai.RateLimitError), (500, openai.InternalServerError), (503, openai.InternalServerError)],
)
def test_errors_raise_the_sdk_class(serve_text: ServeText, status: int, exc: type[Exception]) -> None:
    script = one_reply(f'error {status} "boom {status}"')
    with serve_text(script) as url:
        with pytest.raises(exc) as info:
            client(url, max_retries=0).responses.create(model=MODEL, input="x")
    assert isinstance(info.value, openai.APIStatusError)
    assert info.value.status_code == status and f"boom {status}" in str(info.value)


def test_faults_mid_stream(serve_text: ServeText) -> None:
    script = FAULTS
    with serve_text(script) as url:
        c = client(url, max_retries=0)
        got: list[str] = []
        with pytest.raises(openai.APIError, match="exploded mid-stream"):
            for event in c.responses.create(model=MODEL, input="break it", stream=True):
                if event.type == "response.output_text.delta":
                    got.append(event.delta)
        assert "".join(got) == "one two"
        with pytest.raises((openai.APIError, httpx.HTTPError)):
            list(c.responses.create(model=MODEL, input="cut it", stream=True))


def test_echo_double(serve_text: ServeText) -> None:
    with serve_text("") as url:
        c = client(url)
        with c.responses.stream(model=MODEL, input="say this back") as s:
            said = s.get_final_response().output_text
        called = c.responses.create(model=MODEL, input="please get_weather", tools=TOOLS)
    (call,) = [item for item in called.output if item.type == "function_call"]
    assert said == "say this back"
    assert call.name == "get_weather"
    assert isinstance(json.loads(call.arguments).get("city"), str)
