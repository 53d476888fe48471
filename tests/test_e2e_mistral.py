"""Mistral through its official SDK (`mistralai.client.Mistral`: `chat.complete`, `chat.stream`,
`embeddings.create`) on a real server: text, streams, tool loops, parallel calls with 9-character ids,
`tool_choice` values, errors, retries, mid-stream faults, usage, embeddings and the echo double; and
the rule that tells a Mistral request from an OpenAI one on the paths they share."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import httpx2
import jsonschema
import openai
import pytest
from conftest import ServeText
from mistralai.client import Mistral, errors
from mistralai.client.utils import BackoffStrategy, RetryConfig
from provider_cases import CITY_CALL, SUNNY, WEATHER, ask, limited_then, one_reply, tool_loop
from sdk_clients import mistral as client
from sdk_clients import opened

from mockllm.runtime.embed.embedder import cosine

MODEL = "mistral-small-latest"
CALL_ID = re.compile(r"[A-Za-z0-9]{9}")
TOOL_LOOP = tool_loop("mistral", [CITY_CALL, "usage 40 in, 9 out"], SUNNY)


def chunks(url: str, messages: list[Any], **kw: Any) -> list[Any]:
    with client(url).chat.stream(model=MODEL, messages=messages, **kw) as stream:
        return [event.data for event in stream]


def text_of(events: list[Any]) -> str:
    return "".join(c.choices[0].delta.content or "" for c in events if isinstance(c.choices[0].delta.content, str))


# ---------------------------------------------------------------- text


def test_text_with_usage_and_finish_reason(serve_text: ServeText) -> None:
    script = one_reply('text "Bonjour."', "usage 12 in, 3 out")
    with serve_text(script) as url:
        out = client(url).chat.complete(model=MODEL, messages=ask("salut"))
    assert re.fullmatch(r"[0-9a-f]{32}", out.id)
    assert (out.object, out.model) == ("chat.completion", MODEL)
    choice = out.choices[0]
    assert (choice.message.content, choice.finish_reason, choice.message.tool_calls) == ("Bonjour.", "stop", None)
    assert (out.usage.prompt_tokens, out.usage.completion_tokens, out.usage.total_tokens) == (12, 3, 15)


def test_stream_text_and_usage_on_the_last_chunk(serve_text: ServeText) -> None:
    script = one_reply('text "un deux trois"', "stream by word", "usage 7 in, 3 out")
    with serve_text(script) as url:
        events = chunks(url, ask("compte"))
    assert text_of(events) == "un deux trois"
    assert [c.choices[0].finish_reason for c in events] == [None, None, None, None, "stop"]
    assert [c.usage is not None for c in events] == [False, False, False, False, True]
    assert (events[-1].usage.prompt_tokens, events[-1].usage.completion_tokens) == (7, 3)
    assert len({c.id for c in events}) == 1


def test_async_stream(serve_text: ServeText) -> None:
    import asyncio

    script = one_reply('text "async fine"', "stream by word")

    async def run(url: str) -> str:
        async with client(url) as m:  # closes the async HTTP client the SDK opened
            stream = await m.chat.stream_async(model=MODEL, messages=ask("x"))
            return "".join([e.data.choices[0].delta.content or "" async for e in stream])

    with serve_text(script) as url:
        assert asyncio.run(run(url)) == "async fine"


def test_thinking_is_a_thinking_chunk(serve_text: ServeText) -> None:
    script = one_reply('thinking "Short question, short answer."', 'text "Yes."')
    with serve_text(script) as url:
        out = client(url).chat.complete(model="magistral-small-latest", messages=ask("ok?"))
        events = chunks(url, ask("ok again?"))
    thinking, text = out.choices[0].message.content  # type: ignore[misc]
    assert (thinking.type, thinking.thinking[0].text) == ("thinking", "Short question, short answer.")  # type: ignore[union-attr]
    assert (text.type, text.text) == ("text", "Yes.")  # type: ignore[union-attr]
    streamed = [
        part.thinking[0].text
        for c in events
        if isinstance(c.choices[0].delta.content, list)
        for part in c.choices[0].delta.content
    ]
    assert "".join(streamed) == "Short question, short answer."  # type: ignore[arg-type]
    assert text_of(events) == "Yes."


# ---------------------------------------------------------------- tools


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_tool_loop(serve_text: ServeText, stream: bool) -> None:
    with serve_text(TOOL_LOOP) as url:
        m = client(url)
        messages = ask("What is the weather in Paris?")
        if stream:
            events = chunks(url, messages, tools=WEATHER, tool_choice="any")
            calls = [tc for c in events for tc in c.choices[0].delta.tool_calls or []]
            assert events[-1].choices[0].finish_reason == "tool_calls"
            usage = events[-1].usage
        else:
            out = m.chat.complete(model=MODEL, messages=messages, tools=WEATHER, tool_choice="any")
            assert out.choices[0].finish_reason == "tool_calls"
            calls = out.choices[0].message.tool_calls or []
            usage = out.usage
        (call,) = calls
        assert CALL_ID.fullmatch(call.id)
        assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Paris"})  # type: ignore[arg-type]
        assert (usage.prompt_tokens, usage.completion_tokens) == (40, 9)  # type: ignore[union-attr]
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "name": "get_weather", "content": "sunny, 24C"},
        ]
        if stream:
            assert text_of(chunks(url, messages, tools=WEATHER)) == "It is sunny in Paris."
        else:
            final = m.chat.complete(model=MODEL, messages=messages, tools=WEATHER)
            assert final.choices[0].message.content == "It is sunny in Paris."


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_parallel_calls(serve_text: ServeText, stream: bool) -> None:
    script = """
scenario "s":
    step a:
        reply:
            tool call get_weather {"city": "Oslo"}
            tool call get_weather {"city": "Rome"}
    step b:
        when:
            tool result for "get_weather" is present
        reply:
            text "Both done."
"""
    with serve_text(script) as url:
        if stream:
            events = chunks(url, ask("two cities"), tools=WEATHER)
            calls = [tc for c in events for tc in c.choices[0].delta.tool_calls or []]
        else:
            out = client(url).chat.complete(model=MODEL, messages=ask("two cities"), tools=WEATHER)
            calls = out.choices[0].message.tool_calls or []
        assert [(c.index, json.loads(c.function.arguments)) for c in calls] == [  # type: ignore[arg-type]
            (0, {"city": "Oslo"}),
            (1, {"city": "Rome"}),
        ]
        assert len({c.id for c in calls}) == 2 and all(CALL_ID.fullmatch(c.id or "") for c in calls)
        history: list[Any] = [
            *ask("two cities"),
            {"role": "assistant", "content": "", "tool_calls": [c.model_dump() for c in calls]},
            *({"role": "tool", "tool_call_id": c.id, "name": "get_weather", "content": "ok"} for c in calls),
        ]
        final = client(url).chat.complete(model=MODEL, messages=history, tools=WEATHER)
    assert final.choices[0].message.content == "Both done."


def test_history_with_object_arguments_is_read(serve_text: ServeText) -> None:
    script = """
scenario "s":
    step a:
        when:
            tool result for "get_weather" contains "rain"
        reply:
            text "Take an umbrella."
"""
    history: Any = [
        *ask("weather?"),
        {
            "role": "assistant",
            "tool_calls": [{"id": "a1B2c3D4e", "function": {"name": "get_weather", "arguments": {}}}],
        },
        {"role": "tool", "tool_call_id": "a1B2c3D4e", "name": "get_weather", "content": "rain"},
    ]
    with serve_text(script) as url:
        out = client(url).chat.complete(model=MODEL, messages=history)
    assert out.choices[0].message.content == "Take an umbrella."


def test_openai_style_call_ids_are_refused(serve_text: ServeText) -> None:
    history: Any = [
        *ask("weather?"),
        {"role": "assistant", "tool_calls": [{"id": "call_abc", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_abc", "name": "f", "content": "x"},
    ]
    with serve_text(TOOL_LOOP) as url:
        with pytest.raises(errors.SDKError) as info:
            client(url).chat.complete(model=MODEL, messages=history)
    assert info.value.status_code == 400
    body = json.loads(info.value.body)
    assert body["object"] == "error"
    assert body["message"].startswith("Tool call id was call_abc but must be a-z, A-Z, 0-9, with a length of 9.")


@pytest.mark.parametrize("choice", ["auto", "none", "any", "required", {"type": "function", "function": {"name": "f"}}])
def test_tool_choice_values_are_accepted(serve_text: ServeText, choice: Any) -> None:
    tools: Any = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    with serve_text("") as url:
        out = client(url).chat.complete(model=MODEL, messages=ask("hello"), tools=tools, tool_choice=choice)
    assert out.choices[0].message.content == "hello"


def test_unknown_tool_choice_is_refused(serve_text: ServeText) -> None:
    with serve_text("") as url:
        r = httpx.post(
            url + "/v1/chat/completions",
            headers={"authorization": "Bearer k", "x-mockllm-provider": "mistral"},
            json={"model": MODEL, "messages": ask("x"), "tool_choice": "sometimes"},
        )
    assert r.status_code == 400
    assert r.json()["message"] == "tool_choice: 'sometimes' is not one of 'auto', 'none', 'any', 'required'"


# ---------------------------------------------------------------- which provider answers


def test_the_user_agent_decides_and_the_header_forces(serve_text: ServeText) -> None:
    script = """
scenario "m":
    when:
        provider is mistral
    step mistral:
        repeat 2
        reply:
            text "mistral"

scenario "o":
    when:
        provider is openai
    step openai:
        repeat 2
        reply:
            text "openai"
"""
    with serve_text(script) as url:
        assert client(url).chat.complete(model=MODEL, messages=ask("x")).choices[0].message.content == "mistral"
        oa = opened(openai.OpenAI(base_url=url + "/v1", api_key="k"))
        assert oa.chat.completions.create(model=MODEL, messages=ask("x")).choices[0].message.content == "openai"
        forced = opened(
            openai.OpenAI(base_url=url + "/v1", api_key="k", default_headers={"x-mockllm-provider": "mistral"})
        )
        raw = forced.chat.completions.with_raw_response.create(model=MODEL, messages=ask("x"))
        assert re.fullmatch(r"[0-9a-f]{32}", json.loads(raw.text)["id"])  # Mistral's shape
        as_openai = client(url, {"x-mockllm-provider": "openai"})
        assert as_openai.chat.complete(model=MODEL, messages=ask("x")).id.startswith("chatcmpl-")


# ---------------------------------------------------------------- errors and faults


def test_rate_limit_is_retried_with_a_retry_config(serve_text: ServeText) -> None:
    script = limited_then("Requests rate limit exceeded", "Third time lucky.")
    retries = RetryConfig("backoff", BackoffStrategy(50, 1000, 1.5, 30_000), retry_connection_errors=False)
    with serve_text(script) as url:
        started = time.monotonic()
        out = client(url, retry_config=retries).chat.complete(model=MODEL, messages=ask("x"))
        elapsed = time.monotonic() - started
    assert out.choices[0].message.content == "Third time lucky."
    assert elapsed >= 0.39  # retry-after (200 ms) honoured twice


def test_rate_limit_without_a_retry_config_raises(serve_text: ServeText) -> None:
    script = one_reply('error 429 "Requests rate limit exceeded"', "retry after 1s")
    with serve_text(script) as url:
        with pytest.raises(errors.SDKError) as info:
            client(url).chat.complete(model=MODEL, messages=ask("x"))  # the SDK does not retry by default
    assert info.value.status_code == 429
    assert json.loads(info.value.body) == {
        "object": "error",
        "message": "Requests rate limit exceeded",
        "type": "rate_limited",
        "param": None,
        "code": None,
    }
    assert info.value.headers["retry-after"] == "1"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_server_error(serve_text: ServeText, stream: bool) -> None:
    script = one_reply('error 503 "Service unavailable"')
    with serve_text(script) as url:
        with pytest.raises(errors.SDKError) as info:
            if stream:
                chunks(url, ask("x"))
            else:
                client(url).chat.complete(model=MODEL, messages=ask("x"))
    assert info.value.status_code == 503
    assert json.loads(info.value.body)["type"] == "internal_server_error"


def test_mid_stream_error_event(serve_text: ServeText) -> None:
    script = one_reply(
        'text "one two three four"', "stream by word", 'stream error "Internal server error" after 2 chunks'
    )
    seen: list[Any] = []
    with serve_text(script) as url:
        with pytest.raises(errors.ResponseValidationError) as info:  # the error event is no chunk
            with client(url).chat.stream(model=MODEL, messages=ask("x")) as stream:
                seen.extend(event.data for event in stream)
    assert text_of(seen) == "one two"
    event = info.value.cause.errors()[0]["input"]  # the event the SDK could not read as a chunk
    assert (event["object"], event["message"]) == ("error", "Internal server error")


def test_cut_stream_raises(serve_text: ServeText) -> None:
    script = one_reply('text "one two three four"', "stream by word", "disconnect after 2 chunks")
    seen: list[Any] = []
    with serve_text(script) as url:
        with pytest.raises(httpx2.RemoteProtocolError):
            with client(url).chat.stream(model=MODEL, messages=ask("x")) as stream:
                seen.extend(event.data for event in stream)
    assert text_of(seen) == "one two"
    assert all(c.choices[0].finish_reason is None for c in seen)


def test_missing_key_is_unauthorized(serve_text: ServeText) -> None:
    with serve_text(TOOL_LOOP) as url:
        with pytest.raises(errors.SDKError) as info:
            Mistral(server_url=url, client=opened(httpx2.Client())).chat.complete(model=MODEL, messages=ask("x"))
    assert info.value.status_code == 401


# ---------------------------------------------------------------- embeddings


def test_embeddings(serve_text: ServeText) -> None:
    with serve_text("") as url:
        m = client(url)
        out = m.embeddings.create(model="mistral-embed", inputs=["a red apple", "a red apple pie", "tax law"])
    assert re.fullmatch(r"[0-9a-f]{32}", out.id)
    vectors = [d.embedding or [] for d in out.data]
    assert [d.index for d in out.data] == [0, 1, 2] and all(len(v) == 1024 for v in vectors)

    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])
    assert out.usage.prompt_tokens == out.usage.total_tokens > 0


# ---------------------------------------------------------------- the echo double


def test_echo_double_with_a_schema_valid_tool_call(serve_text: ServeText) -> None:
    schema = json.loads((Path(__file__).parent / "schemas" / "calendar_create_event.json").read_text())
    tools: Any = [{"type": "function", "function": {"name": "create_event", "parameters": schema}}]
    with serve_text("") as url:
        m = client(url)
        text = m.chat.complete(model=MODEL, messages=ask("Repeat after me"))
        events = chunks(url, ask("please create_event now"), tools=tools)
    assert text.choices[0].message.content == "Repeat after me"
    (call,) = [tc for c in events for tc in c.choices[0].delta.tool_calls or []]
    assert CALL_ID.fullmatch(call.id or "")
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(
        json.loads(call.function.arguments)  # type: ignore[arg-type]
    )
    assert events[-1].choices[0].finish_reason == "tool_calls"
