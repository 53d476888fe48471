"""Cohere v2 through the official SDK (`cohere.ClientV2`, `cohere.AsyncClientV2`) on a real server:
text, streams, tool loops (with the tool plan and the "null" arguments of a parameterless call),
parallel calls, errors as the SDK's own classes, retries, mid-stream faults, usage, embeddings and
the echo double."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import cohere
import httpx
import jsonschema
import pytest
from conftest import ServeText
from provider_cases import CITY_CALL, SUNNY, WEATHER, ask, limited_then, one_reply, tool_loop
from sdk_clients import cohere_v2 as client

from mockllm.runtime.embed.embedder import cosine

MODEL = "command-a-03-2025"
CALL_ID = re.compile(r"[a-z_]+_[a-z0-9]{12}")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
TOOL_LOOP = tool_loop(
    "cohere", ['text "I will look up the weather in {{city}}."', CITY_CALL, "usage 30 in, 12 out"], SUNNY
)


def streamed(url: str, messages: list[Any], **kw: Any) -> list[Any]:
    return list(client(url).chat_stream(model=MODEL, messages=messages, **kw))


def stream_text(events: list[Any]) -> str:
    return "".join(e.delta.message.content.text or "" for e in events if e.type == "content-delta")


# ---------------------------------------------------------------- text


def test_text_with_usage_and_finish_reason(serve_text: ServeText) -> None:
    script = one_reply('text "Hello from Cohere."', "usage 11 in, 4 out")
    with serve_text(script) as url:
        out = client(url).chat(model=MODEL, messages=ask("hi"))
    assert UUID.fullmatch(out.id)
    assert out.finish_reason == "COMPLETE"
    assert out.message.content is not None
    assert [(c.type, c.text) for c in out.message.content] == [("text", "Hello from Cohere.")]  # type: ignore[union-attr]
    assert out.usage is not None and out.usage.tokens is not None and out.usage.billed_units is not None
    assert (out.usage.tokens.input_tokens, out.usage.tokens.output_tokens) == (11, 4)
    assert (out.usage.billed_units.input_tokens, out.usage.billed_units.output_tokens) == (11, 4)


def test_stream_events_in_order(serve_text: ServeText) -> None:
    script = one_reply('text "one two three"', "stream by word", "usage 5 in, 3 out")
    with serve_text(script) as url:
        events = streamed(url, ask("count"))
    kinds = [e.type for e in events]
    assert kinds == ["message-start", "content-start", *["content-delta"] * 3, "content-end", "message-end"]
    assert [e.delta.message.content.text for e in events if e.type == "content-delta"] == ["one", " two", " three"]
    assert UUID.fullmatch(events[0].id)
    end = events[-1].delta
    assert end.finish_reason == "COMPLETE"
    assert (end.usage.tokens.input_tokens, end.usage.tokens.output_tokens) == (5, 3)


def test_async_client_streams(serve_text: ServeText) -> None:
    script = one_reply('text "async works"', "stream by word")

    async def run(url: str) -> list[Any]:
        async with httpx.AsyncClient(timeout=60) as http:
            co = cohere.AsyncClientV2(base_url=url, api_key="k", httpx_client=http)
            return [e async for e in co.chat_stream(model=MODEL, messages=ask("x"))]

    with serve_text(script) as url:
        events = asyncio.run(run(url))
    assert stream_text(events) == "async works"
    assert events[-1].type == "message-end"


def test_thinking_is_a_thinking_content_block(serve_text: ServeText) -> None:
    script = one_reply('thinking "The user greets me."', 'text "Hi."')
    with serve_text(script) as url:
        whole = client(url).chat(model="command-a-reasoning-08-2025", messages=ask("hello"))
        events = streamed(url, ask("hello again"))
    content = whole.message.content or []
    assert [(c.type, getattr(c, "thinking", None) or getattr(c, "text", None)) for c in content] == [
        ("thinking", "The user greets me."),
        ("text", "Hi."),
    ]
    starts = [e.delta.message.content.type for e in events if e.type == "content-start"]
    assert starts == ["thinking", "text"]
    thoughts = "".join(e.delta.message.content.thinking or "" for e in events if e.type == "content-delta")
    assert thoughts == "The user greets me."
    assert stream_text(events) == "Hi."


# ---------------------------------------------------------------- tools


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_tool_loop(serve_text: ServeText, stream: bool) -> None:
    with serve_text(TOOL_LOOP) as url:
        co = client(url)
        messages = ask("What is the weather in Lima?")
        if stream:
            events = list(co.chat_stream(model=MODEL, messages=messages, tools=WEATHER))
            plan = "".join(e.delta.message.tool_plan for e in events if e.type == "tool-plan-delta")
            start = next(e for e in events if e.type == "tool-call-start")
            call_id, name = start.delta.message.tool_calls.id, start.delta.message.tool_calls.function.name
            arguments = "".join(
                e.delta.message.tool_calls.function.arguments for e in events if e.type == "tool-call-delta"
            )
            assert [e.type for e in events][-2:] == ["tool-call-end", "message-end"]
            assert events[-1].delta.finish_reason == "TOOL_CALL"
            assistant: Any = {
                "role": "assistant",
                "tool_plan": plan,
                "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
            }
        else:
            first = co.chat(model=MODEL, messages=messages, tools=WEATHER)
            assert first.finish_reason == "TOOL_CALL"
            assert first.message.content is None
            plan = first.message.tool_plan or ""
            (call,) = first.message.tool_calls or []
            assert call.function is not None
            call_id, name, arguments = call.id, call.function.name, call.function.arguments or ""
            assert first.usage is not None and first.usage.tokens is not None
            assert (first.usage.tokens.input_tokens, first.usage.tokens.output_tokens) == (30, 12)
            assistant = first.message  # the SDK's own object goes back into the history
        assert plan == "I will look up the weather in Lima."
        assert (name, json.loads(arguments)) == ("get_weather", {"city": "Lima"})
        assert CALL_ID.fullmatch(call_id) and call_id.startswith("get_weather_")
        result = {"type": "document", "document": {"data": json.dumps({"forecast": "sunny", "c": 24})}}
        messages += [assistant, {"role": "tool", "tool_call_id": call_id, "content": [result]}]
        if stream:
            events = list(co.chat_stream(model=MODEL, messages=messages, tools=WEATHER))
            assert stream_text(events) == "It is sunny in Lima."
            assert events[-1].delta.finish_reason == "COMPLETE"
        else:
            final = co.chat(model=MODEL, messages=messages, tools=WEATHER)
            assert final.message.content is not None
            assert final.message.content[0].text == "It is sunny in Lima."  # type: ignore[union-attr]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_parallel_calls_and_the_null_arguments_of_a_parameterless_tool(serve_text: ServeText, stream: bool) -> None:
    script = """
scenario "s":
    step a:
        reply:
            tool call get_weather {"city": "Oslo"}
            tool call get_weather {"city": "Rome"}
            tool call get_time {}
            stream by word
    step b:
        when:
            tool result for "get_time" is present
        reply:
            text "Three results."
"""
    with serve_text(script) as url:
        co = client(url)
        if stream:
            events = list(co.chat_stream(model=MODEL, messages=ask("two cities and the time")))
            calls: dict[int, dict[str, str]] = {}
            for e in events:
                if e.type == "tool-call-start":
                    tc = e.delta.message.tool_calls
                    calls[e.index] = {"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments}
                elif e.type == "tool-call-delta":
                    calls[e.index]["arguments"] += e.delta.message.tool_calls.function.arguments
            found = [(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())]
        else:
            out = co.chat(model=MODEL, messages=ask("two cities and the time"))
            found = [(c.id, c.function.name, c.function.arguments) for c in out.message.tool_calls or []]  # type: ignore[union-attr]
        assert [(n, None if a == "null" else json.loads(a)) for _, n, a in found] == [
            ("get_weather", {"city": "Oslo"}),
            ("get_weather", {"city": "Rome"}),
            ("get_time", None),
        ]
        assert found[2][2] == "null"  # Cohere's quirk: a parameterless call's arguments are the string "null"
        ids = [i for i, _, _ in found]
        assert len(set(ids)) == 3 and all(CALL_ID.fullmatch(i) for i in ids)
        history: list[Any] = [
            *ask("two cities and the time"),
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in found
                ],
            },
            *({"role": "tool", "tool_call_id": i, "content": f"result {k}"} for k, (i, _, _) in enumerate(found)),
        ]
        final = co.chat(model=MODEL, messages=history)
    assert final.message.content is not None and final.message.content[0].text == "Three results."  # type: ignore[union-attr]


def test_tool_result_for_an_unknown_call_is_a_bad_request(serve_text: ServeText) -> None:
    with serve_text(TOOL_LOOP) as url:
        history: Any = [*ask("hi"), {"role": "tool", "tool_call_id": "nope_123", "content": "sunny"}]
        with pytest.raises(cohere.BadRequestError) as info:
            client(url).chat(model=MODEL, messages=history)
    assert "nope_123" in info.value.body["message"]


# ---------------------------------------------------------------- errors and faults


def test_rate_limit_is_retried_by_the_sdk(serve_text: ServeText) -> None:
    script = limited_then("You are using a Trial key, which is limited to 10 API calls / minute.", "Third time lucky.")
    with serve_text(script) as url:
        started = time.monotonic()
        out = client(url).chat(model=MODEL, messages=ask("x"))  # max_retries defaults to 2
        elapsed = time.monotonic() - started
    assert out.message.content is not None and out.message.content[0].text == "Third time lucky."  # type: ignore[union-attr]
    assert elapsed >= 0.39  # the SDK waited retry-after-ms (200) twice


def test_rate_limit_without_retries_raises_too_many_requests(serve_text: ServeText) -> None:
    script = one_reply('error 429 "slow down"', "retry after 2s")
    with serve_text(script) as url:
        with pytest.raises(cohere.TooManyRequestsError) as info:
            client(url, max_retries=0).chat(model=MODEL, messages=ask("x"))
    assert info.value.status_code == 429
    assert info.value.body["message"] == "slow down"
    assert UUID.fullmatch(info.value.body["id"])
    assert info.value.headers["retry-after"] == "2"


@pytest.mark.parametrize(
    ("status", "error"),
    [(500, cohere.InternalServerError), (503, cohere.ServiceUnavailableError), (400, cohere.BadRequestError)],
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_error_status_raises_the_sdk_class(serve_text: ServeText, status: int, error: type, stream: bool) -> None:
    script = one_reply(f'error {status} "boom {status}"')
    with serve_text(script) as url:
        co = client(url, max_retries=0)
        with pytest.raises(error) as info:
            if stream:
                list(co.chat_stream(model=MODEL, messages=ask("x")))
            else:
                co.chat(model=MODEL, messages=ask("x"))
    assert info.value.body["message"] == f"boom {status}"  # type: ignore[attr-defined]


def test_mid_stream_error_ends_with_an_error_message_end(serve_text: ServeText) -> None:
    script = one_reply(
        'text "one two three four five"', "stream by word", 'stream error "internal server error" after 2 chunks'
    )
    with serve_text(script) as url:
        events = streamed(url, ask("x"))
    assert stream_text(events) == "one two"
    end = events[-1]
    assert (end.type, end.delta.finish_reason, end.delta.error) == ("message-end", "ERROR", "internal server error")


def test_cut_stream_raises_in_the_client(serve_text: ServeText) -> None:
    script = one_reply('text "one two three four five"', "stream by word", "disconnect after 2 chunks")
    seen: list[Any] = []
    with serve_text(script) as url:
        with pytest.raises(httpx.RemoteProtocolError):
            for event in client(url).chat_stream(model=MODEL, messages=ask("x")):
                seen.append(event)
    assert stream_text(seen) == "one two"
    assert "message-end" not in [e.type for e in seen]


def test_missing_key_is_unauthorized(serve_text: ServeText) -> None:
    with serve_text(TOOL_LOOP) as url:
        r = httpx.post(url + "/v2/chat", json={"model": MODEL, "messages": ask("x")})
    assert r.status_code == 401
    assert r.json()["message"] == "no api key supplied"


def test_bad_request_names_the_field(serve_text: ServeText) -> None:
    with serve_text(TOOL_LOOP) as url:
        with pytest.raises(cohere.BadRequestError) as info:
            client(url).chat(model=MODEL, messages=[{"role": "robot", "content": "x"}])
    assert info.value.body["message"] == "messages[0].role: 'robot' is not one of 'system', 'user', 'assistant', 'tool'"


# ---------------------------------------------------------------- embeddings


def test_embed_float_and_quantized_types(serve_text: ServeText) -> None:
    with serve_text("") as url:
        out = client(url).embed(
            model="embed-v4.0",
            texts=["the cat sat", "the cat sat down", "stock prices fell"],
            input_type="search_document",
            embedding_types=["float", "int8", "uint8", "binary", "base64"],
        )
    vectors = out.embeddings.float_ or []
    assert len(vectors) == 3 and all(len(v) == 1536 for v in vectors)  # embed-v4.0's dimension
    assert out.texts == ["the cat sat", "the cat sat down", "stock prices fell"]

    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])
    int8 = out.embeddings.int8 or []
    assert all(-128 <= x <= 127 for x in int8[0]) and len(int8[0]) == 1536 and any(int8[0])
    assert all(0 <= x <= 255 for x in (out.embeddings.uint8 or [])[0])
    assert len((out.embeddings.binary or [])[0]) == 1536 // 8
    assert len(out.embeddings.base64 or []) == 3


def test_embed_output_dimension_and_errors(serve_text: ServeText) -> None:
    with serve_text("") as url:
        co = client(url)
        out = co.embed(model="embed-v4.0", texts=["a"], input_type="search_query", output_dimension=256)
        assert len((out.embeddings.float_ or [])[0]) == 256
        with pytest.raises(cohere.BadRequestError) as info:
            co.embed(model="embed-v4.0", texts=["a"], input_type="search_query", output_dimension=300)
    assert "output_dimension" in info.value.body["message"]


# ---------------------------------------------------------------- the echo double


def test_echo_double_answers_and_calls_tools_with_schema_valid_arguments(serve_text: ServeText) -> None:
    schema = json.loads((Path(__file__).parent / "schemas" / "calendar_create_event.json").read_text())
    tools: Any = [{"type": "function", "function": {"name": "create_event", "parameters": schema}}]
    with serve_text("") as url:
        co = client(url)
        text = co.chat(model=MODEL, messages=ask("Say this back"))
        events = list(co.chat_stream(model=MODEL, messages=ask("please create_event now"), tools=tools))
    assert text.message.content is not None and text.message.content[0].text == "Say this back"  # type: ignore[union-attr]
    arguments = "".join(e.delta.message.tool_calls.function.arguments for e in events if e.type == "tool-call-delta")
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(json.loads(arguments))
    assert events[-1].delta.finish_reason == "TOOL_CALL"
