"""The official `anthropic` SDK against a real mockllm server on loopback."""

from __future__ import annotations

import time
from typing import Any

import anthropic
import pytest
import sdk_errors
from conftest import ServeText
from provider_cases import TWO_AT_ONCE, limited_then, one_reply, tool_loop
from sdk_clients import opened

SCRIPT = tool_loop(
    None,
    [
        'thinking "I should look the weather up."',
        'text "Let me check."',
        'tool call get_weather {"city": "{{city}}", "days": [1, 2]}',
        "stream by 2 characters",
    ],
    ['text "Sunny in {{city}}."'],
    result="is present",
)

TOOLS: list[Any] = [{"name": "get_weather", "input_schema": {"type": "object"}}]


def client(url: str, **kw: Any) -> anthropic.Anthropic:
    return opened(anthropic.Anthropic(base_url=url, api_key="test", **kw))


@pytest.mark.parametrize("stream", [False, True])
def test_tool_round_trip(serve_text: ServeText, stream: bool) -> None:
    """thinking + text + tool_use, then the tool result turn, through create() and the stream helper."""
    with serve_text(SCRIPT) as url:
        c = client(url)
        messages: list[Any] = [{"role": "user", "content": "What is the weather in Rome?"}]
        if stream:
            with c.messages.stream(model="claude-x", max_tokens=100, messages=messages, tools=TOOLS) as s:
                first = s.get_final_message()
        else:
            first = c.messages.create(model="claude-x", max_tokens=100, messages=messages, tools=TOOLS)
        assert first.stop_reason == "tool_use"
        kinds = [b.type for b in first.content]
        assert kinds == ["thinking", "text", "tool_use"]
        assert first.content[0].thinking == "I should look the weather up."  # type: ignore[union-attr]
        assert first.content[1].text == "Let me check."  # type: ignore[union-attr]
        use = first.content[2]
        assert use.type == "tool_use" and use.input == {"city": "Rome", "days": [1, 2]}
        assert use.id.startswith("toolu_")
        messages.append({"role": "assistant", "content": [b.model_dump() for b in first.content]})
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}]}
        )
        if stream:
            with c.messages.stream(model="claude-x", max_tokens=100, messages=messages, tools=TOOLS) as s:
                assert "".join(s.text_stream) == "Sunny in Rome."
                second = s.get_final_message()
        else:
            second = c.messages.create(model="claude-x", max_tokens=100, messages=messages, tools=TOOLS)
        assert second.stop_reason == "end_turn"
        assert second.content[0].text == "Sunny in Rome."  # type: ignore[union-attr]
        assert second.usage.output_tokens >= 1


@pytest.mark.parametrize(("status", "exc"), sdk_errors.ANTHROPIC)
def test_error_status_maps_to_sdk_exception(serve_text: ServeText, status: int, exc: type[Exception]) -> None:
    with serve_text(sdk_errors.error_script(status)) as url:
        with pytest.raises(exc) as info:
            client(url, max_retries=0).messages.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
            )
    sdk_errors.check_scripted(info.value, status, anthropic.APIStatusError)


def test_retry_through_overloaded(serve_text: ServeText) -> None:
    script = limited_then("Overloaded", "done", 529, after="200ms", times=1)
    with serve_text(script) as url:
        started = time.monotonic()
        out = client(url).messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}])
        elapsed = time.monotonic() - started
    assert out.content[0].text == "done"  # type: ignore[union-attr]
    assert elapsed >= 0.19


def test_in_band_stream_error(serve_text: ServeText) -> None:
    script = one_reply('text "one two three four"', 'stream error "Overloaded" after 2 chunks')
    with serve_text(script) as url:
        with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
            with client(url, max_retries=0).messages.stream(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
            ) as s:
                s.get_final_message()


def test_unanswered_tool_use_is_rejected_like_the_real_api(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        with pytest.raises(anthropic.BadRequestError) as info:
            client(url, max_retries=0).messages.create(
                model="m",
                max_tokens=10,
                messages=[
                    {"role": "user", "content": "What is the weather in Rome?"},
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}],
                    },
                    {"role": "user", "content": "never mind"},
                ],
            )
    assert "toolu_1" in str(info.value)


def test_count_tokens(serve_text: ServeText) -> None:
    with serve_text(SCRIPT) as url:
        out = client(url).messages.count_tokens(model="m", messages=[{"role": "user", "content": "x" * 40}])
    assert out.input_tokens >= 10


def test_parallel_tool_calls_and_usage_whole_and_streamed(serve_text: ServeText) -> None:
    ask: Any = [{"role": "user", "content": "both please"}]
    with serve_text(TWO_AT_ONCE) as url:
        c = client(url)
        whole = c.messages.create(model="m", max_tokens=50, messages=ask, tools=TOOLS)
        with c.messages.stream(model="m", max_tokens=50, messages=ask, tools=TOOLS) as s:
            streamed = s.get_final_message()
    for out in (whole, streamed):
        uses = [b for b in out.content if b.type == "tool_use"]
        assert [(b.name, b.input) for b in uses] == [("get_weather", {"city": "Oslo"}), ("get_time", {})]
        assert len({b.id for b in uses}) == 2 and out.stop_reason == "tool_use"
        assert (out.usage.input_tokens, out.usage.output_tokens) == (21, 8)


def test_the_sdk_retries_a_429_itself(serve_text: ServeText) -> None:
    script = limited_then("Number of request tokens has exceeded your per-minute rate limit", "done", after="10ms")
    with serve_text(script) as url:
        with pytest.raises(anthropic.RateLimitError):
            client(url, max_retries=0).messages.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
            )
        out = client(url).messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert out.content[0].text == "done"  # type: ignore[union-attr]
