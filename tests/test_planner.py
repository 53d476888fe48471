from __future__ import annotations

import json
import sys
import types
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockllm.dsl.tree import nodes as n
from mockllm.runtime.reply.ids import call_key
from mockllm.runtime.reply.plan import ErrorPlan, HangPlan, MessagePlan, RawPlan
from mockllm.runtime.reply.planner import (
    plan_reply,
    split_count,
    split_json_keys,
    split_words,
)
from mockllm.runtime.reply.tokens import estimate
from mockllm.runtime.request import ChatRequest, Message, ToolResult


def chat(**kw: Any) -> ChatRequest:
    base: dict[str, Any] = {
        "provider": "openai",
        "endpoint": "/v1/chat/completions",
        "model": "gpt-4o",
        "stream": True,
        "messages": (Message("user", "hello there"),),
        "headers": {"x-request-tag": "t-1"},
    }
    base.update(kw)
    return ChatRequest(**base)


def plan(*elements: Any, env: dict[str, str] | None = None, offset: int = 0, request: ChatRequest | None = None) -> Any:
    return plan_reply(n.ReplyBlock(tuple(elements)), request or chat(), env or {}, call_offset=offset)


def test_split_by_word_keeps_whitespace_with_the_following_word() -> None:
    assert split_words("Hello world") == ("Hello", " world")
    assert split_words("  a  b\n c  ") == ("  a", "  b", "\n c  ")
    assert split_words("   ") == ("   ",)
    assert split_words("") == ()


def test_split_in_n_chunks_is_near_equal_and_never_more_than_characters() -> None:
    assert split_count("abcdefghij", 3) == ("abcd", "efg", "hij")
    assert split_count("ab", 4) == ("a", "b")


def test_argument_json_split_before_each_key() -> None:
    text = '{"city":"Paris","opts":{"unit":"c","note":"a \\"q\\", \\"x\\":1"},"list":[{"k":1}]}'
    pieces = split_json_keys(text)
    assert "".join(pieces) == text
    assert pieces == (
        "{",
        '"city":"Paris",',
        '"opts":{',
        '"unit":"c",',
        '"note":"a \\"q\\", \\"x\\":1"},',
        '"list":[{',
        '"k":1}]}',
    )
    assert split_json_keys("{}") == ("{}",)


# reply text is template source: `{{` opens a template (tested in tests/test_checks.py), so plain text has none
@given(st.text().filter(lambda t: "{{" not in t), st.integers(min_value=1, max_value=12))
def test_text_chunks_always_join_exactly(text: str, count: int) -> None:
    for stream in (None, n.Stream("word"), n.Stream("chunks", count), n.Stream("characters", count)):
        elements: list[Any] = [n.Text(text)]
        if stream is not None:
            elements.append(stream)
        p = plan(*elements)
        assert p.text == text
        assert "".join(p.text_chunks) == text
        assert all(p.text_chunks)
        if not text:
            assert p.text_chunks == ()
        if stream is not None and stream.mode == "chunks":
            assert len(p.text_chunks) == min(count, len(text))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(st.dictionaries(st.text(max_size=6), json_values, max_size=4), st.integers(min_value=1, max_value=9))
def test_argument_chunks_always_join_exactly(arguments: dict[str, Any], count: int) -> None:
    for stream in (None, n.Stream("chunks", count), n.Stream("characters", count)):
        elements: list[Any] = [n.ToolCall("f", arguments)]
        if stream is not None:
            elements.append(stream)
        call = plan(*elements).tool_calls[0]
        assert call.arguments_json == json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
        assert "".join(call.argument_chunks) == call.arguments_json
        assert json.loads(call.arguments_json) == arguments


def test_several_text_lines_join_with_newline_and_templates_render() -> None:
    p = plan(n.Text("Hi {{name}},"), n.Text("model {{request.model}}"), env={"name": "Ada", "request.model": "gpt-4o"})
    assert p.text == "Hi Ada,\nmodel gpt-4o"
    assert p.finish == "stop"


def test_explicit_chunks_are_kept_exactly() -> None:
    p = plan(n.Chunks(("Hel", "lo {{x}}", "!")), env={"x": "you"})
    assert p.text_chunks == ("Hel", "lo you", "!")
    assert p.text == "Hello you!"


def test_tool_calls_keys_follow_the_offset_and_arguments_render() -> None:
    p = plan(
        n.ToolCall("get_weather", {"city": "{{city}}", "days": [1, "{{city}}"]}),
        n.ToolCall("get_time", {}, id="call_fixed"),
        env={"city": "Oslo"},
        offset=3,
    )
    first, second = p.tool_calls
    assert first.key == call_key("", "mock", 4) and second.key == call_key("", "mock", 5)
    assert first.arguments == {"city": "Oslo", "days": [1, "Oslo"]}
    assert first.arguments_json == '{"city":"Oslo","days":[1,"Oslo"]}'
    assert first.id_for("call_") == "call_" + first.key and len(first.key) == 24
    assert first.id_for("toolu_01", 22) == "toolu_01" + first.key[:22]
    assert second.id_for("call_") == "call_fixed"
    assert p.finish == "tool_calls"


def test_unicode_arguments_are_not_escaped() -> None:
    p = plan(n.ToolCall("f", {"t": "18°C"}))
    assert p.tool_calls[0].arguments_json == '{"t":"18°C"}'


def test_finish_and_usage_explicit() -> None:
    p = plan(n.Text("x"), n.Finish("length"), n.Usage(12, 34))
    assert (p.finish, p.input_tokens, p.output_tokens) == ("length", 12, 34)


def test_usage_estimate_counts_prompt_and_every_output() -> None:
    request = chat(
        system="sys prompt",
        messages=(
            Message("user", "a" * 40),
            Message("tool", tool_result=ToolResult("c", "f", "b" * 20)),
        ),
    )
    p = plan(n.Text("x" * 8), n.Thinking("y" * 8), n.Refusal("z" * 4), n.ToolCall("f", {"a": 1}), request=request)
    assert p.input_tokens == estimate("sys prompt" + "a" * 40 + "b" * 20)
    assert p.output_tokens == estimate("x" * 8 + "y" * 8 + "z" * 4 + '{"a":1}')
    assert plan().output_tokens == 1


def test_thinking_and_refusal() -> None:
    p = plan(n.Thinking("let me think"), n.Refusal("I can't help with that."), n.Stream("characters", 5))
    assert p.thinking == "let me think"
    assert p.thinking_chunks == ("let m", "e thi", "nk")
    assert p.refusal == "I can't help with that."


def test_stream_spacing_and_latency() -> None:
    p = plan(n.Text("a b"), n.Stream("word", apart=n.Duration(40)), n.Latency(n.Duration(250)))
    assert p.chunk_interval_s == pytest.approx(0.04)
    assert p.latency_s == pytest.approx(0.25)


def test_error_with_retry_after_headers() -> None:
    p = plan(
        n.Error(429, "Rate limit reached for {{request.model}}"),
        n.RetryAfter(n.Duration(1500)),
        env={"request.model": "m"},
    )
    assert isinstance(p, ErrorPlan) and (p.status, p.message) == (429, "Rate limit reached for m")
    assert p.retry_after_s == pytest.approx(1.5)
    assert dict(p.headers) == {"retry-after": "2", "retry-after-ms": "1500"}
    assert p.model == "gpt-4o"
    zero = plan(n.Error(429, "x"), n.RetryAfter(n.Duration(0)))
    assert dict(zero.headers) == {"retry-after": "0", "retry-after-ms": "0"}


def test_headers_and_echo_headers() -> None:
    p = plan(n.Header("x-env", "{{e}}"), n.EchoHeader("X-Request-Tag"), n.EchoHeader("x-absent"), env={"e": "test"})
    assert p.headers == (("x-env", "test"), ("X-Request-Tag", "t-1"))


def test_raw_status_and_body() -> None:
    p = plan(n.Status(503), n.Body({"detail": "down for {{who}}"}), env={"who": "maintenance"})
    assert isinstance(p, RawPlan)
    assert p.status == 503 and p.has_body and p.body == {"detail": "down for maintenance"}
    assert plan(n.Body(None)) == RawPlan("gpt-4o", 200, None, has_body=True)
    assert plan(n.Status(204)) == RawPlan("gpt-4o", 204, None, has_body=False)


def test_faults() -> None:
    p = plan(n.Text("a b c"), n.Disconnect(2), n.StreamError("overloaded", 1))
    assert (p.disconnect_after, p.stream_error, p.stream_error_after) == (2, "overloaded", 1)
    assert isinstance(p, MessagePlan)
    assert plan(n.Hang(), n.Latency(n.Duration(10))) == HangPlan("gpt-4o")


@pytest.mark.parametrize(
    ("elements", "shape"),
    [
        ((n.Hang(), n.Error(500, "x"), n.Status(503), n.Text("t")), HangPlan),
        ((n.Error(500, "x"), n.Status(503), n.Body({}), n.Text("t")), ErrorPlan),
        ((n.Body({}), n.Text("t")), RawPlan),
        ((n.Text("t"), n.Latency(n.Duration(5))), MessagePlan),
    ],
)
def test_one_shape_per_plan_in_the_order_hang_error_raw_message(elements: tuple[Any, ...], shape: type) -> None:
    assert type(plan(*elements)) is shape


def test_echo_uses_echo_answer_and_echo_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    @attrs.frozen
    class Answer:
        text: str
        tool_calls: tuple[tuple[str, Any], ...]

    def fake_echo_answer(request: ChatRequest) -> Answer:
        return Answer(request.last_user_message() or "", (("send_email", {"to": "a@b.c"}), ("get_time", {})))

    module = types.ModuleType("mockllm.runtime.echo.answer")
    module.echo_answer = fake_echo_answer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mockllm.runtime.echo.answer", module)
    p = plan(n.Echo(), offset=2)
    assert p.text == "hello there"
    assert p.text_chunks == ("hello", " there")
    assert [c.key for c in p.tool_calls] == [call_key("", "echo", 3), call_key("", "echo", 4)]
    assert call_key("", "echo", 3) != call_key("", "mock", 3)
    assert p.tool_calls[0].arguments_json == '{"to":"a@b.c"}'
    assert p.finish == "tool_calls"
