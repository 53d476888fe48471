"""OpenAI Chat Completions adapter: parsing, history rules, rendering, and fidelity against the real
``openai`` SDK (the adapter's bytes served through an httpx MockTransport)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest
import sdk_errors
from sdk_bridge import adapter_client
from sdk_clients import opened
from strategies import any_messages_test

from mockllm.runtime.providers import openai_chat
from mockllm.runtime.providers.base import ProviderError, RenderContext, Rendered
from mockllm.runtime.providers.openai_chat import OpenAIChatAdapter
from mockllm.runtime.reply.ids import chat_completion_id
from mockllm.runtime.reply.plan import MessagePlan, PlannedToolCall
from mockllm.runtime.request import ChatRequest, HttpRequest

ADAPTER = OpenAIChatAdapter()
CTX = RenderContext(response_id="r1", created=1_700_000_000, request_id="req_abc")
AUTH = {"authorization": "Bearer sk-test", "content-type": "application/json"}


def http(body: Any, headers: dict[str, str] | None = None) -> HttpRequest:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return HttpRequest("POST", "/v1/chat/completions", {}, AUTH if headers is None else headers, raw)


def parse(body: Any) -> ChatRequest:
    return ADAPTER.parse(http(body))


def parse_error(body: Any) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        chat = ADAPTER.parse(http(body))
        ADAPTER.validate_history(chat)
    assert info.value.status == 400
    return info.value


def call(name: str, arguments: Any, key: str) -> PlannedToolCall:
    text = json.dumps(arguments, separators=(",", ":"))
    return PlannedToolCall(name, arguments, text, tuple(text), key)  # one character per chunk


def text_plan(text: str = "Hello there, friend.", **kw: Any) -> MessagePlan:
    words = tuple(w + " " for w in text.split(" "))
    chunks = (*words[:-1], words[-1][:-1])
    return MessagePlan(model="gpt-test", text=text, text_chunks=chunks, input_tokens=7, output_tokens=5, **kw)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def sse_events(rendered: Rendered) -> list[str]:
    assert rendered.frames is not None
    return [f.data.decode() for f in rendered.frames]


def frame_json(frame: str) -> Any:
    assert frame.startswith("data: ") and frame.endswith("\n\n")
    return json.loads(frame[len("data: ") : -2])


# ---------------------------------------------------------------- parse


def test_parse_normalises_roles_tools_and_results() -> None:
    chat = parse(
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Weather?"},
                        {"type": "image_url", "image_url": {"url": "http://x/y.png"}},
                    ],
                },
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                        },
                        {"id": "call_2", "type": "function", "function": {"name": "broken", "arguments": "{not json"}},
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
                {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "ok"}]},
            ],
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "get_weather", "description": "d", "parameters": {"type": "object"}},
                }
            ],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    )
    assert chat.provider == "openai" and chat.model == "gpt-4o" and chat.endpoint == "/v1/chat/completions"
    assert chat.system == "Be brief.\nUse tools."
    assert [m.role for m in chat.messages] == ["system", "system", "user", "assistant", "tool", "tool"]
    assert [m.index for m in chat.messages] == [0, 1, 2, 3, 4, 5]
    assert chat.messages[2].text == "Weather?"
    calls = chat.messages[3].tool_calls
    assert calls[0].arguments == {"city": "Paris"} and calls[1].arguments == "{not json"
    first = chat.messages[4].tool_result
    assert first is not None and (first.call_id, first.name, first.content) == ("call_1", "get_weather", "sunny")
    assert chat.latest_tool_result("broken") is not None
    assert chat.tools[0].name == "get_weather" and chat.tools[0].parameters == {"type": "object"}
    assert chat.stream and chat.include_usage
    assert chat.header("Authorization") == "Bearer sk-test"
    assert chat.body["model"] == "gpt-4o"


def test_stream_is_decided_by_the_body_only() -> None:
    body = {"model": "m", "messages": [user("hi")]}
    chat = ADAPTER.parse(http(body, {**AUTH, "accept": "text/event-stream"}))
    assert not chat.stream and not chat.include_usage


@pytest.mark.parametrize(
    ("body", "expected", "param"),
    [
        (b"{nope", "request body is not valid JSON: Expecting property name enclosed in double quotes", None),
        (b"", "request body is empty", None),
        ([1, 2], "request body must be a JSON object, got an array", None),
        ({"messages": []}, "model: field required", "model"),
        ({"model": "m"}, "messages: field required", "messages"),
        ({"model": 3, "messages": []}, "model: expected a string, got an integer (3)", "model"),
        ({"model": "m", "messages": "hi"}, 'messages: expected an array, got a string ("hi")', "messages"),
        ({"model": "m", "messages": []}, "messages: must contain at least one message", "messages"),
        (
            {"model": "m", "messages": [user("a"), user("b"), {"role": "robot", "content": "x"}]},
            "messages[2].role: 'robot' is not one of 'system', 'developer', 'user', 'assistant', 'tool'",
            "messages[2].role",
        ),
        ({"model": "m", "messages": [{"content": "x"}]}, "messages[0].role: field required", "messages[0].role"),
        ({"model": "m", "messages": [{"role": "user"}]}, "messages[0].content: field required", "messages[0].content"),
        (
            {"model": "m", "messages": [{"role": "user", "content": 5}]},
            "messages[0].content: expected a string or an array of content parts, got an integer (5)",
            "messages[0].content",
        ),
        (
            {"model": "m", "messages": [{"role": "user", "content": [{"type": "text"}]}]},
            "messages[0].content[0].text: field required",
            "messages[0].content[0].text",
        ),
        (
            {"model": "m", "messages": [{"role": "tool", "content": "x"}]},
            "messages[0].tool_call_id: field required",
            "messages[0].tool_call_id",
        ),
        (
            {
                "model": "m",
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}],
                    }
                ],
            },
            "messages[0].tool_calls[0].function.arguments: expected a string, got an object",
            "messages[0].tool_calls[0].function.arguments",
        ),
        ({"model": "m", "messages": [user("x")], "stream": "yes"}, "stream: expected a boolean", "stream"),
        (
            {"model": "m", "messages": [user("x")], "tools": [{"type": "function"}]},
            "tools[0].function: field required",
            None,
        ),
    ],
)
def test_parse_rejects_bad_bodies_naming_the_field(body: Any, expected: str, param: str | None) -> None:
    err = parse_error(body)
    assert err.message.startswith(expected), err.message
    if param is not None:
        assert err.param == param


def test_deeply_nested_json_is_a_400_not_a_crash() -> None:
    err = parse_error(b"[" * 100_000 + b"]" * 100_000)
    assert "JSON" in err.message


# ---------------------------------------------------------------- auth


def test_check_auth_requires_a_bearer_token() -> None:
    assert ADAPTER.check_auth(http({}, AUTH)) is None
    for headers in ({}, {"authorization": "Basic abc"}, {"authorization": "Bearer "}):
        err = ADAPTER.check_auth(http({}, headers))
        assert err is not None and err.status == 401 and err.code == "invalid_api_key"
        assert err.message.startswith("You didn't provide an API key.")


# ---------------------------------------------------------------- history


def assistant_calls(*ids: str) -> dict[str, Any]:
    calls = [{"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def tool(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "r"}


def test_valid_tool_history_passes() -> None:
    msgs = [user("go"), assistant_calls("call_a", "call_b"), tool("call_b"), tool("call_a"), user("thanks")]
    ADAPTER.validate_history(parse({"model": "m", "messages": msgs}))


def test_tool_message_without_preceding_tool_calls_is_rejected() -> None:
    err = parse_error({"model": "m", "messages": [user("go"), tool("call_x")]})
    assert err.message.startswith(
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
    )
    assert "messages[1]" in err.message and "call_x" in err.message


def test_tool_message_with_unknown_id_is_rejected() -> None:
    err = parse_error({"model": "m", "messages": [user("go"), assistant_calls("call_a"), tool("call_y")]})
    assert "'call_y' not found in 'tool_calls'" in err.message and "messages[2]" in err.message


def test_unanswered_tool_calls_are_rejected() -> None:
    msgs = [user("go"), assistant_calls("call_a", "call_x"), tool("call_a"), user("next")]
    err = parse_error({"model": "m", "messages": msgs})
    assert err.message.startswith(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        "'tool_call_id'. The following tool_call_ids did not have response messages: call_x"
    )
    assert "messages[1]" in err.message
    err = parse_error({"model": "m", "messages": [user("go"), assistant_calls("call_z")]})
    assert "call_z" in err.message


# ---------------------------------------------------------------- rendering (pure)


def test_render_text_shape() -> None:
    chat = parse({"model": "m", "messages": [user("hi")]})
    out = ADAPTER.render(text_plan(), chat, CTX)
    assert out.status == 200 and out.media_type == "application/json" and not out.streamed
    assert ("x-request-id", "req_abc") in out.headers
    body = json.loads(out.body)
    assert (
        body["id"] == chat_completion_id("r1")
        and body["object"] == "chat.completion"
        and body["created"] == 1_700_000_000
    )
    assert body["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello there, friend.", "refusal": None, "annotations": []},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ]
    assert body["usage"]["total_tokens"] == 12
    assert body["usage"]["completion_tokens_details"]["rejected_prediction_tokens"] == 0


def test_stream_frames_follow_the_protocol() -> None:
    chat = parse({"model": "m", "messages": [user("hi")], "stream": True})
    plan = MessagePlan(
        model="m", text="ab", text_chunks=("a", "b"), tool_calls=(call("f", {"x": 1}, "k1"),), finish="tool_calls"
    )
    frames = ADAPTER.render(plan, chat, CTX).frames
    assert frames is not None
    events = [f.data.decode() for f in frames]
    assert all(e.startswith("data: ") and e.endswith("\n\n") and "\nevent:" not in e for e in events)
    assert events[-1] == "data: [DONE]\n\n"
    chunks = [frame_json(e) for e in events[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0] == {"role": "assistant", "content": "", "refusal": None}
    assert sum("role" in d for d in deltas) == 1
    assert "usage" not in chunks[0]
    intro = [d for d in deltas if "tool_calls" in d and "id" in d["tool_calls"][0]]
    assert intro == [
        {"tool_calls": [{"index": 0, "id": "call_k1", "type": "function", "function": {"name": "f", "arguments": ""}}]}
    ]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls" and deltas[-1] == {}
    content_frames = [f for f in frames if f.content]
    assert len(content_frames) == 2 + len('{"x":1}')


def test_include_usage_sends_null_usage_then_a_final_usage_chunk() -> None:
    chat = parse({"model": "m", "messages": [user("hi")], "stream": True, "stream_options": {"include_usage": True}})
    chunks = [frame_json(e) for e in sse_events(ADAPTER.render(text_plan(), chat, CTX))[:-1]]
    assert all(c["usage"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] == 7


def test_render_error_shapes() -> None:
    out = ADAPTER.render_error(400, "bad", CTX, param="messages[0]")
    assert out.status == 400 and ("x-request-id", "req_abc") in out.headers
    assert json.loads(out.body) == {
        "error": {"message": "bad", "type": "invalid_request_error", "param": "messages[0]", "code": None}
    }
    assert json.loads(ADAPTER.render_error(401, "k", CTX).body)["error"]["code"] == "invalid_api_key"
    assert json.loads(ADAPTER.render_error(429, "slow", CTX).body)["error"] == {
        "message": "slow",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    assert json.loads(ADAPTER.render_error(503, "x", CTX).body)["error"]["type"] == "server_error"
    assert json.loads(ADAPTER.render_error(404, "x", CTX, "model_not_found").body)["error"]["code"] == "model_not_found"
    assert frame_json(ADAPTER.stream_error_frame("boom", CTX).decode()) == {
        "error": {"message": "boom", "type": "server_error", "param": None, "code": None}
    }


def test_models_responses() -> None:
    body = json.loads(openai_chat.models_response(["a", "b", "a"], CTX).body)
    assert body == {
        "object": "list",
        "data": [
            {"id": "a", "object": "model", "created": 1_700_000_000, "owned_by": "mockllm"},
            {"id": "b", "object": "model", "created": 1_700_000_000, "owned_by": "mockllm"},
        ],
    }
    assert json.loads(openai_chat.model_response("a", CTX).body)["id"] == "a"


# ---------------------------------------------------------------- fidelity: the real SDK


def client_for(reply: Callable[[ChatRequest], Rendered]) -> tuple[openai.OpenAI, list[ChatRequest]]:
    """An SDK client whose transport runs the adapter on each real SDK request and answers with
    the rendered bytes."""
    http, seen = adapter_client(ADAPTER, reply)
    return opened(openai.OpenAI(api_key="k", base_url="http://mock/v1", http_client=http, max_retries=0)), seen


def plan_reply(plan: MessagePlan) -> Callable[[ChatRequest], Rendered]:
    return lambda chat: ADAPTER.render(plan, chat, CTX)


TOOL_PLAN = MessagePlan(
    model="gpt-test",
    tool_calls=(call("get_weather", {"city": "Paris", "unit": "c"}, "w1"), call("get_time", {"tz": "CET"}, "t2")),
    finish="tool_calls",
)


def test_sdk_reads_a_text_completion() -> None:
    sdk, seen = client_for(plan_reply(text_plan()))
    done = sdk.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi"}])
    assert done.id == chat_completion_id("r1") and done._request_id == "req_abc"
    assert done.choices[0].message.content == "Hello there, friend."
    assert done.choices[0].finish_reason == "stop"
    assert done.usage is not None and done.usage.total_tokens == 12
    assert seen[0].last_user_message() == "hi"


def test_sdk_reads_parallel_tool_calls_and_sends_a_valid_follow_up() -> None:
    sdk, seen = client_for(plan_reply(TOOL_PLAN))
    done = sdk.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "weather and time"}])
    msg = done.choices[0].message
    assert msg.content is None and done.choices[0].finish_reason == "tool_calls"
    assert msg.tool_calls is not None
    calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in msg.tool_calls]  # type: ignore[union-attr]
    assert calls == [("call_w1", "get_weather", {"city": "Paris", "unit": "c"}), ("call_t2", "get_time", {"tz": "CET"})]
    follow_up = [
        {"role": "user", "content": "weather and time"},
        msg.model_dump(exclude_none=True),
        *({"role": "tool", "tool_call_id": c.id, "content": "42"} for c in msg.tool_calls),
    ]
    sdk.chat.completions.create(model="gpt-test", messages=follow_up)  # type: ignore[arg-type]
    result = seen[1].latest_tool_result("get_time")
    assert result is not None and result.call_id == "call_t2"


def test_sdk_reads_a_refusal() -> None:
    sdk, _ = client_for(plan_reply(MessagePlan(model="gpt-test", refusal="I can't help with that.")))
    msg = sdk.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "x"}]).choices[0].message
    assert msg.content is None and msg.refusal == "I can't help with that."


def test_stream_helper_reconstructs_text_and_fragmented_tool_arguments() -> None:
    plan = MessagePlan(
        model="gpt-test",
        text="Checking now.",
        text_chunks=("Check", "ing", " now."),
        tool_calls=TOOL_PLAN.tool_calls,
        finish="tool_calls",
    )
    sdk, seen = client_for(plan_reply(plan))
    with sdk.chat.completions.stream(model="gpt-test", messages=[{"role": "user", "content": "x"}]) as stream:
        final = stream.get_final_completion()
    assert seen[0].stream
    msg = final.choices[0].message
    assert msg.role == "assistant" and msg.content == "Checking now."
    assert msg.tool_calls is not None
    assert [(c.id, c.function.name, c.function.arguments) for c in msg.tool_calls] == [
        ("call_w1", "get_weather", '{"city":"Paris","unit":"c"}'),
        ("call_t2", "get_time", '{"tz":"CET"}'),
    ]
    assert final.usage is None


def test_stream_helper_with_include_usage_and_refusal() -> None:
    sdk, _ = client_for(plan_reply(text_plan()))
    with sdk.chat.completions.stream(
        model="gpt-test", messages=[{"role": "user", "content": "x"}], stream_options={"include_usage": True}
    ) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "Hello there, friend."
    assert final.usage is not None and (final.usage.prompt_tokens, final.usage.completion_tokens) == (7, 5)

    sdk, _ = client_for(plan_reply(MessagePlan(model="gpt-test", refusal="No, I won't do that.")))
    with sdk.chat.completions.stream(model="gpt-test", messages=[{"role": "user", "content": "x"}]) as stream:
        msg = stream.get_final_completion().choices[0].message
    assert msg.refusal == "No, I won't do that." and msg.content is None


def test_raw_stream_chunks_carry_role_once() -> None:
    sdk, _ = client_for(plan_reply(text_plan()))
    chunks = list(
        sdk.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "x"}], stream=True)
    )
    assert [c.choices[0].delta.role for c in chunks].count("assistant") == 1
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Hello there, friend."


@pytest.mark.parametrize(("status", "exc"), sdk_errors.OPENAI)
def test_error_statuses_map_to_sdk_exceptions(status: int, exc: type[openai.APIStatusError]) -> None:
    sdk, _ = client_for(lambda chat: ADAPTER.render_error(status, f"failure {status}", CTX))
    with pytest.raises(exc) as info:
        sdk.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "x"}])
    assert info.value.status_code == status and info.value.request_id == "req_abc"
    assert f"failure {status}" in str(info.value)


def test_parse_errors_reach_the_sdk_with_param() -> None:
    err = parse_error({"model": "m", "messages": [{"role": "robot", "content": "x"}]})
    sdk, _ = client_for(lambda chat: ADAPTER.render_error(err.status, err.message, CTX, err.code, err.param))
    with pytest.raises(openai.BadRequestError) as info:
        sdk.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "x"}])
    assert info.value.param == "messages[0].role" and info.value.code == "invalid_value"


def test_mid_stream_error_raises_api_error() -> None:
    def reply(chat: ChatRequest) -> Rendered:
        out = ADAPTER.render(text_plan(), chat, CTX)
        assert out.frames is not None
        error = type(out.frames[0])(ADAPTER.stream_error_frame("upstream exploded", CTX))
        return Rendered(out.status, out.media_type, out.headers, frames=(*out.frames[:2], error))

    sdk, _ = client_for(reply)
    with pytest.raises(openai.APIError) as info:
        list(sdk.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "x"}], stream=True))
    assert not isinstance(info.value, openai.APIStatusError)
    assert "upstream exploded" in str(info.value)


test_arbitrary_messages_give_a_400_or_a_request_never_a_crash = any_messages_test(
    ADAPTER,
    lambda messages: parse({"model": "m", "messages": messages}),
    ["user", "assistant", "tool", "text", "call_1", "x"],
    ["role", "content", "type", "text", "id", "tool_calls", "tool_call_id", "function", "arguments"],
)
