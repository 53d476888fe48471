"""The official `openai` SDK against a real mockllm server on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import sdk_errors
from conftest import ServeText
from provider_cases import CELSIUS_CALL, TWO_AT_ONCE, limited_then, one_reply, tool_loop
from sdk_clients import opened

WEATHER = tool_loop(
    None,
    [CELSIUS_CALL, 'tool call get_time {"city": "{{city}}"}', "stream by 1 characters"],
    ['text "It is 18°C and sunny in {{city}}."', "stream 4 chunks"],
    tools_include=True,
    result="is present",
)

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
]


def client(url: str, **kw: object) -> openai.OpenAI:
    return opened(openai.OpenAI(base_url=url + "/v1", api_key="test", **kw))  # type: ignore[arg-type]


def complete(c: openai.OpenAI, messages: list[dict[str, object]], stream: bool, headers: dict[str, str] | None) -> Any:
    """One turn, through the stream helper or a plain create."""
    kwargs: Any = {"model": "gpt-4o", "messages": messages, "tools": TOOLS, "extra_headers": headers}
    if stream:
        with c.chat.completions.stream(**kwargs) as s:
            return s.get_final_completion()
    return c.chat.completions.create(**kwargs)


def run_weather_turns(c: openai.OpenAI, city: str, stream: bool, conversation: str | None = None) -> str:
    headers = {"x-mockllm-conversation": conversation} if conversation else None
    messages: list[dict[str, object]] = [{"role": "user", "content": f"What is the weather in {city}?"}]
    first = complete(c, messages, stream, headers)
    msg = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    calls = msg.tool_calls or []
    assert [tc.function.name for tc in calls] == ["get_weather", "get_time"]
    assert json.loads(calls[0].function.arguments) == {"city": city, "unit": "celsius"}
    assert len({tc.id for tc in calls}) == 2
    messages.append(msg.model_dump(exclude_none=True))
    for tc in calls:
        messages.append({"role": "tool", "tool_call_id": tc.id, "content": "18C sunny"})
    second = complete(c, messages, stream, headers)
    assert second.choices[0].finish_reason == "stop"
    return second.choices[0].message.content or ""


@pytest.mark.parametrize("stream", [False, True])
def test_tool_round_trip(serve_text: ServeText, stream: bool) -> None:
    """Both turns of a tool round trip, with one-character argument fragments when streamed."""
    with serve_text(WEATHER) as url:
        assert run_weather_turns(client(url), "Paris", stream) == "It is 18°C and sunny in Paris."


def test_raw_stream_chunks_and_usage(serve_text: ServeText) -> None:
    """The raw stream: role once, 4 text chunks joining to the text, usage chunk last when asked."""
    script = (
        'scenario "s":\n    step a:\n        reply:\n            text "one two three four"\n'
        "            stream 4 chunks\n"
    )
    with serve_text(script) as url:
        chunks = list(
            client(url).chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert [d.role for d in deltas if d.role] == ["assistant"]
    texts = [d.content for d in deltas if d.content]
    assert len(texts) == 4 and "".join(texts) == "one two three four"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens >= 1


def test_fifty_parallel_conversations_no_cross_talk(serve_text: ServeText) -> None:
    """50 conversations, each a two-turn tool loop, in parallel threads: each sees its own city."""
    cities = [f"City{i:02d}" for i in range(50)]
    results: dict[str, str] = {}
    errors: list[BaseException] = []
    with serve_text(WEATHER) as url:
        c = client(url)

        def work(city: str) -> None:
            try:
                results[city] = run_weather_turns(c, city, stream=city.endswith(("1", "3", "5")))
            except BaseException as e:  # collected and re-raised in the main thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(city,)) for city in cities]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert not errors, errors[0]
    assert results == {city: f"It is 18°C and sunny in {city}." for city in cities}


def test_retries_through_429_honouring_retry_after(serve_text: ServeText) -> None:
    """Two 429s with retry-after 300ms, then the answer: the SDK's default retries get through, and
    it waited for retry-after each time."""
    script = limited_then("Rate limit reached", "finally", after="300ms")
    with serve_text(script) as url:
        started = time.monotonic()
        out = client(url).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        elapsed = time.monotonic() - started
    assert out.choices[0].message.content == "finally"
    assert elapsed >= 0.55  # two retry-after waits of 300 ms (wall clock only from below: see conftest.SleepLog)


def test_retries_through_5xx(serve_text: ServeText) -> None:
    script = limited_then("unavailable", "back", 503, after="10ms", times=1)
    with serve_text(script) as url:
        out = client(url).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert out.choices[0].message.content == "back"


@pytest.mark.parametrize(("status", "exc"), sdk_errors.OPENAI)
def test_error_status_maps_to_sdk_exception(serve_text: ServeText, status: int, exc: type[Exception]) -> None:
    with serve_text(sdk_errors.error_script(status)) as url:
        with pytest.raises(exc) as info:
            client(url, max_retries=0).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    sdk_errors.check_scripted(info.value, status, openai.APIStatusError)


def test_in_band_stream_error(serve_text: ServeText) -> None:
    script = one_reply('text "one two three four five"', 'stream error "exploded mid-stream" after 2 chunks')
    with serve_text(script) as url:
        got: list[str] = []
        with pytest.raises(openai.APIError, match="exploded mid-stream"):
            for chunk in client(url).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], stream=True
            ):
                if chunk.choices and chunk.choices[0].delta.content:
                    got.append(chunk.choices[0].delta.content)
    assert "".join(got) == "one two"


def test_disconnect_mid_stream_is_an_error_and_server_survives(serve_text: ServeText) -> None:
    script = """
scenario "s":
    step cut:
        reply:
            text "one two three four five"
            disconnect after 2 chunks
    step fine:
        reply:
            text "still here"
"""
    with serve_text(script) as url:
        c = client(url, max_retries=0)
        with pytest.raises((openai.APIError, httpx.HTTPError)):
            list(c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True))
        again = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert again.choices[0].message.content == "still here"
        journal = httpx.get(url + "/_mockllm/requests").json()
    entries = journal["requests"] if isinstance(journal, dict) else journal
    assert any(e.get("client_gone") or "disconnect" in json.dumps(e) for e in entries)


def test_latency_before_first_byte(serve_text: ServeText) -> None:
    script = 'scenario "s":\n    step a:\n        reply:\n            text "late"\n            latency 250ms\n'
    with serve_text(script) as url:
        started = time.monotonic()
        out = client(url).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        elapsed = time.monotonic() - started
    assert out.choices[0].message.content == "late"
    assert elapsed >= 0.245


def test_unmatched_request_explains_itself(serve_text: ServeText) -> None:
    with serve_text(WEATHER) as url:
        with pytest.raises(openai.NotFoundError) as info:
            client(url, max_retries=0).chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "tell me a joke"}]
            )
    text = str(info.value)
    assert "mockllm: no step matched" in text
    assert "ask" in text and 'last user message contains "weather in"' in text
    assert "tell me a joke" in text


def test_history_validation_names_the_bad_tool_message(serve_text: ServeText) -> None:
    with serve_text(WEATHER) as url:
        with pytest.raises(openai.BadRequestError) as info:
            client(url, max_retries=0).chat.completions.create(
                model="gpt-4o",
                messages=[
                    {"role": "user", "content": "What is the weather in Oslo?"},
                    {"role": "tool", "tool_call_id": "call_nope", "content": "x"},
                ],
            )
    assert "tool" in str(info.value)


def iter_lines(url: str) -> Iterator[str]:  # pragma: no cover - helper kept for debugging
    with httpx.stream("GET", url) as r:
        yield from r.iter_lines()


def test_expect_failure_is_a_400_and_recorded_for_verify(serve_text: ServeText) -> None:
    """`expect:` asserts on what the client sent: a failed expectation is a 400 in OpenAI's shape,
    and `verify` lists it for the test's teardown."""
    script = """
scenario "s":
    step a:
        expect:
            system prompt contains "You are a travel agent"
            tools include "book_flight"
        reply:
            text "ok"
"""
    with serve_text(script) as url:
        with pytest.raises(openai.BadRequestError) as info:
            client(url, max_retries=0).chat.completions.create(
                model="m",
                messages=[{"role": "system", "content": "You are a chef"}, {"role": "user", "content": "hi"}],
            )
        verify = httpx.get(url + "/_mockllm/verify").json()
    message = str(info.value)
    assert "mockllm: expectation failed" in message
    assert 'system prompt contains "You are a travel agent"' in message and "You are a chef" in message
    assert verify["expectation_failures"], verify


def test_journal_keeps_unmatched_bodies_for_explain(serve_text: ServeText, tmp_path: Path) -> None:
    """The documented workflow: an unmatched request's body, saved from the journal, is explained by
    `mockllm explain` with the same report the server gave."""
    with serve_text(WEATHER) as url:
        with pytest.raises(openai.NotFoundError):
            client(url, max_retries=0).chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "what's the forecast?"}]
            )
        client(url).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "weather in Oslo"}], tools=TOOLS
        )
        journal = httpx.get(url + "/_mockllm/requests").json()
    entries = journal["requests"] if isinstance(journal, dict) else journal
    unmatched = [e for e in entries if e["no_match"]]
    matched = [e for e in entries if e["matched"]]
    assert len(unmatched) == 1 and unmatched[0]["body"]["messages"][0]["content"] == "what's the forecast?"
    assert matched and matched[0]["body"]["messages"][0]["content"] == "weather in Oslo"  # every body is kept
    assert '"get_weather"' in matched[0]["reply"] and '"not_found"' not in matched[0]["reply"]
    assert "no step matched" in unmatched[0]["reply"]  # the reply bodies too (the inspector shows both)
    library = tmp_path / "weather.mockllm"
    library.write_text(WEATHER)
    request = tmp_path / "request.json"
    request.write_text(json.dumps(unmatched[0]["body"]))
    done = subprocess.run(
        [sys.executable, "-m", "mockllm", "explain", str(library), str(request)], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "mockllm: no step matched" in done.stdout + done.stderr
    assert 'last user message contains "weather in"' in done.stdout + done.stderr


def test_parallel_tool_calls_whole_and_streamed(serve_text: ServeText) -> None:
    ask: Any = [{"role": "user", "content": "both please"}]
    with serve_text(TWO_AT_ONCE) as url:
        c = client(url)
        whole = c.chat.completions.create(model="m", messages=ask, tools=TOOLS)  # type: ignore[arg-type]
        usage: Any = {"include_usage": True}
        with c.chat.completions.stream(model="m", messages=ask, tools=TOOLS, stream_options=usage) as s:  # type: ignore[arg-type]
            streamed = s.get_final_completion()
    for out in (whole, streamed):
        calls = out.choices[0].message.tool_calls or []
        got = [(tc.function.name, json.loads(tc.function.arguments)) for tc in calls]  # type: ignore[union-attr]
        assert got == [("get_weather", {"city": "Oslo"}), ("get_time", {})]
        assert len({tc.id for tc in calls}) == 2 and out.choices[0].finish_reason == "tool_calls"
        assert out.usage is not None and (out.usage.prompt_tokens, out.usage.completion_tokens) == (21, 8)
