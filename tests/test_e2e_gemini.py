"""Gemini through the official `google-genai` SDK (an API key, `generativelanguage` paths) on a real
server: text and usage, a tool loop streamed end to end, parallel calls, a 429 the SDK's retry options
retry, 5xx errors, faults mid-stream and the echo double. The tool round trip it shares with the other
first providers is in test_e2e_five_providers.py."""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
import pytest
from conftest import ServeText
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from provider_cases import FAULTS, TWO_AT_ONCE, limited_then, one_reply, tool_loop
from sdk_clients import conversation, opened

MODEL = "gemini-2.5-flash"
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
GET_WEATHER = types.FunctionDeclaration(name="get_weather", parameters_json_schema=WEATHER)
GET_TIME = types.FunctionDeclaration(name="get_time", parameters_json_schema={"type": "object"})
CONFIG = types.GenerateContentConfig(
    tools=[types.Tool(function_declarations=[GET_WEATHER, GET_TIME])],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)

SCRIPT = tool_loop("gemini") + TWO_AT_ONCE


def gemini(url: str, **options: Any) -> genai.Client:
    http = types.HttpOptions(base_url=url, headers=conversation(), **options)
    return opened(genai.Client(api_key="k", http_options=http))


def test_text_and_usage(serve_text: ServeText) -> None:
    script = one_reply('text "Hello from Gemini."', "usage 12 in, 4 out")
    with serve_text(script) as url:
        client = gemini(url)  # kept: a client closes its connections when it is collected
        out = client.models.generate_content(model=MODEL, contents="hello")
    assert out.text == "Hello from Gemini."
    assert out.usage_metadata is not None
    usage = out.usage_metadata
    assert (usage.prompt_token_count, usage.candidates_token_count, usage.total_token_count) == (12, 4, 16)
    assert out.candidates is not None and out.candidates[0].finish_reason == types.FinishReason.STOP


def test_tool_loop_streamed_end_to_end(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        client = gemini(url)
        chat = client.chats.create(model=MODEL, config=CONFIG)
        chunks = list(chat.send_message_stream("What is the weather in Lima?"))
        calls = [call for chunk in chunks for call in chunk.function_calls or []]
        assert [(c.name, c.args) for c in calls] == [("get_weather", {"city": "Lima"})]
        part = types.Part.from_function_response(name="get_weather", response={"result": "sunny"})
        answer = list(chat.send_message_stream(part))
    assert "".join(chunk.text or "" for chunk in answer) == "It is sunny in Lima."
    assert len(answer) > 1  # streamed by word
    usage = answer[-1].usage_metadata
    assert usage is not None and (usage.prompt_token_count, usage.candidates_token_count) == (50, 6)


def test_parallel_tool_calls_whole_and_streamed(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        client = gemini(url)
        whole = client.models.generate_content(model=MODEL, contents="both please", config=CONFIG)
        chunks = list(client.models.generate_content_stream(model=MODEL, contents="both please", config=CONFIG))
    streamed = [call for chunk in chunks for call in chunk.function_calls or []]
    for calls in (whole.function_calls or [], streamed):
        assert [(c.name, c.args) for c in calls] == [("get_weather", {"city": "Oslo"}), ("get_time", {})]
    assert whole.usage_metadata is not None and whole.usage_metadata.total_token_count == 29


@pytest.mark.parametrize("status", [429, 503])
def test_the_sdks_retry_options_retry_a_429_and_a_5xx(serve_text: ServeText, status: int) -> None:
    retry = types.HttpRetryOptions(attempts=3, initial_delay=0.01, max_delay=0.05, jitter=0)
    with serve_text(limited_then("Resource has been exhausted.", "finally", status, after="10ms")) as url:
        client = gemini(url, retry_options=retry)
        answer = client.models.generate_content(model=MODEL, contents="x").text
        journal = httpx.get(url + "/_mockllm/requests").json()
    assert answer == "finally"
    assert [entry["status"] for entry in journal] == [status, status, 200]  # the SDK asked three times


def test_a_500_without_retry_options_is_the_sdks_server_error(serve_text: ServeText) -> None:
    with serve_text(one_reply('error 500 "boom"')) as url:
        client = gemini(url)
        with pytest.raises(genai_errors.ServerError) as info:
            client.models.generate_content(model=MODEL, contents="x")
    assert (info.value.code, info.value.status, info.value.message) == (500, "INTERNAL", "boom")


def test_faults_mid_stream(serve_text: ServeText) -> None:
    """A stream error raises the SDK's ServerError in a chat, after the text before it; a cut stream is
    the transport's error."""
    with serve_text(FAULTS) as url:
        client = gemini(url)
        chat, said = client.chats.create(model=MODEL), []
        with pytest.raises(genai_errors.ServerError, match="exploded mid-stream"):
            for chunk in chat.send_message_stream("break it"):
                said.append(chunk.text)
        cut = client.models.generate_content_stream(model=MODEL, contents="cut it")
        with pytest.raises(httpx2.RemoteProtocolError):
            list(cut)
    assert "".join(text or "" for text in said) == "one two"


def test_echo_double(serve_text: ServeText) -> None:
    with serve_text("") as url:
        client = gemini(url)
        said, called = (
            client.models.generate_content(model=MODEL, contents=text, config=CONFIG)
            for text in ("say this back", "please get_weather")
        )
    assert said.text == "say this back" and said.function_calls is None
    (call,) = called.function_calls or []
    assert call.name == "get_weather" and isinstance((call.args or {}).get("city"), str)
