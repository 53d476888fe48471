"""Anthropic Messages adapter: parsing, history rules, rendering, and fidelity against the real
``anthropic`` SDK (the adapter's bytes served through an httpx MockTransport)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import pytest
import sdk_errors
from sdk_bridge import adapter_client
from sdk_clients import opened
from strategies import any_messages_test

from mockllm.runtime.providers import anthropic as adapter_module
from mockllm.runtime.providers.anthropic import AnthropicAdapter
from mockllm.runtime.providers.base import Frame, ProviderError, RenderContext, Rendered
from mockllm.runtime.reply.ids import anthropic_message_id, anthropic_request_id
from mockllm.runtime.reply.plan import MessagePlan, PlannedToolCall
from mockllm.runtime.request import ChatRequest, HttpRequest

ADAPTER = AnthropicAdapter()
CTX = RenderContext(response_id="r1", created=1_700_000_000, request_id="req_abc")
REQ_ID = anthropic_request_id("req_abc")  # the server's request id in Anthropic's shape (req_011…)
MSG_ID = anthropic_message_id("r1")
AUTH = {"x-api-key": "k", "anthropic-version": "2023-06-01", "content-type": "application/json"}


def http(body: Any, headers: dict[str, str] | None = None, path: str = "/v1/messages") -> HttpRequest:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return HttpRequest("POST", path, {}, AUTH if headers is None else headers, raw)


def parse(body: Any) -> ChatRequest:
    return ADAPTER.parse(http(body))


def rejected(body: Any) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        ADAPTER.validate_history(ADAPTER.parse(http(body)))
    assert info.value.status == 400
    return info.value


def msgs(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "claude-test", "max_tokens": 100, "messages": list(messages)}


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def assistant(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def use(call_id: str, name: str = "f", args: Any = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args if args is not None else {}}


def result(call_id: str, content: Any = "ok", **kw: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, **kw}


def call(name: str, arguments: Any, key: str) -> PlannedToolCall:
    text = json.dumps(arguments, separators=(",", ":"))
    return PlannedToolCall(name, arguments, text, tuple(text), key)  # one character per chunk


def events(rendered: Rendered) -> list[tuple[str, Any]]:
    assert rendered.frames is not None
    out = []
    for frame in rendered.frames:
        text = frame.data.decode()
        assert text.endswith("\n\n")
        event_line, data_line = text[:-2].split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        data = json.loads(data_line[len("data: ") :])
        assert data["type"] == event_line[len("event: ") :]
        out.append((data["type"], data))
    return out


# ---------------------------------------------------------------- parse


def test_parse_normalises_blocks_tools_and_results() -> None:
    chat = parse(
        {
            "model": "claude-test",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Use tools."}],
            "messages": [
                user([{"type": "text", "text": "Weather?"}, {"type": "image", "source": {"type": "url", "url": "u"}}]),
                assistant(
                    [
                        {"type": "thinking", "thinking": "hmm", "signature": "s"},
                        {"type": "text", "text": "Checking."},
                        use("toolu_1", "get_weather", {"city": "Paris"}),
                    ]
                ),
                user(
                    [
                        {"type": "text", "text": "here"},
                        result("toolu_1", [{"type": "text", "text": "sunny"}], is_error=True),
                    ]
                ),
            ],
            "tools": [{"name": "get_weather", "description": "d", "input_schema": {"type": "object"}}],
            "stream": True,
        }
    )
    assert chat.provider == "anthropic" and chat.model == "claude-test" and chat.stream
    assert chat.system == "Be brief.\nUse tools."
    assert [(m.role, m.index) for m in chat.messages] == [("user", 0), ("assistant", 1), ("tool", 2), ("user", 2)]
    assert chat.messages[0].text == "Weather?" and chat.messages[1].text == "Checking."
    assert chat.messages[1].tool_calls[0].arguments == {"city": "Paris"}
    res = chat.messages[2].tool_result
    assert res is not None and (res.call_id, res.name, res.content, res.is_error) == (
        "toolu_1",
        "get_weather",
        "sunny",
        True,
    )
    assert chat.last_user_message() == "here" and chat.turn() == 2
    assert chat.tools[0].parameters == {"type": "object"}
    assert chat.header("X-Api-Key") == "k"


def test_tool_result_only_turn_has_no_user_message() -> None:
    chat = parse(msgs(user("go"), assistant([use("toolu_1")]), user([result("toolu_1")])))
    assert [m.role for m in chat.messages] == ["user", "assistant", "tool"]
    assert chat.last_message() == "ok" and chat.turn() == 1


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"not json", "request body is not valid JSON"),
        (b"[]", "request body must be a JSON object, got an array"),
        ({"max_tokens": 5, "messages": [user("x")]}, "model: field required"),
        ({"model": "m", "messages": [user("x")]}, "max_tokens: field required"),
        (
            {"model": "m", "max_tokens": "5", "messages": [user("x")]},
            'max_tokens: expected an integer, got a string ("5")',
        ),
        ({"model": "m", "max_tokens": 0, "messages": [user("x")]}, "max_tokens: must be at least 1"),
        ({"model": "m", "max_tokens": 5}, "messages: field required"),
        ({"model": "m", "max_tokens": 5, "messages": {}}, "messages: expected an array, got an object"),
        (msgs(), "messages: at least one message is required"),
        (
            msgs(user("a"), {"role": "robot", "content": "x"}),
            "messages.1.role: 'robot' is not one of 'user', 'assistant', 'system'",
        ),
        (msgs({"role": "user"}), "messages.0.content: field required"),
        (msgs(user(7)), "messages.0.content: expected a string or an array of content blocks, got an integer (7)"),
        (msgs(user([{"text": "x"}])), "messages.0.content.0.type: field required"),
        (
            msgs(user("a"), assistant([{"type": "tool_use", "id": "t", "name": "f"}])),
            "messages.1.content.0.input: field required",
        ),
        (
            msgs(user([use("toolu_1")])),
            "messages.0.content.0.type: `tool_use` blocks are only allowed in assistant messages",
        ),
        (msgs(user([result("toolu_1", 5)])), "messages.0.content.0.content: expected a string or an array"),
        ({**msgs(user("x")), "system": 3}, "system: expected a string or an array of content blocks"),
        ({**msgs(user("x")), "tools": [{"name": "f"}]}, "tools.0.input_schema: field required"),
        ({**msgs(user("x")), "stream": 1}, "stream: expected a boolean"),
    ],
)
def test_parse_rejects_bad_bodies_naming_the_field(body: Any, expected: str) -> None:
    with pytest.raises(ProviderError) as info:
        ADAPTER.parse(http(body))
    assert info.value.status == 400
    assert info.value.message.startswith(expected), info.value.message


def test_server_tools_and_system_role_messages_are_accepted() -> None:
    body = {
        **msgs({"role": "system", "content": "Sys."}, user("x")),
        "system": "Top.",
        "tools": [{"type": "web_search_20250305", "name": "web_search"}],
    }
    chat = parse(body)
    assert chat.system == "Top.\nSys." and chat.tool_names() == ("web_search",)
    ADAPTER.validate_history(chat)


# ---------------------------------------------------------------- auth


def test_check_auth() -> None:
    assert ADAPTER.check_auth(http({}, AUTH)) is None
    assert ADAPTER.check_auth(http({}, {"authorization": "Bearer k", "anthropic-version": "2026-10-21"})) is None
    no_key = ADAPTER.check_auth(http({}, {"anthropic-version": "2023-06-01"}))
    assert no_key is not None and no_key.status == 401 and "x-api-key" in no_key.message
    no_version = ADAPTER.check_auth(http({}, {"x-api-key": "k"}))
    assert no_version is not None and no_version.status == 400
    assert no_version.message == "anthropic-version: header is required"


# ---------------------------------------------------------------- history


def test_valid_tool_history_passes() -> None:
    ADAPTER.validate_history(
        parse(
            msgs(user("go"), assistant([use("toolu_a"), use("toolu_b")]), user([result("toolu_b"), result("toolu_a")]))
        )
    )


def test_tool_use_without_results_in_the_next_turn_is_rejected() -> None:
    body = msgs(user("go"), assistant("hi"), user("more"), assistant([use("toolu_x")]), user("what?"))
    err = rejected(body)
    assert err.message == (
        "messages.3: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_x. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )
    err = rejected(msgs(user("go"), assistant([use("toolu_a"), use("toolu_b")]), user([result("toolu_a")])))
    assert "immediately after: toolu_b." in err.message and err.message.startswith("messages.1:")


def test_tool_result_for_an_unknown_call_is_rejected() -> None:
    err = rejected(msgs(user("go"), assistant([use("toolu_a")]), user([result("toolu_a"), result("toolu_y")])))
    assert err.message == (
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_y. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
    )
    err = rejected(msgs(user([result("toolu_y")])))
    assert err.message.startswith("messages.0.content.0: unexpected `tool_use_id`")


def test_first_message_must_be_user() -> None:
    err = rejected(msgs(assistant("hello"), user("hi")))
    assert 'first message must use the "user" role' in err.message


# ---------------------------------------------------------------- rendering (pure)


FULL_PLAN = MessagePlan(
    model="claude-test",
    thinking="Let me think.",
    thinking_chunks=("Let me", " think."),
    text="Checking the weather.",
    text_chunks=("Checking", " the", " weather."),
    tool_calls=(call("get_weather", {"city": "Paris"}, "w1"), call("get_time", {"tz": "CET"}, "t2")),
    finish="tool_calls",
    input_tokens=9,
    output_tokens=21,
)


def test_render_message_shape() -> None:
    out = ADAPTER.render(FULL_PLAN, parse(msgs(user("x"))), CTX)
    assert out.status == 200 and out.media_type == "application/json" and ("request-id", REQ_ID) in out.headers
    body = json.loads(out.body)
    assert body["id"] == MSG_ID and body["type"] == "message" and body["role"] == "assistant"
    assert body["stop_reason"] == "tool_use" and body["stop_sequence"] is None
    thinking, text, first, second = body["content"]
    assert thinking["type"] == "thinking" and thinking["thinking"] == "Let me think." and thinking["signature"]
    assert text == {"type": "text", "text": "Checking the weather."}
    caller = {"type": "direct"}
    assert first == {
        "type": "tool_use",
        "id": "toolu_01w1",
        "name": "get_weather",
        "input": {"city": "Paris"},
        "caller": caller,
    }
    assert second["id"] == "toolu_01t2"
    assert body["usage"]["inference_geo"] == "not_available"
    assert body["usage"]["input_tokens"] == 9 and body["usage"]["output_tokens"] == 21
    assert body["usage"]["cache_read_input_tokens"] == 0


@pytest.mark.parametrize(
    ("plan", "stop"),
    [
        (MessagePlan(model="m", text="x"), "end_turn"),
        (MessagePlan(model="m", text="x", finish="length"), "max_tokens"),
        (MessagePlan(model="m", text="x", finish="content_filter"), "refusal"),
        (MessagePlan(model="m", refusal="no"), "refusal"),
    ],
)
def test_stop_reason_mapping(plan: MessagePlan, stop: str) -> None:
    body = json.loads(ADAPTER.render(plan, parse(msgs(user("x"))), CTX).body)
    assert body["stop_reason"] == stop


def test_signature_is_deterministic() -> None:
    assert adapter_module.signature("a") == adapter_module.signature("a") != adapter_module.signature("b")


def test_stream_events_follow_the_protocol() -> None:
    out = ADAPTER.render(FULL_PLAN, parse({**msgs(user("x")), "stream": True}), CTX)
    assert out.media_type == "text/event-stream; charset=utf-8" and ("cache-control", "no-cache") in out.headers
    seq = events(out)
    kinds = [k for k, _ in seq]
    # as the real API: the ping comes right after the first block starts
    assert kinds[:3] == ["message_start", "content_block_start", "ping"] and kinds[-2:] == [
        "message_delta",
        "message_stop",
    ]
    assert kinds.count("ping") == 1
    # message_delta repeats the input and cache counts (langchain-anthropic reads them there)
    assert seq[-2][1]["usage"] == {
        "input_tokens": 9,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 21,
    }
    start = seq[0][1]["message"]
    assert start["content"] == [] and start["usage"]["output_tokens"] == 1 and start["usage"]["input_tokens"] == 9
    starts = [d for k, d in seq if k == "content_block_start"]
    assert [s["index"] for s in starts] == [0, 1, 2, 3]
    assert starts[0]["content_block"] == {"type": "thinking", "thinking": "", "signature": ""}
    tool_start = {
        "type": "tool_use",
        "id": "toolu_01w1",
        "name": "get_weather",
        "input": {},
        "caller": {"type": "direct"},
    }
    assert starts[2]["content_block"] == tool_start
    # one block at a time: every delta belongs to the most recently started, not yet stopped, block
    open_block = None
    for kind, data in seq:
        if kind == "content_block_start":
            assert open_block is None
            open_block = data["index"]
        elif kind == "content_block_delta":
            assert data["index"] == open_block
        elif kind == "content_block_stop":
            assert data["index"] == open_block
            open_block = None
    assert seq[-2][1] == {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {
            "input_tokens": 9,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 21,
        },
    }
    assert out.frames is not None
    content = [f for f in out.frames if f.content]
    assert len(content) == 2 + 3 + len('{"city":"Paris"}') + len('{"tz":"CET"}')


def test_render_error_shapes() -> None:
    expected = {
        400: "invalid_request_error",
        401: "authentication_error",
        402: "billing_error",
        403: "permission_error",
        404: "not_found_error",
        409: "conflict_error",
        413: "request_too_large",
        429: "rate_limit_error",
        500: "api_error",
        502: "api_error",
        504: "timeout_error",
        529: "overloaded_error",
    }
    for status, kind in expected.items():
        out = ADAPTER.render_error(status, "m", CTX)
        assert out.status == status and ("request-id", REQ_ID) in out.headers
        assert json.loads(out.body) == {
            "type": "error",
            "error": {"type": kind, "message": "m"},
            "request_id": REQ_ID,
        }
    frame = ADAPTER.stream_error_frame("boom", CTX)
    assert frame == b'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"boom"}}\n\n'


def test_count_tokens_and_models() -> None:
    out = adapter_module.count_tokens(
        http(msgs(user("x" * 40)) | {"max_tokens": None}, path="/v1/messages/count_tokens"), CTX
    )
    assert json.loads(out.body) == {"input_tokens": 10}
    with pytest.raises(ProviderError):
        adapter_module.count_tokens(http({"model": "m"}), CTX)
    body = json.loads(adapter_module.models_response(["a", "b"], CTX).body)
    assert body["has_more"] is False and (body["first_id"], body["last_id"]) == ("a", "b")
    assert body["data"][0] == {"type": "model", "id": "a", "display_name": "a", "created_at": "2023-11-14T22:13:20Z"}


# ---------------------------------------------------------------- fidelity: the real SDK


def client_for(reply: Callable[[ChatRequest], Rendered]) -> tuple[anthropic.Anthropic, list[ChatRequest]]:
    """An SDK client whose transport runs the adapter on each real SDK request and answers with
    the rendered bytes."""
    http, seen = adapter_client(ADAPTER, reply)
    return opened(anthropic.Anthropic(api_key="k", base_url="http://mock", http_client=http, max_retries=0)), seen


def plan_reply(plan: MessagePlan) -> Callable[[ChatRequest], Rendered]:
    return lambda chat: ADAPTER.render(plan, chat, CTX)


def ask(sdk: anthropic.Anthropic) -> anthropic.types.Message:
    return sdk.messages.create(model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "hi"}])


def test_sdk_reads_a_full_message_and_sends_a_valid_follow_up() -> None:
    sdk, seen = client_for(plan_reply(FULL_PLAN))
    message = ask(sdk)
    assert message.id == MSG_ID and message._request_id == REQ_ID and message.stop_reason == "tool_use"
    thinking, text, first, second = message.content
    assert thinking.type == "thinking" and thinking.thinking == "Let me think."
    assert text.type == "text" and text.text == "Checking the weather."
    assert first.type == "tool_use" and (first.id, first.name, first.input) == (
        "toolu_01w1",
        "get_weather",
        {"city": "Paris"},
    )
    assert second.type == "tool_use" and second.input == {"tz": "CET"}
    assert message.usage.input_tokens == 9 and message.usage.output_tokens == 21
    follow_up: list[Any] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": message.content},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": b.id, "content": "42"} for b in (first, second)],
        },
    ]
    sdk.messages.create(model="claude-test", max_tokens=100, messages=follow_up)
    got = seen[1].latest_tool_result("get_time")
    assert got is not None and got.call_id == "toolu_01t2" and got.content == "42"


def test_stream_helper_reconstructs_thinking_text_and_tool_input() -> None:
    sdk, seen = client_for(plan_reply(FULL_PLAN))
    with sdk.messages.stream(
        model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        texts = list(stream.text_stream)
        final = stream.get_final_message()
    assert seen[0].stream
    assert texts == ["Checking", " the", " weather."]
    thinking, text, first, second = final.content
    assert thinking.type == "thinking" and thinking.thinking == "Let me think."
    assert thinking.signature == adapter_module.signature("Let me think.")
    assert text.type == "text" and text.text == "Checking the weather."
    assert first.type == "tool_use" and first.id == "toolu_01w1" and first.input == {"city": "Paris"}
    assert second.type == "tool_use" and second.input == {"tz": "CET"}
    assert final.stop_reason == "tool_use" and final.usage.output_tokens == 21 and final.usage.input_tokens == 9


def test_stream_helper_plain_text() -> None:
    sdk, _ = client_for(plan_reply(MessagePlan(model="claude-test", text="Hi there", text_chunks=("Hi", " there"))))
    with sdk.messages.stream(
        model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        assert stream.get_final_text() == "Hi there"


@pytest.mark.parametrize(("status", "exc"), sdk_errors.ANTHROPIC)
def test_error_statuses_map_to_sdk_exceptions(status: int, exc: type[anthropic.APIStatusError]) -> None:
    sdk, _ = client_for(lambda chat: ADAPTER.render_error(status, f"failure {status}", CTX))
    with pytest.raises(exc) as info:
        ask(sdk)
    assert info.value.status_code == status and info.value.request_id == REQ_ID
    assert f"failure {status}" in str(info.value)


def test_mid_stream_error_raises_api_status_error() -> None:
    def reply(chat: ChatRequest) -> Rendered:
        out = ADAPTER.render(FULL_PLAN, chat, CTX)
        assert out.frames is not None
        return Rendered(
            out.status,
            out.media_type,
            out.headers,
            frames=(*out.frames[:5], Frame(ADAPTER.stream_error_frame("boom", CTX))),
        )

    sdk, _ = client_for(reply)
    with pytest.raises(anthropic.APIStatusError) as info:
        with sdk.messages.stream(
            model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            stream.get_final_message()
    assert info.value.status_code == 200 and "boom" in str(info.value)


test_arbitrary_messages_give_a_400_or_a_request_never_a_crash = any_messages_test(
    ADAPTER,
    lambda messages: parse(msgs(*messages)),
    ["user", "assistant", "text", "tool_use", "tool_result", "t1"],
    ["role", "content", "type", "text", "id", "name", "input", "tool_use_id", "is_error"],
)
